#include "filters/limiters/permit_wait.h"

#include <gtest/gtest.h>

#include <optional>

#include "filters/limiters/permit_gate.h"
#include "tests/fakes/fake_dispatcher.h"

namespace sluice {
namespace {

class PermitWaitTest : public ::testing::Test {
 protected:
  // Queues a waiter on `d`; its grant lands in `slot`.
  PermitWait queue(FakeDispatcher& d, std::optional<Permit>& slot) {
    auto got = gate_->acquire(d, [&slot](Permit p) { slot = std::move(p); });
    EXPECT_EQ(got.status, PermitGate::Status::Queued);
    return std::move(got.wait);
  }

  FakeClock clock_;
  FakeDispatcher worker0_{clock_, 0};
  FakeDispatcher worker1_{clock_, 1};
  std::shared_ptr<PermitGate> gate_ = PermitGate::create(1, 10, PermitGate::Order::Fifo);
  Permit held_ = std::move(*gate_->try_acquire());
};

TEST_F(PermitWaitTest, DefaultWaitIsNotWaiting) {
  PermitWait w;
  EXPECT_FALSE(w.waiting());
  w.cancel();
}

TEST_F(PermitWaitTest, CancelLeavesTheQueueAndNoGrantEverArrives) {
  std::optional<Permit> got;
  PermitWait w = queue(worker0_, got);
  EXPECT_TRUE(w.waiting());
  EXPECT_EQ(gate_->queued(), 1u);
  w.cancel();
  EXPECT_FALSE(w.waiting());
  EXPECT_EQ(gate_->queued(), 0u);
  held_.release();
  clock_.run_pending();
  EXPECT_FALSE(got.has_value());
  EXPECT_EQ(gate_->in_flight(), 0u);
}

TEST_F(PermitWaitTest, DestructionCancels) {
  std::optional<Permit> got;
  { PermitWait w = queue(worker0_, got); }
  EXPECT_EQ(gate_->queued(), 0u);
  held_.release();
  clock_.run_pending();
  EXPECT_FALSE(got.has_value());
}

TEST_F(PermitWaitTest, CancelWhileTheGrantTravelsBouncesThePermitToTheNextWaiter) {
  std::optional<Permit> first;
  std::optional<Permit> second;
  PermitWait w1 = queue(worker0_, first);
  PermitWait w2 = queue(worker1_, second);
  held_.release();  // pops w1 and posts its grant to worker0
  EXPECT_EQ(worker0_.posted(), 1u);
  EXPECT_EQ(gate_->in_flight(), 1u);  // the travelling grant holds the permit
  w1.cancel();                        // the request went away before worker0 ran the grant
  worker0_.run_pending();             // the grant finds nobody and returns the permit...
  EXPECT_FALSE(first.has_value());
  EXPECT_EQ(worker1_.posted(), 1u);  // ...which goes to the next waiter, on its own worker
  worker1_.run_pending();
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->held());
  EXPECT_FALSE(w2.waiting());
  EXPECT_EQ(gate_->in_flight(), 1u);
}

TEST_F(PermitWaitTest, CancelAfterDeliveryChangesNothing) {
  std::optional<Permit> got;
  PermitWait w = queue(worker0_, got);
  held_.release();
  worker0_.run_pending();
  ASSERT_TRUE(got.has_value());
  w.cancel();
  EXPECT_TRUE(got->held());
  EXPECT_EQ(gate_->in_flight(), 1u);
}

TEST_F(PermitWaitTest, MoveAssignmentCancelsTheWaitItReplaces) {
  std::optional<Permit> a;
  std::optional<Permit> b;
  PermitWait wa = queue(worker0_, a);
  PermitWait wb = queue(worker0_, b);
  EXPECT_EQ(gate_->queued(), 2u);
  wa = std::move(wb);
  EXPECT_EQ(gate_->queued(), 1u);
  held_.release();
  worker0_.run_pending();
  EXPECT_FALSE(a.has_value());
  EXPECT_TRUE(b.has_value());
}

TEST_F(PermitWaitTest, CancelAfterEveryoneElseDroppedTheGateIsSafe) {
  std::optional<Permit> got;
  PermitWait w = queue(worker0_, got);
  held_.release();  // the grant is posted and holds the gate alive...
  gate_.reset();
  w.cancel();
  worker0_.run_pending();  // ...until it bounces; then the gate is gone
  EXPECT_FALSE(got.has_value());
}

}  // namespace
}  // namespace sluice
