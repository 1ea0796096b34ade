#include "filters/rtt_gradient/vegas_limit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sluice {
namespace {

double clamp_limit(double v, const VegasLimit::Options& o) {
  return std::clamp(v, static_cast<double>(o.min_limit), static_cast<double>(o.max_limit));
}

}  // namespace

VegasLimit::VegasLimit(const Options& options)
    : options_(options),
      limit_(clamp_limit(options.initial_limit, options)),
      noload_(options.noload_window, options.min_limit) {}

uint32_t VegasLimit::limit() const { return static_cast<uint32_t>(std::floor(limit_)); }

LimiterState VegasLimit::state() const {
  LimiterState s;
  s.limit = limit();
  if (auto e = noload_.estimate()) s.rtt_noload_ms = to_ms(*e);
  s.rtt_smoothed_ms = smoothed_ms_;
  s.gradient = gradient_;
  return s;
}

std::vector<LimiterGauge> VegasLimit::gauges() const {
  return {
      {"rtt_noload_ms", "Estimated RTT without queueing (RTT_noload), ms",
       &LimiterState::rtt_noload_ms},
      {"rtt_smoothed_ms", "Smoothed per-interval minimum RTT compared with it, ms",
       &LimiterState::rtt_smoothed_ms},
      {"gradient", "RTT_noload / smoothed RTT as last used (clamped 0.5..1)",
       &LimiterState::gradient},
  };
}

void VegasLimit::on_sample(TimePoint now, Duration rtt, uint32_t in_flight) {
  roll(now);
  if (samples_ == 0 || rtt < min_rtt_) {
    min_rtt_ = rtt;
    in_flight_at_min_ = in_flight;
  }
  ++samples_;
  peak_in_flight_ = std::max(peak_in_flight_, in_flight);
}

void VegasLimit::on_drop(TimePoint now, Duration in_flight_for) {
  roll(now);
  const auto noload = noload_.estimate();
  if (noload && in_flight_for < *noload) return;  // gave up before any answer was possible
  ++drops_;
}

void VegasLimit::on_demand_pressure(TimePoint now) {
  roll(now);
  pressure_ = true;
}

void VegasLimit::roll(TimePoint now) {
  if (!interval_open_) {
    interval_open_ = true;
    interval_start_ = now;
    return;
  }
  if (now - interval_start_ < options_.update_interval) return;
  close_interval(now);
  interval_start_ = now;
}

void VegasLimit::close_interval(TimePoint now) {
  if (samples_ > 0) {
    noload_.add_interval(now, min_rtt_, in_flight_at_min_);
    const double m = to_ms(min_rtt_);
    smoothed_ms_ =
        smoothed_ms_ ? (1 - options_.smoothing) * *smoothed_ms_ + options_.smoothing * m : m;
    // Recovery from a stall: this interval is clean (at RTT_noload within tolerance) while the
    // average is still at least twice RTT_noload (the gradient's floor). After a stall the
    // average lags the recovered service by seconds; acting on it would hold the limit at its
    // floor and keep shedding clients the upstream could serve. A milder lag (an average a
    // little above RTT_noload after one queued interval) is left to decay: that slowness is
    // the hysteresis that keeps the limit from oscillating around the worker count.
    const auto noload = noload_.estimate();
    if (noload && to_ms(*noload) / m >= options_.tolerance &&
        to_ms(*noload) / *smoothed_ms_ <= kMinGradient) {
      smoothed_ms_ = m;
    }
  }
  if (samples_ > 0 || drops_ > 0) {
    decide();
    pressure_ = false;
  }
  samples_ = 0;
  drops_ = 0;
  peak_in_flight_ = 0;
}

void VegasLimit::decide() {
  const auto noload = noload_.estimate();
  double gradient = 1.0;
  double now_gradient = 1.0;  // this interval alone; 1 when it had no sample
  if (noload && smoothed_ms_ && *smoothed_ms_ > 0) {
    gradient = std::clamp(to_ms(*noload) / *smoothed_ms_, kMinGradient, 1.0);
    gradient_ = gradient;
    if (samples_ > 0) {
      now_gradient = std::clamp(to_ms(*noload) / to_ms(min_rtt_), kMinGradient, 1.0);
    }
  }
  // Start a decrease from the concurrency that produced the RTT, not from a limit nobody used.
  const double base =
      peak_in_flight_ > 0 ? std::min(limit_, static_cast<double>(peak_in_flight_)) : limit_;
  char reason[128];
  if (drops_ > 0) {
    const double factor = std::min(gradient, kDropBackoff);
    std::snprintf(reason, sizeof(reason), "%u drop%s in flight: x%.2f", drops_,
                  drops_ == 1 ? "" : "s", factor);
    set_limit(std::min(limit_, base * factor), reason);
    return;
  }
  if (gradient < options_.tolerance && now_gradient < options_.tolerance) {
    std::snprintf(reason, sizeof(reason), "gradient %.2f < tolerance %.2f", gradient,
                  options_.tolerance);
    set_limit(std::min(limit_, base * gradient), reason);
    return;
  }
  // The two signals disagree: wait for them to agree before acting.
  if (gradient < options_.tolerance || now_gradient < options_.tolerance) return;
  const double allowance = options_.queue_allowance.value_or(std::sqrt(limit_));
  const bool in_use = pressure_ || static_cast<double>(peak_in_flight_) + allowance >= limit_;
  if (!in_use) return;  // an unused limit says nothing about the upstream: hold it
  const double target = limit_ * gradient + allowance;
  std::snprintf(reason, sizeof(reason),
                "gradient %.2f >= tolerance %.2f, limit in use: toward %.1f (allowance %.1f)",
                gradient, options_.tolerance, target, allowance);
  set_limit(limit_ + options_.smoothing * (target - limit_), reason);
}

void VegasLimit::set_limit(double value, const std::string& reason) {
  const uint32_t before = limit();
  limit_ = clamp_limit(value, options_);
  if (limit() != before) last_reason_ = reason;
}

}  // namespace sluice
