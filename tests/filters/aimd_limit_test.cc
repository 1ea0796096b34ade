#include "filters/aimd/aimd_limit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "tests/filters/method_keys.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

class AimdLimitTest : public ::testing::Test {
 protected:
  // `n` samples `gap` apart of rtt_ms(i), admitted at `admitted_at` permits, with demand if
  // asked. An evaluation due at the end of an interval happens on the next event.
  template <class F>
  void feed(int n, F rtt_ms, bool pressure = false, uint32_t admitted_at = 1, Duration gap = 10ms) {
    for (int i = 0; i < n; ++i) {
      now_ += gap;
      if (pressure) limit_->on_demand_pressure(now_);
      limit_->on_sample(now_, LatencySample{kGet, ms(rtt_ms(i)), admitted_at, admitted_at});
    }
  }
  void second(double rtt_ms, bool pressure, uint32_t admitted_at = 1) {
    feed(
        100, [rtt_ms](int i) { return rtt_ms * (0.95 + 0.01 * (i % 10)); }, pressure, admitted_at);
  }
  // A no-load baseline of about 50 ms at concurrency 1.
  void learn() { second(50, false); }
  template <typename Edit>
  void make(Edit edit) {
    AimdLimit::Options o;
    edit(o);
    limit_ = std::make_unique<AimdLimit>(o);
  }

  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::unique_ptr<AimdLimit> limit_ = std::make_unique<AimdLimit>(AimdLimit::Options{});
};

TEST(AimdEvidenceTest, OneOutlierIsNeverAP99AboveTheSlo) {
  EXPECT_EQ(AimdLimit::exceedances_for_evidence(5), 2u);
  EXPECT_EQ(AimdLimit::exceedances_for_evidence(10), 2u);
  EXPECT_EQ(AimdLimit::exceedances_for_evidence(25), 3u);
  EXPECT_EQ(AimdLimit::exceedances_for_evidence(100), 5u);
  EXPECT_GT(AimdLimit::exceedances_for_evidence(10000), 100u);
}

TEST_F(AimdLimitTest, AddsIncreaseWhenP99IsUnderHeadroomAndThereIsDemand) {
  second(50, true);
  second(50, true);
  EXPECT_EQ(limit_->limit(), 11u);
  EXPECT_FALSE(limit_->last_change_fast());
}

TEST_F(AimdLimitTest, HoldsWithoutDemandHoweverFastTheUpstream) {
  for (int i = 0; i < 5; ++i) second(5, false);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, GrowthWaitsForARealP99) {
  // 20 calls/s: fewer than 100 samples in a second, so the p99 would be the maximum.
  for (int i = 0; i < 3; ++i)
    feed(
        20, [](int) { return 50.0; }, true, 1, 50ms);
  EXPECT_EQ(limit_->limit(), 10u);
  for (int i = 0; i < 4; ++i)
    feed(
        20, [](int) { return 50.0; }, true, 1, 50ms);
  EXPECT_EQ(limit_->limit(), 11u);  // after 100 samples
}

TEST_F(AimdLimitTest, BacksOffWhenAQueueTakesP99AboveTheSlo) {
  learn();
  second(200, true, 10);  // every call waits 150 ms behind others
  feed(
      1, [](int) { return 200.0; }, true, 10);
  EXPECT_EQ(limit_->limit(), 7u);
  EXPECT_NE(limit_->last_reason().find("queueing"), std::string::npos);
  EXPECT_FALSE(limit_->last_change_fast());
}

TEST_F(AimdLimitTest, AtALowRateOneOutlierDoesNotCutTheLimit) {
  // The failure: with 5-99 samples "p99" is the maximum. One 400 ms call among 40 is not
  // a p99 above a 200 ms SLO.
  make([](AimdLimit::Options& o) { o.latency_slo = 200ms; });
  feed(
      40, [](int i) { return i == 20 ? 400.0 : 50.0 + (i % 5); }, true, 1, 50ms);
  feed(
      1, [](int) { return 50.0; }, true, 1, 50ms);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, SloBelowTheServicesOwnLatencyHoldsTheLimitAndSaysSo) {
  // The service takes 150 ms unloaded; the SLO is 100 ms. Lowering the limit removes no queue:
  // the limit is held (not pinned at min_limit) and slo_unreachable reads 1.
  for (int i = 0; i < 10; ++i) second(150, true);
  EXPECT_EQ(limit_->limit(), 10u);
  EXPECT_DOUBLE_EQ(limit_->state().slo_unreachable.value_or(0), 1.0);
  EXPECT_NE(limit_->last_reason().find("SLO is below the service's own p99"), std::string::npos);
  // Once the SLO is met again (the 10 s window has turned over) the flag clears.
  for (int i = 0; i < 11; ++i) second(50, false);
  EXPECT_DOUBLE_EQ(limit_->state().slo_unreachable.value_or(1), 0.0);
}

