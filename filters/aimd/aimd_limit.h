// The `aimd` algorithm (after Chalk's AIMD queue server): keep the p99 RTT of a sliding window
// under a latency SLO.
//
// Every `interval` (evaluated lazily on the first event after it ends), p99 of the window:
//   p99 > slo                                     -> limit *= backoff
//   p99 < p99_headroom * slo and demand pressure  -> limit += increase
// and, immediately, one request slower than fast_decrease_multiplier * slo -> limit *= backoff.
//
// Two refinements keep one congestion episode from being punished many times:
//  - a decision only looks at samples admitted after the previous decision to move the limit
//    (even one clamped at min_limit or max_limit): with a 10 s window and a 1 s interval, the
//    samples that caused a backoff would otherwise cause nine more, and keep the limit at
//    min_limit for a whole window after the upstream recovered;
//  - the fast decrease fires at most once per "flight", like TCP's one decrease per window: a
//    slow request admitted before the last decrease ran under the old limit and says nothing new.
// A drop (an admitted request that ended without an RTT because of overload) after more than the
// SLO in flight is a sample of its time in flight, a lower bound of its RTT, already a violation;
// one that ended within the SLO says nothing about it and is ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "filters/limiters/limiter.h"

namespace sluice {

class AimdLimit final : public Limiter {
 public:
  struct Options {
    Duration latency_slo = std::chrono::milliseconds(100);
    uint32_t initial_limit = 10;
    uint32_t min_limit = 1;
    uint32_t max_limit = 1000;
    double increase = 1.0;
    double backoff = 0.7;
    double p99_headroom = 0.8;
    double fast_decrease_multiplier = 3.0;
    Duration interval = std::chrono::seconds(1);  // control period
    Duration window = std::chrono::seconds(10);   // sliding window for p99

    bool operator==(const Options&) const = default;
  };
  // Fewer samples than this since the last change: hold, a p99 of three samples is noise.
  static constexpr size_t kMinSamples = 5;
  // Memory bound for the window; the oldest samples go first.
  static constexpr size_t kMaxSamples = 65536;

  explicit AimdLimit(const Options& options);

  // Limiter
  void on_sample(TimePoint now, Duration rtt, uint32_t in_flight) override;
  void on_drop(TimePoint now, Duration in_flight_for) override;
  void on_demand_pressure(TimePoint now) override;
  uint32_t limit() const override;
  LimiterState state() const override;
  const std::string& last_reason() const override { return last_reason_; }
  std::vector<LimiterGauge> gauges() const override;

 private:
  struct Sample {
    TimePoint admitted;
    TimePoint at;
    Duration rtt;
  };

  void add(TimePoint now, TimePoint admitted, Duration rtt);
  void maybe_evaluate(TimePoint now);
  void set_limit(double value, const std::string& reason);

  const Options options_;
  double limit_;
  std::deque<Sample> samples_;  // oldest first
  std::optional<TimePoint> next_evaluation_;
  // Samples admitted before this were judged by an earlier decision (and ran under an older
  // limit): later decisions ignore them.
  TimePoint judged_until_{};
  TimePoint last_decrease_{};  // fast decreases ignore requests admitted before this
  bool pressure_ = false;
  std::optional<double> p99_ms_;
  std::string last_reason_;
};

}  // namespace sluice
