#include "integration/upstream/worker_pool.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/itest/fake_timer.h"

namespace sluice::itest {
namespace {

using namespace std::chrono_literals;

class ItestWorkerPoolTest : public ::testing::Test {
 protected:
  WorkerPool::Done record(std::string name) {
    return [this, name](bool served) { log_.push_back(name + (served ? "" : ":dropped")); };
  }

  FakeClock clock_;
  FakeTimer timer_{clock_};
  ServiceSchedule schedule_{10ms, {}, ScheduleStart::kFirstRequest, clock_.now()};
  std::vector<std::string> log_;
};

TEST_F(ItestWorkerPoolTest, FreeWorkerHoldsTheJobForItsServiceTime) {
  WorkerPool pool(2, schedule_, timer_, clock_);
  TimePoint start = clock_.now();
  pool.submit(std::nullopt, record("a"));
  EXPECT_TRUE(log_.empty());
  EXPECT_EQ(timer_.deadlines(), std::vector<TimePoint>{start + 10ms});
  EXPECT_EQ(pool.snapshot().busy, 1u);
  timer_.advance(10ms);
  EXPECT_EQ(log_, std::vector<std::string>{"a"});
  EXPECT_EQ(pool.snapshot().busy, 0u);
  EXPECT_EQ(pool.snapshot().served, 1u);
}

TEST_F(ItestWorkerPoolTest, MaxInServiceIsTheMostJobsInServiceAtOnceSinceTheReset) {
  WorkerPool pool(0, schedule_, timer_, clock_);
  for (const char* name : {"a", "b", "c"}) pool.submit(std::nullopt, record(name));
  EXPECT_EQ(pool.snapshot().max_in_service, 3u);
  timer_.advance(10ms);
  EXPECT_EQ(pool.snapshot().busy, 0u);
  EXPECT_EQ(pool.snapshot().max_in_service, 3u);
  pool.reset_counters();
  EXPECT_EQ(pool.snapshot().max_in_service, 0u);
  pool.submit(std::nullopt, record("d"));
  EXPECT_EQ(pool.snapshot().max_in_service, 1u);
}

TEST_F(ItestWorkerPoolTest, JobsBeyondTheWorkerCountWaitInFifoOrder) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  for (const char* name : {"a", "b", "c"}) pool.submit(std::nullopt, record(name));
  EXPECT_EQ(pool.snapshot().queue_length, 2u);
  EXPECT_EQ(pool.snapshot().max_queue_length, 2u);
  timer_.advance(10ms);
  EXPECT_EQ(log_, (std::vector<std::string>{"a"}));
  timer_.advance(20ms);
  EXPECT_EQ(log_, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(pool.snapshot().queue_length, 0u);
  EXPECT_EQ(pool.snapshot().busy, 0u);
}

TEST_F(ItestWorkerPoolTest, NWorkersServeNJobsConcurrently) {
  WorkerPool pool(3, schedule_, timer_, clock_);
  for (int i = 0; i < 6; ++i) pool.submit(std::nullopt, record(std::to_string(i)));
  EXPECT_EQ(pool.snapshot().busy, 3u);
  timer_.advance(10ms);
  EXPECT_EQ(log_.size(), 3u);
  timer_.advance(10ms);
  EXPECT_EQ(log_.size(), 6u);
}

TEST_F(ItestWorkerPoolTest, ZeroWorkersMeansUnlimitedAndNothingQueues) {
  WorkerPool pool(0, schedule_, timer_, clock_);
  for (int i = 0; i < 100; ++i) pool.submit(std::nullopt, record("x"));
  EXPECT_EQ(pool.snapshot().queue_length, 0u);
  EXPECT_EQ(pool.snapshot().busy, 100u);
  timer_.advance(10ms);
  EXPECT_EQ(log_.size(), 100u);
}

TEST_F(ItestWorkerPoolTest, ZeroServiceTimeCompletesOnTheCallersThreadAndDrainsTheQueue) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  pool.submit(std::nullopt, record("slow"));
  pool.submit(Duration::zero(), record("fast1"));
  pool.submit(Duration::zero(), record("fast2"));
  timer_.advance(10ms);
  // Both zero-time jobs ran as soon as the worker came free, without a timer.
  EXPECT_EQ(log_, (std::vector<std::string>{"slow", "fast1", "fast2"}));
  EXPECT_EQ(timer_.pending(), 0u);
  pool.submit(Duration::zero(), record("now"));
  EXPECT_EQ(log_.back(), "now");
}

TEST_F(ItestWorkerPoolTest, OverrideBeatsTheSchedule) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  TimePoint start = clock_.now();
  pool.submit(Duration(3ms), record("a"));
  EXPECT_EQ(timer_.deadlines(), std::vector<TimePoint>{start + 3ms});
}

TEST_F(ItestWorkerPoolTest, ServiceTimeIsReadWhenAWorkerPicksTheJobUp) {
  TimePoint t0 = clock_.now();
  ServiceSchedule schedule(Duration::zero(), {{10ms, 10ms}, {50ms, 1h}},
                           ScheduleStart::kProcessStart, t0);
  WorkerPool pool(1, schedule, timer_, clock_);
  pool.submit(std::nullopt, record("a"));  // starts at t0: 10 ms
  pool.submit(std::nullopt, record("b"));  // queued; starts at t0+10ms, in the 50 ms step
  timer_.advance(10ms);
  EXPECT_EQ(timer_.deadlines(), std::vector<TimePoint>{t0 + 60ms});
}

TEST_F(ItestWorkerPoolTest, CancelDropsAQueuedJobWithoutServingIt) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  pool.submit(std::nullopt, record("a"));
  WorkerPool::JobId b = pool.submit(std::nullopt, record("b"));
  pool.submit(std::nullopt, record("c"));
  EXPECT_TRUE(pool.cancel(b));
  EXPECT_EQ(log_, (std::vector<std::string>{"b:dropped"}));
  timer_.advance(20ms);
  EXPECT_EQ(log_, (std::vector<std::string>{"b:dropped", "a", "c"}));
  EXPECT_EQ(pool.snapshot().dropped, 1u);
  EXPECT_EQ(pool.snapshot().served, 2u);
}

TEST_F(ItestWorkerPoolTest, CancelLeavesAJobInServiceAlone) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  WorkerPool::JobId a = pool.submit(std::nullopt, record("a"));
  EXPECT_FALSE(pool.cancel(a));
  EXPECT_EQ(pool.snapshot().busy, 1u);
  timer_.advance(10ms);
  EXPECT_EQ(log_, (std::vector<std::string>{"a"}));
  EXPECT_FALSE(pool.cancel(a));  // finished: nothing to cancel
}

TEST_F(ItestWorkerPoolTest, ResetCountersRestartsMaxQueueFromTheCurrentQueue) {
  WorkerPool pool(1, schedule_, timer_, clock_);
  for (int i = 0; i < 4; ++i) pool.submit(std::nullopt, record("x"));
  timer_.advance(20ms);
  pool.reset_counters();
  WorkerPool::Snapshot s = pool.snapshot();
  EXPECT_EQ(s.max_queue_length, 1u);
  EXPECT_EQ(s.served, 0u);
  EXPECT_EQ(s.dropped, 0u);
}

}  // namespace
}  // namespace sluice::itest
