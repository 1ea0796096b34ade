#include "filters/decision_log.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(DecisionLogTest, KeepsTheNewestDecisionsOldestFirst) {
  DecisionLog log;
  for (uint32_t i = 0; i < DecisionLog::kCapacity + 5; ++i) {
    log.add(LimitDecision{TimePoint{} + std::chrono::seconds(i), i, i + 1, "step"});
  }
  const auto recent = log.recent();
  ASSERT_EQ(recent.size(), DecisionLog::kCapacity);
  EXPECT_EQ(recent.front().old_limit, 5u);
  EXPECT_EQ(recent.back().old_limit, DecisionLog::kCapacity + 4);
}

TEST(DecisionLogTest, StartsEmpty) { EXPECT_TRUE(DecisionLog().recent().empty()); }

}  // namespace
}  // namespace sluice
