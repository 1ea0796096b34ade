#include "tools/loadgen/closed_loop_scheduler.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_clock.h"

namespace sluice::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Phase closed(uint32_t workers, uint64_t calls, Duration length = Duration::zero()) {
  Phase p;
  p.kind = LoopKind::kClosed;
  p.workers = workers;
  p.calls = calls;
  p.length = length;
  return p;
}

class ClosedLoopSchedulerTest : public ::testing::Test {
 protected:
  FakeClock clock_;
};

TEST_F(ClosedLoopSchedulerTest, EveryWorkerStartsOneCallAndWaitsForItsEnd) {
  ClosedLoopScheduler s({closed(3, 10)}, Duration::zero(), clock_, clock_.now());
  auto first = s.poll();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_TRUE(s.poll().empty());  // nobody finished yet
  clock_.advance(milliseconds(20));
  s.on_call_done(1);
  auto next = s.poll();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].worker, 1u);
  EXPECT_EQ(s.issued(0), 4u);
}

TEST_F(ClosedLoopSchedulerTest, IssuesExactlyThePhasesCallCountThenMovesOn) {
  ClosedLoopScheduler s({closed(2, 3), closed(1, 1)}, Duration::zero(), clock_, clock_.now());
  EXPECT_EQ(s.poll().size(), 2u);
  s.on_call_done(0);
  EXPECT_EQ(s.poll().size(), 1u);  // the third call
  s.on_call_done(0);
  EXPECT_TRUE(s.poll().empty());  // worker 0 retires; worker 1 still busy
  EXPECT_EQ(s.phase(), 0u);
  clock_.advance(milliseconds(30));
  s.on_call_done(1);
  auto next = s.poll();  // phase 0 over: phase 1 starts at once
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].phase, 1u);
  EXPECT_EQ(s.issued(0), 3u);
  ASSERT_EQ(s.windows().size(), 2u);
  EXPECT_EQ(*s.windows()[0].end, clock_.now());
  EXPECT_EQ(s.windows()[1].start, clock_.now());
  s.on_call_done(0);
  EXPECT_TRUE(s.poll().empty());
  EXPECT_TRUE(s.finished());
}

TEST_F(ClosedLoopSchedulerTest, ThinkTimeDelaysAWorkersNextCall) {
  ClosedLoopScheduler s({closed(1, 5)}, milliseconds(10), clock_, clock_.now());
  EXPECT_EQ(s.poll().size(), 1u);
  clock_.advance(milliseconds(5));
  s.on_call_done(0);
  EXPECT_TRUE(s.poll().empty());
  EXPECT_EQ(*s.next_due(), clock_.now() + milliseconds(10));
  clock_.advance(milliseconds(10));
  auto next = s.poll();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].due, clock_.now());
}

TEST_F(ClosedLoopSchedulerTest, TimeBoundPhaseStopsIssuingAtItsEndAndEndsWithItsLastCall) {
  ClosedLoopScheduler s({closed(2, 0, seconds(1))}, Duration::zero(), clock_, clock_.now());
  EXPECT_EQ(s.poll().size(), 2u);
  clock_.advance(milliseconds(900));
  s.on_call_done(0);
  EXPECT_EQ(s.poll().size(), 1u);  // still inside the phase
  clock_.advance(milliseconds(200));
  s.on_call_done(0);
  EXPECT_TRUE(s.poll().empty());  // past 1 s: worker 0 retires, worker 1 still busy
  EXPECT_FALSE(s.finished());
  s.on_call_done(1);
  EXPECT_TRUE(s.poll().empty());
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(*s.windows()[0].end - s.windows()[0].start, milliseconds(1100));
}

TEST_F(ClosedLoopSchedulerTest, ThinkingWorkersRetireAsSoonAsTheCallCountIsReached) {
  ClosedLoopScheduler s({closed(2, 2)}, seconds(5), clock_, clock_.now());
  EXPECT_EQ(s.poll().size(), 2u);
  s.on_call_done(0);
  s.on_call_done(1);
  // Both are thinking, but no calls are left: the phase ends now, not after the think time.
  EXPECT_TRUE(s.poll().empty());
  EXPECT_TRUE(s.finished());
}

TEST_F(ClosedLoopSchedulerTest, IgnoresCompletionsOfUnknownOrIdleWorkers) {
  ClosedLoopScheduler s({closed(1, 2)}, Duration::zero(), clock_, clock_.now());
  EXPECT_EQ(s.poll().size(), 1u);
  s.on_call_done(7);
  EXPECT_TRUE(s.poll().empty());
  s.on_call_done(0);
  s.on_call_done(0);  // a duplicate must not free a second call
  EXPECT_EQ(s.poll().size(), 1u);
  EXPECT_EQ(s.issued(0), 2u);
}

}  // namespace
}  // namespace sluice::loadgen