TEST_F(AimdLimitTest, SamplesThatCausedABackoffDoNotCauseAnother) {
  learn();
  second(200, true, 10);
  feed(
      1, [](int) { return 60.0; }, false, 1);
  EXPECT_EQ(limit_->limit(), 7u);
  second(60, false);  // a new second, only fast samples since the backoff
  EXPECT_EQ(limit_->limit(), 7u);
}

TEST_F(AimdLimitTest, FastDecreaseNeedsAQueueAndFiresOncePerFlight) {
  learn();
  // One very slow call among fast ones: an outlier of the service, not a queue.
  feed(1, [](int) { return 400.0; });
  EXPECT_EQ(limit_->limit(), 10u);
  // A queue: samples mostly above their median, then one call beyond 3x the SLO.
  feed(
      30, [](int) { return 90.0; }, false, 10);
  feed(
      1, [](int) { return 400.0; }, false, 10);
  EXPECT_EQ(limit_->limit(), 7u);
  EXPECT_TRUE(limit_->last_change_fast());
  feed(
      1, [](int) { return 400.0; }, false, 10);  // admitted before the decrease: ignored
  EXPECT_EQ(limit_->limit(), 7u);
}

TEST_F(AimdLimitTest, DescribesEveryDecisionHoldsIncluded) {
  // One line per evaluation with enough samples, and per fast decrease (the filter logs it at
  // debug level).
  EXPECT_EQ(limit_->decisions_taken(), 0u);
  const auto has = [this](const std::string& part) {
    return limit_->describe_last_decision().find(part) != std::string::npos;
  };
  learn();
  second(50, false);
  ASSERT_GT(limit_->decisions_taken(), 0u);
  EXPECT_TRUE(
      has("limit 10 -> 10 (hold); samples 101, over slo 0 (5 show a p99 over it), at or "
          "over the headroom 0; judged 84, above 47; p99 52.0ms, slo 100.0ms; demand met"))
      << limit_->describe_last_decision();
  feed(
      30, [](int) { return 90.0; }, false, 10);
  feed(
      1, [](int) { return 400.0; }, false, 10);
  ASSERT_TRUE(limit_->last_change_fast());
  EXPECT_TRUE(
      has("limit 10 -> 7 (fast decrease: one request far over the slo); rtt 400.0ms, "
          "slo 100.0ms; last judged 20, above 20; demand met"))
      << limit_->describe_last_decision();
  make([](AimdLimit::Options&) {});
  learn();
  second(200, true, 10);
  feed(
      1, [](int) { return 200.0; }, true, 10);
  ASSERT_EQ(limit_->limit(), 7u);
  EXPECT_TRUE(
      has("-> 7 (backoff: p99 over the slo, with a queue); samples 80, over slo 80 (4 "
          "show a p99 over it)"))
      << limit_->describe_last_decision();
  EXPECT_TRUE(has("judged 80, above 80; p99 208.0ms, slo 100.0ms; demand refused"))
      << limit_->describe_last_decision();
}

TEST_F(AimdLimitTest, DropsWithinTheSloSayNothingAboutIt) {
  learn();
  now_ += 10ms;
  for (int i = 0; i < 50; ++i) limit_->on_drop(now_, 20ms, kGet);
  second(50, false);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(AimdLimitTest, StaysWithinMinAndMax) {
  make([](AimdLimit::Options& o) {
    o.initial_limit = 3;
    o.min_limit = 2;
    o.max_limit = 4;
  });
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> rtt(1, 900);
  for (int i = 0; i < 20000; ++i) {
    now_ += 5ms;
    limit_->on_demand_pressure(now_);
    limit_->on_sample(now_, LatencySample{kGet, ms(rtt(rng)), 8, 8});
    ASSERT_GE(limit_->limit(), 2u);
    ASSERT_LE(limit_->limit(), 4u);
  }
}

}  // namespace
}  // namespace sluice
