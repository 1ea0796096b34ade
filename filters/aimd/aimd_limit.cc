#include "filters/aimd/aimd_limit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace sluice {

AimdLimit::AimdLimit(const Options& options)
    : options_(options),
      limit_(std::clamp(static_cast<double>(options.initial_limit),
                        static_cast<double>(options.min_limit),
                        static_cast<double>(options.max_limit))) {}

uint32_t AimdLimit::limit() const { return static_cast<uint32_t>(std::floor(limit_)); }

LimiterState AimdLimit::state() const {
  LimiterState s;
  s.limit = limit();
  s.p99_ms = p99_ms_;
  return s;
}

std::vector<LimiterGauge> AimdLimit::gauges() const {
  return {{"p99_ms", "p99 RTT of the sliding window at the last evaluation, ms",
           &LimiterState::p99_ms}};
}

void AimdLimit::on_sample(TimePoint now, Duration rtt, uint32_t /*in_flight*/) {
  const TimePoint admitted = now - rtt;
  add(now, admitted, rtt);
  const auto threshold = std::chrono::duration_cast<Duration>(options_.latency_slo *
                                                              options_.fast_decrease_multiplier);
  if (rtt > threshold && admitted >= last_decrease_) {
    char reason[128];
    std::snprintf(reason, sizeof(reason), "fast decrease: one request %.1fms > %.1fx slo %.1fms",
                  to_ms(rtt), options_.fast_decrease_multiplier, to_ms(options_.latency_slo));
    set_limit(limit_ * options_.backoff, reason);
    last_decrease_ = now;
    judged_until_ = now;
  }
  maybe_evaluate(now);
}

void AimdLimit::on_drop(TimePoint now, Duration in_flight_for) {
  if (in_flight_for <= options_.latency_slo) {
    maybe_evaluate(now);
    return;
  }
  on_sample(now, in_flight_for, 0);
}

void AimdLimit::on_demand_pressure(TimePoint now) {
  pressure_ = true;
  maybe_evaluate(now);
}

void AimdLimit::add(TimePoint now, TimePoint admitted, Duration rtt) {
  samples_.push_back(Sample{admitted, now, rtt});
  if (samples_.size() > kMaxSamples) samples_.pop_front();
}

void AimdLimit::maybe_evaluate(TimePoint now) {
  if (!next_evaluation_) {
    next_evaluation_ = now + options_.interval;
    return;
  }
  if (now < *next_evaluation_) return;
  next_evaluation_ = now + options_.interval;

  while (!samples_.empty() && samples_.front().at + options_.window < now) samples_.pop_front();
  std::vector<Duration> recent;
  recent.reserve(samples_.size());
  for (const Sample& s : samples_) {
    if (s.admitted >= judged_until_) recent.push_back(s.rtt);
  }
  if (recent.size() < kMinSamples) return;  // keep any pressure for the next evaluation
  // Nearest-rank p99.
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(recent.size()))) - 1;
  std::nth_element(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(rank),
                   recent.end());
  const Duration p99 = recent[rank];
  p99_ms_ = to_ms(p99);

  char reason[128];
  const double slo_ms = to_ms(options_.latency_slo);
  if (p99 > options_.latency_slo) {
    std::snprintf(reason, sizeof(reason), "p99 %.1fms > slo %.1fms: x%.2f", *p99_ms_, slo_ms,
                  options_.backoff);
    set_limit(limit_ * options_.backoff, reason);
    last_decrease_ = now;
    judged_until_ = now;
  } else if (*p99_ms_ < options_.p99_headroom * slo_ms && pressure_) {
    std::snprintf(reason, sizeof(reason), "p99 %.1fms < %.1fms (%.0f%% of slo) with demand: +%g",
                  *p99_ms_, options_.p99_headroom * slo_ms, options_.p99_headroom * 100,
                  options_.increase);
    set_limit(limit_ + options_.increase, reason);
    judged_until_ = now;
  }
  pressure_ = false;
}

void AimdLimit::set_limit(double value, const std::string& reason) {
  const uint32_t before = limit();
  limit_ = std::clamp(value, static_cast<double>(options_.min_limit),
                      static_cast<double>(options_.max_limit));
  if (limit() != before) last_reason_ = reason;
}

}  // namespace sluice
