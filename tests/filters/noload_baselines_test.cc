#include "filters/limiters/noload_baselines.h"

#include <gtest/gtest.h>

#include <random>

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(NoloadBaselinesTest, IsReadyAtItsEighthCleanAnswer) {
  NoloadBaselines b({});
  TimePoint now{};
  for (int i = 0; i < 7; ++i) b.add(now += 10ms, 1, 10);
  EXPECT_FALSE(b.find(1).has_value());
  EXPECT_FALSE(b.all_ready());
  b.add(now += 10ms, 1, 10);
  ASSERT_TRUE(b.find(1).has_value());
  EXPECT_TRUE(b.all_ready());
}

TEST(NoloadBaselinesTest, ReadsTheMeanItsErrorAndAHighQuantile) {
  NoloadBaselines b({});
  TimePoint now{};
  // 20 answers of 2 ms and 80 of 40 ms: the mean is what the method costs, 32.4 ms.
  for (int i = 0; i < 100; ++i) b.add(now += 1ms, 7, i % 5 == 0 ? 2 : 40);
  const auto got = b.find(7);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->samples, 100u);
  EXPECT_NEAR(got->mean_ms, 32.4, 1e-9);
  EXPECT_NEAR(got->sd_ms, 15.28, 0.01);  // sqrt(0.2 * 0.8) * 38 * sqrt(100 / 99)
  EXPECT_NEAR(got->se_ms(), got->sd_ms / 10, 1e-9);
  EXPECT_EQ(b.range(7)->p10_ms, 2);
  EXPECT_EQ(b.range(7)->p99_ms, 40);
  EXPECT_NEAR(*b.busiest_noload_ms(), 32.4, 1e-9);
}

TEST(NoloadBaselinesTest, KeepsTheMostRecentAnswersOnly) {
  NoloadBaselines b({});
  TimePoint now{};
  for (std::size_t i = 0; i < NoloadBaselines::kMaxClean; ++i) {
    b.add(now += 1ms, 1, i % 2 ? 8 : 12);
  }
  for (std::size_t i = 0; i < NoloadBaselines::kMaxClean; ++i) {
    b.add(now += 1ms, 1, i % 2 ? 9 : 11);
  }
  EXPECT_EQ(b.rebuilds(), 0u);  // the same mean, less spread: no change of speed
  EXPECT_EQ(b.find(1)->samples, NoloadBaselines::kMaxClean);
  EXPECT_NEAR(b.find(1)->mean_ms, 10, 1e-9);
  EXPECT_NEAR(b.find(1)->sd_ms, 1, 0.01);  // the older answers are gone
}

TEST(NoloadBaselinesTest, ForgetsAnswersOlderThanTheWindowAndMethodsLeftWithout) {
  NoloadBaselines b({.window = 1s});
  TimePoint now{};
  for (int i = 0; i < 10; ++i) b.add(now += 10ms, 1, 10);
  for (int i = 0; i < 10; ++i) b.add(now += 110ms, 2, 20);
  b.expire(now);
  EXPECT_EQ(b.methods(), 1u);  // method 1's answers are 1.1-1.2 s old
  EXPECT_FALSE(b.find(1).has_value());
  EXPECT_TRUE(b.find(2).has_value());
  b.expire(now + 2s);
  EXPECT_EQ(b.methods(), 0u);
}

TEST(NoloadBaselinesTest, HoldsAtMostMaxMethodsAndNamesThemInTheSnapshot) {
  NoloadBaselines b({.max_methods = 2});
  TimePoint now{};
  for (uint64_t m = 1; m <= 3; ++m) {
    for (int i = 0; i < 8; ++i) b.add(now += 1ms, m, static_cast<double>(m));
  }
  EXPECT_EQ(b.methods(), 2u);
  EXPECT_FALSE(b.find(3).has_value());
  b.name_method(2, "/pkg.S/Two");
  const std::vector<MethodBaseline> snap = b.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].method, "");
  EXPECT_EQ(snap[1].method, "/pkg.S/Two");
  EXPECT_EQ(snap[1].rtt_noload_ms, 2);
  EXPECT_EQ(snap[1].samples, 8u);
}

// A service that got slower for good (10 -> 40 ms): at most 16 answers at the new speed rebuild
// the baseline from them, however many old ones it held; one slow answer does not; and back again
// once the rebuilt baseline has a history to judge by.
TEST(NoloadBaselinesTest, AServiceThatChangedSpeedIsRebuiltFromItsRecentAnswers) {
  NoloadBaselines b({});
  TimePoint now{};
  for (int i = 0; i < 1000; ++i) b.add(now += 1ms, 1, 10 + 0.5 * (i % 3));
  b.add(now += 1ms, 1, 40);  // an outlier
  for (int i = 0; i < 20; ++i) b.add(now += 1ms, 1, 10 + 0.5 * (i % 3));
  EXPECT_EQ(b.rebuilds(), 0u);
  int slow = 0;
  while (b.rebuilds() == 0 && slow < 16) {
    b.add(now += 1ms, 1, 40);
    ++slow;
  }
  EXPECT_EQ(b.rebuilds(), 1u);
  EXPECT_LE(slow, 16);
  // Rebuilt from the slow answers alone: ready once there are eight of them.
  while (slow < 16) {
    b.add(now += 1ms, 1, 40);
    ++slow;
  }
  EXPECT_EQ(b.find(1)->samples, 16u);
  EXPECT_NEAR(b.find(1)->mean_ms, 40, 1e-9);
  for (std::size_t i = 0; i < NoloadBaselines::kMinHistory; ++i) b.add(now += 1ms, 1, 40);
  for (int i = 0; i < 16; ++i) b.add(now += 1ms, 1, 10);
  EXPECT_EQ(b.rebuilds(), 2u);
  EXPECT_NEAR(b.find(1)->mean_ms, 10, 1e-9);
}

// A bimodal method (10% of its calls at 40 ms, the rest at 2 ms) is not rebuilt by the runs of
// slow calls chance gives it, over 100,000 answers.
TEST(NoloadBaselinesTest, AHeavyTailIsNoChange) {
  NoloadBaselines b({});
  TimePoint now{};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int i = 0; i < 100000; ++i) b.add(now += 1ms, 1, u(rng) < 0.1 ? 40 : 2);
  EXPECT_EQ(b.rebuilds(), 0u);
}

}  // namespace
}  // namespace sluice
