#include "integration/client/send_log.h"

#include <gtest/gtest.h>

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

const TimePoint kStart{std::chrono::seconds(50)};

TEST(ItestSendLogTest, EmptyLogHasACountAndNoRate) {
  SendLog log(kStart, 300);
  boost::json::object s = log.summary();
  EXPECT_EQ(s.at("count").to_number<uint64_t>(), 0u);
  EXPECT_EQ(s.at("offered_rate").to_number<double>(), 300.0);
  EXPECT_TRUE(s.at("per_second").as_array().empty());
  EXPECT_FALSE(s.contains("achieved_rate"));
}

TEST(ItestSendLogTest, AchievedRateCountsIntervalsBetweenFirstAndLastCompletion) {
  SendLog log(kStart, 0);
  for (int i = 0; i < 11; ++i) log.record(kStart + i * 10ms, kStart + i * 10ms + 1ms);
  boost::json::object s = log.summary();
  // 11 writes, 10 intervals of 10 ms: 100 per second.
  EXPECT_DOUBLE_EQ(s.at("achieved_rate").to_number<double>(), 100.0);
  EXPECT_DOUBLE_EQ(s.at("first_ms").to_number<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s.at("last_ms").to_number<double>(), 101.0);
}

TEST(ItestSendLogTest, BlockedWritesShowInWriteTimes) {
  SendLog log(kStart, 300);
  log.record(kStart, kStart + 1ms);
  log.record(kStart + 2ms, kStart + 3ms);
  log.record(kStart + 4ms, kStart + 254ms);  // held by flow control
  boost::json::object s = log.summary();
  EXPECT_DOUBLE_EQ(s.at("write_ms_p50").to_number<double>(), 1.0);
  EXPECT_DOUBLE_EQ(s.at("write_ms_max").to_number<double>(), 250.0);
}

TEST(ItestSendLogTest, PerSecondBucketsCountCompletionsBySecondOfTheCall) {
  SendLog log(kStart, 0);
  log.record(kStart, kStart + 100ms);
  log.record(kStart, kStart + 900ms);
  log.record(kStart, kStart + 2500ms);
  boost::json::array buckets = log.summary().at("per_second").as_array();
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].to_number<uint64_t>(), 2u);
  EXPECT_EQ(buckets[1].to_number<uint64_t>(), 0u);
  EXPECT_EQ(buckets[2].to_number<uint64_t>(), 1u);
}

TEST(ItestSendLogTest, SingleWriteHasNoRate) {
  SendLog log(kStart, 0);
  log.record(kStart, kStart + 5ms);
  EXPECT_EQ(log.summary().at("achieved_rate").to_number<double>(), 0.0);
}

}  // namespace
}  // namespace sluice::itest
