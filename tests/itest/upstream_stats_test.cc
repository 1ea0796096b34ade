#include "integration/upstream/upstream_stats.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "integration/upstream/stats_json.h"

namespace sluice::itest {
namespace {

TEST(ItestUpstreamStatsTest, CountsCallsByMethodAndTracksInFlight) {
  UpstreamStats stats;
  stats.call_started(Method::kUnary);
  stats.call_started(Method::kUnary);
  stats.call_started(Method::kBidi);
  stats.call_finished();
  sluice::test::StatsResponse out;
  stats.fill(out);
  EXPECT_EQ(out.calls_started().at("unary"), 2u);
  EXPECT_EQ(out.calls_started().at("bidi"), 1u);
  EXPECT_EQ(out.calls_started().at("fail"), 0u);
  EXPECT_EQ(out.in_flight(), 2);
  EXPECT_EQ(out.max_in_flight(), 3);
  EXPECT_EQ(out.calls_finished(), 1u);
}

TEST(ItestUpstreamStatsTest, CountsMessagesBytesCancellationsAndDeadline) {
  UpstreamStats stats;
  stats.message_processed(100);
  stats.message_processed(23);
  stats.call_cancelled();
  stats.note_deadline_ms(1999);
  sluice::test::StatsResponse out;
  stats.fill(out);
  EXPECT_EQ(out.messages_processed(), 2u);
  EXPECT_EQ(out.bytes_processed(), 123u);
  EXPECT_EQ(out.calls_cancelled(), 1u);
  EXPECT_EQ(out.last_deadline_ms(), 1999);
}

TEST(ItestUpstreamStatsTest, NoDeadlineSeenIsMinusOne) {
  UpstreamStats stats;
  sluice::test::StatsResponse out;
  stats.fill(out);
  EXPECT_EQ(out.last_deadline_ms(), -1);
}

TEST(ItestUpstreamStatsTest, ResetKeepsCallsInFlightAsTheNewMaximum) {
  UpstreamStats stats;
  for (int i = 0; i < 5; ++i) stats.call_started(Method::kClientStream);
  for (int i = 0; i < 3; ++i) stats.call_finished();
  stats.message_processed(9);
  stats.reset();
  sluice::test::StatsResponse out;
  stats.fill(out);
  EXPECT_EQ(out.calls_started().at("client_stream"), 0u);
  EXPECT_EQ(out.messages_processed(), 0u);
  EXPECT_EQ(out.in_flight(), 2);
  EXPECT_EQ(out.max_in_flight(), 2);
}

TEST(ItestUpstreamStatsTest, JsonCarriesCountersAsPlainNumbers) {
  UpstreamStats stats;
  stats.call_started(Method::kFail);
  stats.message_processed(5);
  sluice::test::StatsResponse out;
  stats.fill(out);
  boost::json::object json = boost::json::parse(stats_to_json(out)).as_object();
  EXPECT_EQ(json.at("calls_started").at("fail").to_number<uint64_t>(), 1u);
  EXPECT_TRUE(json.at("bytes_processed").is_number());
  EXPECT_EQ(json.at("bytes_processed").to_number<uint64_t>(), 5u);
  EXPECT_EQ(json.at("in_flight").to_number<int64_t>(), 1);
}

}  // namespace
}  // namespace sluice::itest
