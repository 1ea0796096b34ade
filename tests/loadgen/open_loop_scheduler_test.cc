#include "tools/loadgen/open_loop_scheduler.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_clock.h"
#include "tests/loadgen/open_phase.h"

namespace sluice::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class OpenLoopSchedulerTest : public ::testing::Test {
 protected:
  OpenLoopScheduler make(std::vector<Phase> phases, uint64_t cap,
                         Duration lateness = Duration::zero()) {
    return OpenLoopScheduler(ArrivalSchedule(std::move(phases), ArrivalProcess::kFixed), cap,
                             lateness, clock_, clock_.now());
  }
  FakeClock clock_;
};

TEST_F(OpenLoopSchedulerTest, LaunchesOnlySlotsThatAreDue) {
  auto s = make({open_phase(10, seconds(1))}, 0);
  auto first = s.poll();
  ASSERT_EQ(first.size(), 1u);  // the slot at 0 ms
  EXPECT_EQ(first[0].outcome, SlotOutcome::kLaunch);
  EXPECT_EQ(*s.next_due(), s.start() + milliseconds(100));
  clock_.advance(milliseconds(99));
  EXPECT_TRUE(s.poll().empty());
  clock_.advance(milliseconds(1));
  EXPECT_EQ(s.poll().size(), 1u);
}

TEST_F(OpenLoopSchedulerTest, SkipsSlotsWhileTheCapIsReachedInsteadOfDelayingThem) {
  auto s = make({open_phase(10, seconds(1))}, 2);
  EXPECT_EQ(s.poll()[0].outcome, SlotOutcome::kLaunch);  // 0 ms
  clock_.advance(milliseconds(100));
  EXPECT_EQ(s.poll()[0].outcome, SlotOutcome::kLaunch);  // 100 ms
  clock_.advance(milliseconds(100));
  auto third = s.poll();
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].outcome, SlotOutcome::kSkippedCap);  // 200 ms: two in flight
  // A call ends; the next slot goes out on its own time, and the skipped one is never made up.
  s.on_call_done();
  clock_.advance(milliseconds(50));
  EXPECT_TRUE(s.poll().empty());
  clock_.advance(milliseconds(50));
  auto fourth = s.poll();
  ASSERT_EQ(fourth.size(), 1u);
  EXPECT_EQ(fourth[0].outcome, SlotOutcome::kLaunch);
  EXPECT_EQ(fourth[0].slot.index, 3u);
  EXPECT_EQ(s.counters(0).scheduled, 4u);
  EXPECT_EQ(s.counters(0).launched, 3u);
  EXPECT_EQ(s.counters(0).skipped_cap, 1u);
  EXPECT_EQ(s.outstanding(), 2u);
}

TEST_F(OpenLoopSchedulerTest, ABurstOfOverdueSlotsIsDecidedOneByOneAgainstTheCap) {
  auto s = make({open_phase(10, seconds(1))}, 3);
  clock_.advance(milliseconds(450));  // slots at 0..400 are all due
  auto d = s.poll();
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].outcome, SlotOutcome::kLaunch);
  EXPECT_EQ(d[2].outcome, SlotOutcome::kLaunch);
  EXPECT_EQ(d[3].outcome, SlotOutcome::kSkippedCap);
  EXPECT_EQ(d[4].outcome, SlotOutcome::kSkippedCap);
  EXPECT_EQ(d[4].due, s.start() + milliseconds(400));
}

TEST_F(OpenLoopSchedulerTest, SlotsReachedLaterThanTheLatenessBoundAreSkippedAsLate) {
  auto s = make({open_phase(10, seconds(1))}, 0, milliseconds(20));
  clock_.advance(milliseconds(125));  // 0 ms is 125 ms late, 100 ms is 25 ms late
  auto d = s.poll();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].outcome, SlotOutcome::kSkippedLate);
  EXPECT_EQ(d[1].outcome, SlotOutcome::kSkippedLate);
  clock_.advance(milliseconds(90));  // 200 ms is 15 ms late: still sent
  d = s.poll();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, SlotOutcome::kLaunch);
  EXPECT_EQ(s.counters(0).skipped_late, 2u);
}

TEST_F(OpenLoopSchedulerTest, CountsSkipsPerPhaseAcrossABoundary) {
  auto s = make({open_phase(10, milliseconds(200)), open_phase(10, milliseconds(200))}, 1);
  clock_.advance(milliseconds(350));  // 0,100 (phase 0), 200,300 (phase 1)
  auto d = s.poll();
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[1].slot.phase, 0u);
  EXPECT_EQ(d[2].slot.phase, 1u);
  EXPECT_EQ(s.counters(0).launched, 1u);
  EXPECT_EQ(s.counters(0).skipped_cap, 1u);
  EXPECT_EQ(s.counters(1).launched, 0u);
  EXPECT_EQ(s.counters(1).skipped_cap, 2u);
  EXPECT_TRUE(s.finished());
  EXPECT_FALSE(s.next_due().has_value());
}

TEST_F(OpenLoopSchedulerTest, NoCapMeansEverySlotIsSent) {
  auto s = make({open_phase(1000, seconds(1))}, 0);
  clock_.advance(seconds(2));
  auto d = s.poll();
  EXPECT_EQ(d.size(), 1000u);
  EXPECT_EQ(s.counters(0).launched, 1000u);
  EXPECT_EQ(s.outstanding(), 1000u);
}

}  // namespace
}  // namespace sluice::loadgen
