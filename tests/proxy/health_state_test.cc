#include "src/proxy/health_state.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using Status = HealthState::Status;

TEST(HealthStateTest, StartsUncheckedWhichIsNotHealthy) {
  const HealthState h(2, 3);
  EXPECT_EQ(h.status(), Status::Unchecked);
  EXPECT_FALSE(h.healthy());
}

TEST(HealthStateTest, TheFirstSuccessMakesANewAddressHealthyAtOnce) {
  HealthState h(5, 3);
  EXPECT_TRUE(h.record(true));
  EXPECT_EQ(h.status(), Status::Healthy);
}

TEST(HealthStateTest, TheFirstFailureMakesANewAddressUnhealthy) {
  HealthState h(2, 3);
  EXPECT_TRUE(h.record(false));
  EXPECT_EQ(h.status(), Status::Unhealthy);
  // And from there it takes healthy_threshold successes.
  EXPECT_FALSE(h.record(true));
  EXPECT_TRUE(h.record(true));
  EXPECT_TRUE(h.healthy());
}

TEST(HealthStateTest, AHealthyAddressGoesUnhealthyAfterUnhealthyThresholdFailuresInARow) {
  HealthState h(2, 3);
  h.record(true);
  EXPECT_FALSE(h.record(false));
  EXPECT_FALSE(h.record(false));
  EXPECT_TRUE(h.healthy());
  EXPECT_TRUE(h.record(false));
  EXPECT_EQ(h.status(), Status::Unhealthy);
  EXPECT_EQ(h.consecutive_failures(), 3u);
}

TEST(HealthStateTest, AFlappingAddressNeverReachesEitherThreshold) {
  HealthState h(2, 3);
  h.record(true);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(h.record(false));
    EXPECT_FALSE(h.record(false));
    EXPECT_FALSE(h.record(true));  // breaks the run of failures
  }
  EXPECT_TRUE(h.healthy());
  // Unhealthy, then success / failure alternating never brings it back with threshold 2.
  h.record(false);
  h.record(false);
  EXPECT_TRUE(h.record(false));
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(h.record(true));
    EXPECT_FALSE(h.record(false));
  }
  EXPECT_EQ(h.status(), Status::Unhealthy);
}

TEST(HealthStateTest, ThresholdsOfOneFlipOnEveryChange) {
  HealthState h(1, 1);
  EXPECT_TRUE(h.record(true));
  EXPECT_TRUE(h.record(false));
  EXPECT_TRUE(h.record(true));
  EXPECT_FALSE(h.record(true));
  EXPECT_TRUE(h.healthy());
}

TEST(HealthStateTest, NewThresholdsKeepTheStatusAndTheCurrentRun) {
  HealthState h(2, 5);
  h.record(true);
  h.record(false);
  h.record(false);
  h.set_thresholds(2, 3);
  EXPECT_TRUE(h.healthy());
  EXPECT_TRUE(h.record(false));  // the third failure of the run meets the new threshold
  EXPECT_EQ(h.status(), Status::Unhealthy);
}

TEST(HealthStateTest, ZeroThresholdsAreTreatedAsOne) {
  HealthState h(0, 0);
  h.record(true);
  EXPECT_TRUE(h.record(false));
  EXPECT_TRUE(h.record(true));
}

}  // namespace
}  // namespace sluice
