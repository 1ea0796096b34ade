#include "tools/loadgen/phase.h"

#include <gtest/gtest.h>

namespace sluice::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<Phase> ok(std::string_view text) {
  auto parsed = parse_phases(text);
  EXPECT_TRUE(std::holds_alternative<std::vector<Phase>>(parsed)) << std::get<std::string>(parsed);
  return std::get<std::vector<Phase>>(parsed);
}

std::string error(std::string_view text) {
  auto parsed = parse_phases(text);
  EXPECT_TRUE(std::holds_alternative<std::string>(parsed));
  return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "";
}

TEST(PhaseTest, ParsesOpenLoopPhasesWithNamesAndDefaults) {
  auto phases = ok("80/s:12s@normal,80/s:12s,2.5/s:1500ms@tail");
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].kind, LoopKind::kOpen);
  EXPECT_EQ(phases[0].name, "normal");
  EXPECT_DOUBLE_EQ(phases[0].rate, 80);
  EXPECT_EQ(phases[0].length, seconds(12));
  EXPECT_EQ(phases[1].name, "p1");
  EXPECT_DOUBLE_EQ(phases[2].rate, 2.5);
  EXPECT_EQ(phases[2].length, milliseconds(1500));
}

TEST(PhaseTest, ParsesClosedLoopPhasesBoundByCallsOrTime) {
  auto phases = ok("1w:40@c1,12w:10s");
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].kind, LoopKind::kClosed);
  EXPECT_EQ(phases[0].workers, 1u);
  EXPECT_EQ(phases[0].calls, 40u);
  EXPECT_EQ(phases[0].length, Duration::zero());
  EXPECT_EQ(phases[1].workers, 12u);
  EXPECT_EQ(phases[1].calls, 0u);
  EXPECT_EQ(phases[1].length, seconds(10));
}

TEST(PhaseTest, AcceptsAZeroRatePause) { EXPECT_DOUBLE_EQ(ok("0/s:2s")[0].rate, 0); }

TEST(PhaseTest, RejectsMalformedItemsNamingThem) {
  EXPECT_NE(error("80/s").find("missing ':'"), std::string::npos);
  EXPECT_NE(error("80/s:36s,-1/s:2s").find("phase 1"), std::string::npos);
  EXPECT_NE(error("80/s:0s").find("bad length"), std::string::npos);
  EXPECT_NE(error("0w:40").find("bad worker count"), std::string::npos);
  EXPECT_NE(error("4w:0").find("zero calls"), std::string::npos);
  EXPECT_NE(error("80:36s").find("expected"), std::string::npos);
  EXPECT_NE(error("80/s:1s@").find("empty name"), std::string::npos);
  EXPECT_EQ(error(""), "no phases");
}

TEST(PhaseTest, RejectsMixingOpenAndClosedLoop) {
  EXPECT_NE(error("80/s:1s,4w:10").find("cannot be mixed"), std::string::npos);
}

}  // namespace
}  // namespace sluice::loadgen
