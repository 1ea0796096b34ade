#include "filters/limiters/permit.h"

#include <gtest/gtest.h>

#include "filters/limiters/permit_gate.h"

namespace sluice {
namespace {

class PermitTest : public ::testing::Test {
 protected:
  Permit take() {
    auto p = gate_->try_acquire();
    EXPECT_TRUE(p.has_value());
    return std::move(*p);
  }
  std::shared_ptr<PermitGate> gate_ = PermitGate::create(3, 10, PermitGate::Order::Fifo);
};

TEST_F(PermitTest, DefaultPermitHoldsNothing) {
  Permit p;
  EXPECT_FALSE(p.held());
  p.release();
  EXPECT_EQ(gate_->in_flight(), 0u);
}

TEST_F(PermitTest, ReleasesOnDestruction) {
  {
    Permit p = take();
    EXPECT_TRUE(p);
    EXPECT_EQ(gate_->in_flight(), 1u);
  }
  EXPECT_EQ(gate_->in_flight(), 0u);
}

TEST_F(PermitTest, ReleaseIsIdempotent) {
  Permit a = take();
  Permit b = take();
  a.release();
  a.release();
  EXPECT_FALSE(a.held());
  EXPECT_EQ(gate_->in_flight(), 1u);  // b still counted: a second release took nothing of b's
}

TEST_F(PermitTest, MoveTransfersOwnershipAndReleasesOnce) {
  Permit a = take();
  Permit b = std::move(a);
  EXPECT_FALSE(a.held());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_TRUE(b.held());
  a.release();
  EXPECT_EQ(gate_->in_flight(), 1u);
  b.release();
  EXPECT_EQ(gate_->in_flight(), 0u);
}

TEST_F(PermitTest, MoveAssignmentReleasesThePermitItReplaces) {
  Permit a = take();
  Permit b = take();
  EXPECT_EQ(gate_->in_flight(), 2u);
  a = std::move(b);
  EXPECT_EQ(gate_->in_flight(), 1u);
  EXPECT_TRUE(a.held());
}

TEST_F(PermitTest, RecordsTheConcurrencyItWasGrantedAt) {
  Permit a = take();
  Permit b = take();
  EXPECT_EQ(a.in_flight_at_grant(), 1u);
  EXPECT_EQ(b.in_flight_at_grant(), 2u);
}

TEST_F(PermitTest, KeepsItsGateAliveAfterEveryoneElseDroppedIt) {
  Permit p = take();
  std::weak_ptr<PermitGate> weak = gate_;
  gate_.reset();
  EXPECT_FALSE(weak.expired());
  p.release();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace sluice
