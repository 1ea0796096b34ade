// The VegasLimit unit tests' fixture: fake-clock samples fed straight to the limiter.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "filters/rtt_gradient/vegas_limit.h"
#include "tests/filters/method_keys.h"

namespace sluice {

using namespace std::chrono_literals;

class VegasLimitTest : public ::testing::Test {
 protected:
  // `n` samples `gap` apart, each of rtt_ms(i), admitted at `admitted_at` permits, of `method`.
  template <class F>
  void feed(int n, F rtt_ms, uint32_t admitted_at = 1, bool pressure = false,
            uint64_t method = kGet, Duration gap = 10ms, uint32_t concurrency = 0) {
    for (int i = 0; i < n; ++i) {
      now_ += gap;
      if (pressure) limit_->on_demand_pressure(now_);
      limit_->on_sample(now_, LatencySample{method, ms(rtt_ms(i)),
                                            concurrency ? concurrency : admitted_at, admitted_at});
    }
  }
  void feed_constant(int n, double rtt_ms, uint32_t admitted_at = 1, bool pressure = false) {
    feed(
        n, [rtt_ms](int) { return rtt_ms; }, admitted_at, pressure);
  }
  // A baseline for kGet: 50 samples of 10 ms +-1 ms at concurrency 1.
  void learn() {
    feed(50, [](int i) { return 9.0 + (i % 3); });
  }
  // At 1,000 calls/s with demand refused: 101 samples of `slow` at concurrency 20 (two decisions of
  // 50 samples with evidence: a cut), then 150 of `after` at the cut's concurrency, where the cut
  // is checked. Returns the cut.
  template <class Slow, class After>
  uint32_t cut_then(Slow slow, After after) {
    feed(101, slow, 20, /*pressure=*/true, kGet, 1ms);
    const uint32_t cut = limit_->limit();
    EXPECT_LT(cut, 20u) << "no cut to check";
    feed(150, after, cut, true, kGet, 1ms);
    return cut;
  }
  template <typename Edit>
  void make(Edit edit) {
    VegasLimit::Options o;
    edit(o);
    limit_ = std::make_unique<VegasLimit>(o);
  }

  TimePoint now_ = TimePoint{} + std::chrono::hours(1);
  std::unique_ptr<VegasLimit> limit_ = std::make_unique<VegasLimit>(VegasLimit::Options{});
};

}  // namespace sluice
