#include "integration/common/duration_text.h"

#include <gtest/gtest.h>

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

TEST(ItestDurationTextTest, ParsesEveryUnit) {
  EXPECT_EQ(parse_duration("7ns"), Duration(7ns));
  EXPECT_EQ(parse_duration("250us"), Duration(250us));
  EXPECT_EQ(parse_duration("10ms"), Duration(10ms));
  EXPECT_EQ(parse_duration("12s"), Duration(12s));
  EXPECT_EQ(parse_duration("2m"), Duration(2min));
  EXPECT_EQ(parse_duration("1h"), Duration(1h));
}

TEST(ItestDurationTextTest, ParsesFractionsAndBareZero) {
  EXPECT_EQ(parse_duration("1.5s"), Duration(1500ms));
  EXPECT_EQ(parse_duration("0.25ms"), Duration(250us));
  EXPECT_EQ(parse_duration("0"), Duration::zero());
  EXPECT_EQ(parse_duration("0ms"), Duration::zero());
}

TEST(ItestDurationTextTest, RejectsMalformedText) {
  for (const char* bad : {"", "10", "ms", "-1s", "+1s", "1e3ms", "1..2s", ".s", "10 ms", "10sec",
                          "inf s", "1x", "s10"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
  }
}

TEST(ItestDurationTextTest, RejectsValuesThatOverflow) {
  EXPECT_EQ(parse_duration("9999999999h"), std::nullopt);
}

TEST(ItestDurationTextTest, FormatsWithTheLargestExactUnit) {
  EXPECT_EQ(format_duration(12s), "12s");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(2min), "2m");
  EXPECT_EQ(format_duration(Duration(1001ns)), "1001ns");
  EXPECT_EQ(format_duration(Duration::zero()), "0");
}

TEST(ItestDurationTextTest, FormatRoundTripsThroughParse) {
  for (Duration d : {Duration(3h), Duration(90s), Duration(40ms), Duration(7us), Duration(13ns)}) {
    EXPECT_EQ(parse_duration(format_duration(d)), d);
  }
}

}  // namespace
}  // namespace sluice::itest
