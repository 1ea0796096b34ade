// WaitEstimator on a fake clock: polls of the group's backlog and entries-read counter, 100 ms
// apart as the frontend makes them.
#include "src/queue/wait_estimator.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_clock.h"

namespace sluice::queue {
namespace {

using namespace std::chrono_literals;

class WaitEstimatorTest : public ::testing::Test {
 protected:
  // `polls` polls 100 ms apart, each seeing `backlog` and `per_poll` more entries read.
  void drain(int polls, int64_t backlog, int64_t per_poll) {
    for (int i = 0; i < polls; ++i) {
      clock_.advance(100ms);
      read_ += per_poll;
      estimator_.observe(backlog, read_);
    }
  }
  static int64_t ms(std::optional<Duration> d) { return to_us(d.value()) / 1000; }

  FakeClock clock_;
  WaitEstimator estimator_{clock_};
  int64_t read_ = 1000;
};

TEST_F(WaitEstimatorTest, NoBacklogIsNoWaitEvenWithoutEvidence) {
  EXPECT_EQ(estimator_.estimate(0), Duration::zero());
  EXPECT_FALSE(estimator_.drain_rate().has_value());
}

TEST_F(WaitEstimatorTest, ABacklogWithoutSaturatedEvidenceHasNoEstimate) {
  estimator_.observe(50, read_);
  drain(4, 50, 10);  // 400 ms saturated: less than min_evidence (500 ms)
  EXPECT_FALSE(estimator_.drain_rate().has_value());
  EXPECT_FALSE(estimator_.estimate(50).has_value());
}

TEST_F(WaitEstimatorTest, WaitIsBacklogOverTheSaturatedDrainRate) {
  estimator_.observe(40, read_);
  drain(10, 40, 10);  // 1 s saturated, 100 entries taken (+1: the bound for the next one)
  ASSERT_TRUE(estimator_.drain_rate().has_value());
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 101.0);
  EXPECT_EQ(ms(estimator_.estimate(101)), 1000);
  EXPECT_EQ(ms(estimator_.estimate(40)), 396);
}

TEST_F(WaitEstimatorTest, DeliveriesWhileTheStreamRunsEmptyMeasureDemandNotCapacity) {
  // A quiet spell: 2 entries per poll, the backlog 0 at every poll. Then a burst.
  estimator_.observe(0, read_);
  drain(20, 0, 2);
  EXPECT_FALSE(estimator_.drain_rate().has_value());
  // One end of an interval with a backlog is not enough either.
  drain(1, 30, 2);
  EXPECT_FALSE(estimator_.estimate(30).has_value());
}

TEST_F(WaitEstimatorTest, OnlySaturatedIntervalsCount) {
  estimator_.observe(10, read_);
  drain(5, 10, 5);  // saturated: 25 taken in 500 ms
  drain(1, 0, 40);  // the stream emptied: not counted
  drain(1, 10, 1);  // one end empty: not counted
  ASSERT_TRUE(estimator_.drain_rate().has_value());
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 52.0);  // (25 + 1) / 0.5 s
}

TEST_F(WaitEstimatorTest, ASlowdownShowsWithinTheWindow) {
  estimator_.observe(100, read_);
  drain(20, 100, 10);  // 100/s for 2 s
  EXPECT_NEAR(*estimator_.drain_rate(), 100.5, 0.01);
  drain(20, 100, 2);  // then 20/s: after one window only the slow intervals remain
  EXPECT_NEAR(*estimator_.drain_rate(), 20.5, 0.01);
  EXPECT_EQ(ms(estimator_.estimate(100)), 4878);
}

TEST_F(WaitEstimatorTest, EvidenceOlderThanTheWindowIsForgotten) {
  estimator_.observe(40, read_);
  drain(10, 40, 10);
  ASSERT_TRUE(estimator_.drain_rate().has_value());
  clock_.advance(1500ms);
  EXPECT_TRUE(estimator_.drain_rate().has_value());  // 500 ms of it within the last 2 s
  clock_.advance(100ms);
  EXPECT_FALSE(estimator_.drain_rate().has_value());  // 400 ms
}

TEST_F(WaitEstimatorTest, AStoppedPoolGivesALongButFiniteWait) {
  estimator_.observe(20, read_);
  drain(20, 20, 0);  // 2 s saturated, nothing taken: at most 1 per 2 s
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 0.5);
  EXPECT_EQ(ms(estimator_.estimate(20)), 40000);
}

TEST_F(WaitEstimatorTest, AnUnknownCounterBreaksTheIntervalsAroundIt) {
  estimator_.observe(40, read_);
  drain(3, 40, 10);
  clock_.advance(100ms);
  estimator_.observe(40, std::nullopt);  // Redis could not tell: no interval ends here
  read_ += 500;
  clock_.advance(100ms);
  estimator_.observe(40, read_);  // nor starts there: the 500 are not counted
  drain(2, 40, 10);
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 51.0 / 0.5);  // 300 ms + 200 ms, 50 taken
}

TEST_F(WaitEstimatorTest, ACounterThatWentBackForgetsEverything) {
  estimator_.observe(40, read_);
  drain(10, 40, 10);
  read_ = 0;  // Redis restarted: a new group
  clock_.advance(100ms);
  estimator_.observe(40, read_);
  EXPECT_FALSE(estimator_.drain_rate().has_value());
  drain(5, 40, 1);
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 12.0);
}

TEST_F(WaitEstimatorTest, PollsAtTheSameInstantCountInTheNextInterval) {
  estimator_.observe(40, read_);
  read_ += 30;
  estimator_.observe(40, read_);  // no time passed: kept for the next interval
  clock_.advance(500ms);
  estimator_.observe(40, read_);
  EXPECT_DOUBLE_EQ(*estimator_.drain_rate(), 62.0);  // (30 + 1) / 0.5 s
}

}  // namespace
}  // namespace sluice::queue
