// The `rtt_gradient` algorithm: TCP-Vegas-style, comparing the RTT a request meets now with the
// RTT it would meet with no queue (RTT_noload, see NoloadTracker).
//
// Once per update_interval (evaluated lazily on the first event after it ends):
//   gradient  = clamp(RTT_noload / RTT_smoothed, 0.5, 1)
//   now       = clamp(RTT_noload / this interval's minimum RTT, 0.5, 1)
//   gradient and now < tolerance   -> limit = min(limit, peak in-flight) * gradient  (at once)
//   gradient and now >= tolerance,
//     and the limit is in use      -> limit += smoothing * (limit * gradient + allowance - limit)
//   otherwise                      -> hold
// where allowance is queue_allowance (default sqrt(limit)), "in use" means a request waited or
// was shed, or the peak concurrency reached limit - allowance; and every result is clamped to
// [min_limit, max_limit]. Decreases are immediate and start from the concurrency that actually
// produced the RTT, because queueing costs every admitted request now; increases are smoothed.
// Requiring the current interval to agree with the smoothed signal stops a cascade of decreases
// driven by the EWMA's memory: once one request in an interval meets no queue, the standing queue
// is gone and the limit holds, even if the average has not caught up yet.
// The gradient floor of 0.5 bounds a single decrease to halving. An interval with drops
// (admitted requests that ended without an RTT sample because of overload, after at least
// RTT_noload in flight) decreases by min(gradient, 0.9).
//
// RTT_smoothed is an EWMA (weight `smoothing`) of per-interval *minimum* RTTs, the same statistic
// RTT_noload is built from: comparing a minimum with a mean would read ordinary service-time
// variance as queueing (the "min bias" that deprecated Netflix's Gradient v1). The minimum of an
// interval rises only when every request in it waited, i.e. when there is a standing queue,
// which is exactly what Vegas is meant to detect.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "filters/limiters/limiter.h"
#include "filters/rtt_gradient/noload_tracker.h"

namespace sluice {

class VegasLimit final : public Limiter {
 public:
  struct Options {
    uint32_t initial_limit = 20;
    uint32_t min_limit = 1;
    uint32_t max_limit = 1000;
    double tolerance = 0.85;
    double smoothing = 0.2;
    std::optional<double> queue_allowance;  // absent: sqrt(limit)
    Duration update_interval = std::chrono::milliseconds(50);
    Duration noload_window = std::chrono::seconds(30);

    bool operator==(const Options&) const = default;
  };
  static constexpr double kMinGradient = 0.5;
  static constexpr double kDropBackoff = 0.9;

  explicit VegasLimit(const Options& options);

  // Limiter
  void on_sample(TimePoint now, Duration rtt, uint32_t in_flight) override;
  void on_drop(TimePoint now, Duration in_flight_for) override;
  void on_demand_pressure(TimePoint now) override;
  uint32_t limit() const override;
  LimiterState state() const override;
  const std::string& last_reason() const override { return last_reason_; }
  std::vector<LimiterGauge> gauges() const override;

  const NoloadTracker& noload() const { return noload_; }

 private:
  void roll(TimePoint now);
  void close_interval(TimePoint now);
  void decide();
  void set_limit(double value, const std::string& reason);

  const Options options_;
  double limit_;
  NoloadTracker noload_;
  std::optional<double> smoothed_ms_;
  std::optional<double> gradient_;
  std::string last_reason_;

  // The open update interval.
  bool interval_open_ = false;
  TimePoint interval_start_{};
  uint32_t samples_ = 0;
  uint32_t drops_ = 0;
  Duration min_rtt_{};
  uint32_t in_flight_at_min_ = 0;
  uint32_t peak_in_flight_ = 0;
  // Demand seen since the last decision; kept across intervals that had nothing to decide on.
  bool pressure_ = false;
};

}  // namespace sluice
