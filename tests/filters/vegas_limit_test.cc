#include "filters/rtt_gradient/vegas_limit.h"

#include <gtest/gtest.h>

#include <random>

namespace sluice {
namespace {

using namespace std::chrono_literals;

class VegasLimitTest : public ::testing::Test {
 protected:
  // One update interval: `n` samples of `rtt` admitted at concurrency `in_flight`. The interval
  // is decided when the next one starts, so a decision shows after the following call.
  void interval(Duration rtt, uint32_t in_flight, bool pressure = false, int n = 3) {
    now_ += 50ms;
    if (pressure) limit_->on_demand_pressure(now_);
    for (int i = 0; i < n; ++i) limit_->on_sample(now_, rtt, in_flight);
  }
  // The RTT of a request admitted at the current limit to an upstream with `workers` workers:
  // beyond the workers, each request waits for the ones ahead of it.
  Duration queued_rtt(Duration service, uint32_t workers) const {
    const uint32_t n = limit_->limit();
    return n <= workers ? service : service * ((n + workers - 1) / workers);
  }
  void intervals(int count, Duration rtt, uint32_t in_flight, bool pressure = false) {
    for (int i = 0; i < count; ++i) interval(rtt, in_flight, pressure);
  }
  // Builds the limiter from default options changed by `edit`.
  template <typename Edit>
  void make(Edit edit) {
    VegasLimit::Options o;
    edit(o);
    limit_ = std::make_unique<VegasLimit>(o);
  }

  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::unique_ptr<VegasLimit> limit_ = std::make_unique<VegasLimit>(VegasLimit::Options{});
};

TEST_F(VegasLimitTest, StartsAtTheInitialLimitClampedIntoRange) {
  EXPECT_EQ(limit_->limit(), 20u);
  make([](VegasLimit::Options& o) {
    o.initial_limit = 5000;
    o.max_limit = 1000;
  });
  EXPECT_EQ(limit_->limit(), 1000u);
  make([](VegasLimit::Options& o) {
    o.initial_limit = 0;
    o.min_limit = 2;
  });
  EXPECT_EQ(limit_->limit(), 2u);
}

TEST_F(VegasLimitTest, HoldsALimitNobodyUses) {
  intervals(200, 10ms, 1);
  EXPECT_EQ(limit_->limit(), 20u);
  EXPECT_EQ(limit_->last_reason(), "");
}

TEST_F(VegasLimitTest, GrowsWhileTheLimitIsUsedAndRttStaysAtBaseline) {
  uint32_t previous = limit_->limit();
  for (int i = 0; i < 30; ++i) interval(10ms, limit_->limit());
  EXPECT_GT(limit_->limit(), previous + 10);
  EXPECT_NE(limit_->last_reason().find("limit in use"), std::string::npos);
}

TEST_F(VegasLimitTest, GrowsUnderDemandPressureEvenWhenFewRequestsRanAtOnce) {
  intervals(30, 10ms, 1, /*pressure=*/true);
  EXPECT_GT(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, ShrinksAtOnceWhenTheGradientFallsBelowTolerance) {
  intervals(20, 10ms, 1);
  interval(40ms, 20);
  interval(40ms, 20);  // decides the first 40 ms interval
  // smoothed = 0.8 * 10 + 0.2 * 40 = 16 ms; gradient = 10 / 16 = 0.625; 20 * 0.625 = 12.5
  EXPECT_EQ(limit_->limit(), 12u);
  EXPECT_EQ(limit_->last_reason(), "gradient 0.62 < tolerance 0.85");
}

TEST_F(VegasLimitTest, DecreaseStartsFromTheConcurrencyThatProducedTheRtt) {
  intervals(20, 10ms, 1);
  interval(40ms, 4);
  interval(40ms, 4);
  EXPECT_EQ(limit_->limit(), 2u);  // 4 * 0.625, not 20 * 0.625
}

TEST_F(VegasLimitTest, OneIntervalAtMostHalvesTheLimit) {
  make([](VegasLimit::Options& o) { o.smoothing = 1.0; });
  intervals(20, 10ms, 1);
  interval(1000ms, 20);
  interval(1000ms, 20);
  EXPECT_EQ(limit_->limit(), 10u);
}

TEST_F(VegasLimitTest, DropsInFlightShrinkTheLimit) {
  intervals(20, 10ms, 1);
  now_ += 50ms;
  limit_->on_drop(now_, 30ms);
  interval(10ms, 1);
  EXPECT_EQ(limit_->limit(), 18u);  // 20 * 0.9
  EXPECT_EQ(limit_->last_reason(), "1 drop in flight: x0.90");
}

TEST_F(VegasLimitTest, DropSoonerThanAnyAnswerCouldComeIsIgnored) {
  intervals(20, 10ms, 1);
  now_ += 50ms;
  limit_->on_drop(now_, 2ms);  // the client's deadline was shorter than the service time
  interval(10ms, 1);
  EXPECT_EQ(limit_->limit(), 20u);
}

TEST_F(VegasLimitTest, ShrinksToMinWhileEveryRequestWaitsBehindOthers) {
  // One upstream worker: a request admitted with n in flight waits for n - 1 others.
  intervals(100, 10ms, 1);
  for (int i = 0; i < 100; ++i) interval(queued_rtt(40ms, 1), limit_->limit(), true);
  EXPECT_LE(limit_->limit(), 2u);
}

TEST_F(VegasLimitTest, RelearnsTheBaselineWhenTheServiceItselfSlowsDownAndSpeedsUp) {
  // Four upstream workers; each interval sees requests admitted at every concurrency up to the
  // limit, and those beyond the fourth wait for the ones ahead.
  auto ramp = [&](Duration service, int count) {
    for (int i = 0; i < count; ++i) {
      now_ += 50ms;
      limit_->on_demand_pressure(now_);
      for (uint32_t c = 1; c <= limit_->limit(); ++c) {
        limit_->on_sample(now_, service * ((c + 3) / 4), c);
      }
    }
  };
  ramp(10ms, 200);
  const uint32_t before = limit_->limit();
  EXPECT_GE(before, 4u);
  ramp(40ms, 3);
  EXPECT_LE(limit_->limit(), before / 2);  // first read as queueing: shrink at once
  ramp(40ms, 200);
  // Requests at clean concurrency kept showing 40 ms: that is the service now, not a queue.
  EXPECT_DOUBLE_EQ(*limit_->state().rtt_noload_ms, 40.0);
  EXPECT_GE(limit_->limit(), 4u);
  ramp(10ms, 200);
  EXPECT_DOUBLE_EQ(*limit_->state().rtt_noload_ms, 10.0);
  EXPECT_GE(limit_->limit(), 4u);
}

TEST_F(VegasLimitTest, ExposesBaselineSmoothedRttAndGradient) {
  EXPECT_FALSE(limit_->state().rtt_noload_ms.has_value());
  intervals(10, 10ms, 1);
  interval(20ms, 1);
  interval(20ms, 1);
  const LimiterState s = limit_->state();
  EXPECT_EQ(s.limit, limit_->limit());
  EXPECT_DOUBLE_EQ(*s.rtt_noload_ms, 10.0);
  EXPECT_DOUBLE_EQ(*s.rtt_smoothed_ms, 12.0);  // 0.8 * 10 + 0.2 * 20
  EXPECT_DOUBLE_EQ(*s.gradient, 10.0 / 12.0);
  EXPECT_FALSE(s.p99_ms.has_value());
}

TEST_F(VegasLimitTest, FixedQueueAllowanceReplacesSqrtOfLimit) {
  make([](VegasLimit::Options& o) {
    o.initial_limit = 100;
    o.smoothing = 1.0;
    o.queue_allowance = 2.0;
  });
  intervals(2, 10ms, 100);
  EXPECT_EQ(limit_->limit(), 102u);
}

TEST_F(VegasLimitTest, NeverLeavesMinAndMaxWhateverTheSamples) {
  make([](VegasLimit::Options& o) {
    o.initial_limit = 10;
    o.min_limit = 3;
    o.max_limit = 40;
  });
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> rtt_ms(1, 200);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<uint32_t> in_flight(1, 60);
  for (int i = 0; i < 20000; ++i) {
    now_ += std::chrono::milliseconds(kind(rng) * 5);
    switch (kind(rng)) {
      case 0:
        limit_->on_drop(now_, std::chrono::milliseconds(rtt_ms(rng)));
        break;
      case 1:
        limit_->on_demand_pressure(now_);
        break;
      default:
        limit_->on_sample(now_, std::chrono::milliseconds(rtt_ms(rng)), in_flight(rng));
    }
    ASSERT_GE(limit_->limit(), 3u) << "event " << i;
    ASSERT_LE(limit_->limit(), 40u) << "event " << i;
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST_F(VegasLimitTest, GrowsBackWithinSixHundredMillisecondsAfterAStallEnds) {
  // 2 ms service with demand; then a 4 s stall at 850 ms that collapses the limit; then 2 ms
  // again. The smoothed RTT lags the recovery by seconds: the limit must not wait for it.
  intervals(100, 2ms, 2, true);
  for (int i = 0; i < 40 && limit_->limit() > 1; ++i) interval(850ms, limit_->limit(), true);
  ASSERT_EQ(limit_->limit(), 1u);
  intervals(3, 850ms, 1, true);
  int waited = 0;
  while (limit_->limit() < 4 && waited < 40) {
    interval(2ms, limit_->limit(), true);
    ++waited;
  }
  // +smoothing x sqrt(limit) per 50 ms interval: 1 -> 4 takes 12 intervals. Without the
  // recovery rule the lagging average held the limit at 1 for well over 2 s.
  EXPECT_LE(waited, 12) << "intervals of 50 ms before the limit grew back to 4";
}

}  // namespace
}  // namespace sluice
