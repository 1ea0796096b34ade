// The `aimd` algorithm (after Chalk's AIMD queue server): keep the p99 RTT of a sliding window
// under a latency SLO, lowering the limit only when a queue is what breaks it.
//
// Every `interval` (evaluated lazily on the first event after it ends), over the samples since the
// last change, once there are at least min_samples of them (at a low rate the evaluation waits):
//   p99 > slo and the samples show a queue        -> limit *= backoff
//   p99 > slo and no queue                        -> hold; slo_unreachable = 1 (see below)
//   p99 < p99_headroom * slo and demand pressure  -> limit += increase
// "p99 > slo" is a binomial test: more samples above the SLO than a p99 at the SLO gives, beyond
// a 1% chance (2 of 10, 3 of 25, 5 of 100). With fewer than 100 samples the nearest-rank p99 is
// the maximum, so comparing it with the SLO would let one outlier cut the limit at low traffic.
// "p99 < headroom" needs a real p99: at least 100 samples, at most 1% at or above the headroom.
// and, immediately, one request slower than fast_decrease_multiplier * slo while the last
// kRecentJudged judged samples show a queue (queueing_evidence) -> limit *= backoff.
// "A queue" is LatencyBaselines' evidence: samples judged against their own method's no-load
// median, more of them slower than chance allows (queueing_evidence()). A p99 above the SLO
// with no queue is the service's own latency: lowering the limit cannot help, it would only pin
// the limit at min_limit and shed traffic the service could take. The limit is held, the gauge
// slo_unreachable reads 1 and the decision log says why, so an operator sees that the SLO is
// below what the service does unloaded.
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
// Samples arrive when a call's answer begins (its first response message), so for a stream the
// admission time is `now - rtt` as for a unary call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiters/latency_baselines.h"
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
    uint32_t min_samples = 10;                    // per evaluation (growth also needs kP99Samples)
    Duration noload_window = std::chrono::seconds(30);  // per-method baselines look back this far

    bool operator==(const Options&) const = default;
  };
  // Memory bound for the window; the oldest samples go first.
  static constexpr size_t kMaxSamples = 65536;
  static constexpr double kShareSmoothing = 0.1;   // per sample, the queueing gauge
  static constexpr std::size_t kP99Samples = 100;  // a nearest-rank p99 that is not the maximum
  static constexpr double kP99Alpha = 0.01;
  // Samples over the SLO, of n, that show a p99 above it beyond chance (see maybe_evaluate).
  static uint32_t exceedances_for_evidence(std::size_t n);

  explicit AimdLimit(const Options& options);

  // Limiter
  void on_sample(TimePoint now, const LatencySample& sample) override;
  void on_drop(TimePoint now, Duration in_flight_for, uint64_t method) override;
  void on_demand_pressure(TimePoint now) override;
  uint32_t limit() const override;
  LimiterState state() const override;
  const std::string& last_reason() const override { return last_reason_; }
  bool last_change_fast() const override { return last_change_fast_; }
  std::vector<LimiterGauge> gauges() const override;
  std::vector<MethodBaseline> baselines() const override { return baselines_.snapshot(); }
  void name_method(uint64_t method, std::string_view name) override {
    baselines_.name_method(method, name);
  }
  bool retune(const Limiter& fresh) override;
  uint64_t decisions_taken() const override { return trace_.count; }
  std::string describe_last_decision() const override;

 private:
  struct Sample {
    TimePoint admitted;
    TimePoint at;
    Duration rtt;
    bool judged;
    bool above;
  };

  // Keeps one RTT (a sample, or a drop's time in flight) in the window; applies the fast decrease.
  void record(TimePoint now, Duration rtt, const LatencyBaselines::Judgement& j);
  void maybe_evaluate(TimePoint now);
  void set_limit(double value, const std::string& reason, bool fast = false);

  Options options_;  // replaced only by retune()
  double limit_;
  LatencyBaselines baselines_;
  std::deque<Sample> samples_;  // oldest first
  std::optional<TimePoint> next_evaluation_;
  // Samples admitted before this were judged by an earlier decision (and ran under an older
  // limit): later decisions ignore them.
  TimePoint judged_until_{};
  TimePoint last_decrease_{};  // fast decreases ignore requests admitted before this
  bool pressure_ = false;
  std::optional<double> p99_ms_;
  std::optional<double> share_ewma_;
  static constexpr std::size_t kRecentJudged = 20;
  std::array<int8_t, kRecentJudged> recent_{};  // +1 above, -1 below, 0 none (a ring)
  std::size_t recent_next_ = 0;
  bool slo_unreachable_ = false;
  std::string last_reason_;
  bool last_change_fast_ = false;  // the last change of the limit was a fast decrease
  // What the last decision (an evaluation with min_samples, or a fast decrease) saw and did, for
  // describe_last_decision(): numbers, formatted only when asked.
  struct Trace {
    uint64_t count = 0;
    const char* outcome = "hold";  // what it did, and why (a literal)
    bool fast = false;             // a fast decrease (one request), not an evaluation
    uint32_t limit_before = 0;
    std::size_t samples = 0;
    std::size_t over_slo = 0;
    uint32_t over_slo_needed = 0;
    std::size_t over_headroom = 0;
    std::size_t judged = 0;
    std::size_t above = 0;
    double p99_ms = 0;  // of the evaluation; the slow request's RTT for a fast decrease
    bool pressure = false;
  };
  Trace trace_;
};

}  // namespace sluice
