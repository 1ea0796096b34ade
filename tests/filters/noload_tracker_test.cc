#include "filters/rtt_gradient/noload_tracker.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using namespace std::chrono_literals;

constexpr Duration kInterval = 50ms;

class NoloadTrackerTest : public ::testing::Test {
 protected:
  // Adds `count` intervals, one every 50 ms of fake time.
  void add(int count, Duration min_rtt, uint32_t in_flight) {
    for (int i = 0; i < count; ++i) {
      now_ += kInterval;
      tracker_.add_interval(now_, min_rtt, in_flight);
    }
  }

  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  NoloadTracker tracker_{30s, 1};
};

TEST_F(NoloadTrackerTest, HasNoEstimateBeforeAnyInterval) {
  EXPECT_FALSE(tracker_.estimate().has_value());
}

TEST_F(NoloadTrackerTest, FirstIntervalSetsTheEstimate) {
  add(1, 12ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(12ms));
}

TEST_F(NoloadTrackerTest, OneLuckyFastIntervalDoesNotLowerTheEstimate) {
  add(200, 10ms, 1);
  add(1, 1ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
  add(50, 10ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, TwoLuckyIntervalsRightAfterStartDoNotSetTheEstimate) {
  add(1, 10ms, 1);
  add(2, 1ms, 1);
  add(1, 10ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, StandingQueueAboveTheKneeNeverRaisesTheEstimate) {
  // 4 requests run without queueing; beyond that every request waits.
  add(100, 10ms, 4);
  ASSERT_EQ(tracker_.clean_concurrency(), 4u);
  // Ten minutes of sustained load with a standing queue: 20 windows' worth.
  add(12000, 15ms, 6);
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
  EXPECT_EQ(tracker_.clean_concurrency(), 4u);
}

TEST_F(NoloadTrackerTest, ConsistentlySlowerCleanIntervalsRaiseTheEstimateAtOnce) {
  add(600, 10ms, 1);
  // Slower at concurrency 1: no queue of ours in front of them, the service itself slowed down.
  add(NoloadTracker::kFastIntervals - 1, 40ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
  add(1, 41ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(40ms));  // the fastest of the slow intervals
}

TEST_F(NoloadTrackerTest, OneSlowCleanIntervalAmongNormalOnesDoesNotRaiseTheEstimate) {
  add(600, 10ms, 1);
  for (int i = 0; i < 100; ++i) {
    add(NoloadTracker::kFastIntervals - 1, 40ms, 1);
    add(1, 10ms, 1);
  }
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, SlowerLoadedIntervalsNeverRaiseTheEstimate) {
  add(600, 10ms, 1);
  add(600, 40ms, 3);  // 30 s where every request waited behind two others
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, ConsistentlyFasterCleanIntervalsLowerTheEstimateAtOnce) {
  add(600, 40ms, 1);
  add(NoloadTracker::kFastIntervals - 1, 10ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(40ms));
  add(1, 11ms, 1);
  EXPECT_EQ(tracker_.estimate(), Duration(11ms));  // the slowest of the fast intervals
  add(100, 10ms, 1);  // and the older, slower intervals no longer pull it back up
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, JitterJustBelowTheEstimateDoesNotTriggerFastLowering) {
  add(600, 10ms, 1);
  add(10, 9800us, 1);  // 2% faster: within the margin, ordinary jitter
  EXPECT_EQ(tracker_.estimate(), Duration(10ms));
}

TEST_F(NoloadTrackerTest, OneFastRequestAtHighConcurrencyDoesNotWidenCleanConcurrency) {
  add(100, 10ms, 2);
  add(1, 5ms, 50);  // e.g. a request that failed fast while 50 were in flight
  EXPECT_EQ(tracker_.clean_concurrency(), 2u);
}

TEST_F(NoloadTrackerTest, CleanConcurrencyFollowsTheHighestConcurrencyWithBaselineRtt) {
  add(50, 10ms, 1);
  add(50, 10ms, 8);  // 8 at once still meet no queue
  EXPECT_EQ(tracker_.clean_concurrency(), 8u);
}

TEST_F(NoloadTrackerTest, CleanConcurrencyIsNeverBelowMinLimit) {
  NoloadTracker tracker(30s, 5);
  tracker.add_interval(now_, 10ms, 1);
  EXPECT_EQ(tracker.clean_concurrency(), 5u);
}

TEST_F(NoloadTrackerTest, ForgetsIntervalsOlderThanTheWindow) {
  add(100, 10ms, 1);
  EXPECT_EQ(tracker_.intervals(), 100u);
  now_ += 31s;
  tracker_.add_interval(now_, 10ms, 1);
  EXPECT_EQ(tracker_.intervals(), 1u);
}

}  // namespace
}  // namespace sluice
