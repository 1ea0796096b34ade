#include "filters/aimd/aimd_limit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

namespace sluice {
namespace {

LatencyBaselines::Options baseline_options(const AimdLimit::Options& o) {
  LatencyBaselines::Options b;
  b.window = o.noload_window;
  b.min_limit = o.min_limit;
  return b;
}

}  // namespace

uint32_t AimdLimit::exceedances_for_evidence(std::size_t n) {
  // The smallest k with P(X >= k) < kP99Alpha for X ~ Binomial(n, 0.01): more samples above the
  // SLO than a p99 at the SLO would give, beyond chance. One outlier is never enough.
  constexpr double q = 0.01;
  if (n > 2000) {
    const double mean = q * static_cast<double>(n);
    const double sd = std::sqrt(static_cast<double>(n) * q * (1 - q));
    return static_cast<uint32_t>(std::ceil(mean + 2.33 * sd)) + 1;
  }
  double pmf = std::pow(1 - q, static_cast<double>(n));  // P(X = 0)
  double tail = 1.0;                                     // P(X >= k), k = 0
  for (std::size_t k = 0; k <= n; ++k) {
    if (tail < kP99Alpha && k >= 2) return static_cast<uint32_t>(k);
    tail -= pmf;  // P(X >= k + 1)
    pmf *= static_cast<double>(n - k) / static_cast<double>(k + 1) * q / (1 - q);
  }
  return static_cast<uint32_t>(n + 1);
}

AimdLimit::AimdLimit(const Options& options)
    : options_(options),
      limit_(std::clamp(static_cast<double>(options.initial_limit),
                        static_cast<double>(options.min_limit),
                        static_cast<double>(options.max_limit))),
      baselines_(baseline_options(options)) {}

uint32_t AimdLimit::limit() const { return static_cast<uint32_t>(std::floor(limit_)); }

LimiterState AimdLimit::state() const {
  LimiterState s;
  s.limit = limit();
  s.p99_ms = p99_ms_;
  s.queueing = share_ewma_;
  s.rtt_noload_ms = baselines_.busiest_noload_ms();
  s.slo_unreachable = slo_unreachable_ ? 1.0 : 0.0;
  return s;
}

std::vector<LimiterGauge> AimdLimit::gauges() const {
  return {
      {"p99_ms", "p99 RTT of the sliding window at the last evaluation, ms", &LimiterState::p99_ms},
      {"queueing", "Smoothed share of samples slower than their method's no-load median",
       &LimiterState::queueing},
      {"slo_unreachable",
       "1 while the p99 exceeds the SLO with no queue to remove (the limit is held)",
       &LimiterState::slo_unreachable}};
}

void AimdLimit::on_sample(TimePoint now, const LatencySample& sample) {
  const LatencyBaselines::Judgement j = baselines_.add(now, sample);
  if (j.judged) {
    const double above = j.tie ? 0.5 : j.above ? 1.0 : 0.0;
    share_ewma_ =
        share_ewma_ ? (1 - kShareSmoothing) * *share_ewma_ + kShareSmoothing * above : above;
    if (!j.tie) {
      recent_[recent_next_] = j.above ? 1 : -1;
      recent_next_ = (recent_next_ + 1) % kRecentJudged;
    }
  }
  record(now, sample.rtt, j);
}

void AimdLimit::on_drop(TimePoint now, Duration in_flight_for, uint64_t /*method*/) {
  if (in_flight_for <= options_.latency_slo) {
    maybe_evaluate(now);
    return;
  }
  // A lower bound of its RTT, already above the SLO; not a no-load sample of anything.
  record(now, in_flight_for, LatencyBaselines::Judgement{});
}

void AimdLimit::record(TimePoint now, Duration rtt, const LatencyBaselines::Judgement& j) {
  const TimePoint admitted = now - rtt;
  // Ties (exactly at the median) take no side in the sign test.
  samples_.push_back(Sample{admitted, now, rtt, j.judged && !j.tie, j.above});
  if (samples_.size() > kMaxSamples) samples_.pop_front();
  const auto threshold = std::chrono::duration_cast<Duration>(options_.latency_slo *
                                                              options_.fast_decrease_multiplier);
  std::size_t above = 0;
  std::size_t sided = 0;
  for (const int8_t r : recent_) {
    above += r > 0 ? 1 : 0;
    sided += r != 0 ? 1 : 0;
  }
  const bool queue = queueing_evidence(above, sided);
  if (rtt > threshold && admitted >= last_decrease_ && queue) {
    trace_ = Trace{.count = trace_.count + 1,
                   .outcome = "fast decrease: one request far over the slo",
                   .fast = true,
                   .limit_before = limit(),
                   .judged = sided,
                   .above = above,
                   .p99_ms = to_ms(rtt),
                   .pressure = pressure_};
    std::array<char, 160> reason{};
    std::snprintf(reason.data(), reason.size(),
                  "fast decrease: one request %.1fms > %.1fx slo %.1fms, with a queue", to_ms(rtt),
                  options_.fast_decrease_multiplier, to_ms(options_.latency_slo));
    set_limit(limit_ * options_.backoff, reason.data(), true);
    last_decrease_ = now;
    judged_until_ = now;
  }
  maybe_evaluate(now);
}

void AimdLimit::on_demand_pressure(TimePoint now) {
  pressure_ = true;
  maybe_evaluate(now);
}

void AimdLimit::maybe_evaluate(TimePoint now) {
  if (!next_evaluation_) {
    next_evaluation_ = now + options_.interval;
    return;
  }
  if (now < *next_evaluation_) return;
  next_evaluation_ = now + options_.interval;
  baselines_.refresh(now);

  while (!samples_.empty() && samples_.front().at + options_.window < now) samples_.pop_front();
  std::vector<Duration> recent;
  recent.reserve(samples_.size());
  std::size_t judged = 0;
  std::size_t above = 0;
  std::size_t over_slo = 0;
  std::size_t over_headroom = 0;
  const auto headroom =
      std::chrono::duration_cast<Duration>(options_.latency_slo * options_.p99_headroom);
  for (const Sample& s : samples_) {
    if (s.admitted < judged_until_) continue;
    recent.push_back(s.rtt);
    judged += s.judged ? 1 : 0;
    above += s.judged && s.above ? 1 : 0;
    over_slo += s.rtt > options_.latency_slo ? 1 : 0;
    over_headroom += s.rtt >= headroom ? 1 : 0;
  }
  // Too little evidence for anything: keep any pressure for the next evaluation.
  if (recent.size() < std::max<std::size_t>(options_.min_samples, 1)) return;
  // Nearest-rank p99, for the gauge and the decision log.
  const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(recent.size()))) - 1;
  std::nth_element(recent.begin(), recent.begin() + static_cast<std::ptrdiff_t>(rank),
                   recent.end());
  p99_ms_ = to_ms(recent[rank]);
  const uint32_t over_slo_needed = exceedances_for_evidence(recent.size());
  trace_ = Trace{.count = trace_.count + 1,
                 .outcome = "hold",
                 .limit_before = limit(),
                 .samples = recent.size(),
                 .over_slo = over_slo,
                 .over_slo_needed = over_slo_needed,
                 .over_headroom = over_headroom,
                 .judged = judged,
                 .above = above,
                 .p99_ms = *p99_ms_,
                 .pressure = pressure_};

  std::array<char, 192> reason{};
  const double slo_ms = to_ms(options_.latency_slo);
  // "p99 above the SLO" is a binomial test, not the nearest rank: with fewer than 100 samples
  // the nearest-rank p99 is the maximum, and one outlier would cut the limit.
  if (over_slo >= over_slo_needed) {
    if (!queueing_evidence(above, judged)) {
      trace_.outcome = "hold: p99 over the slo, no queue";
      // The service's own latency breaks the SLO: a lower limit removes no queue.
      if (!slo_unreachable_) {
        std::snprintf(reason.data(), reason.size(),
                      "p99 %.1fms > slo %.1fms with no queue (%zu of %zu above median): held, "
                      "the SLO is below the service's own p99",
                      *p99_ms_, slo_ms, above, judged);
        last_reason_ = reason.data();
      }
      slo_unreachable_ = true;
      pressure_ = false;
      return;
    }
    slo_unreachable_ = false;
    trace_.outcome = "backoff: p99 over the slo, with a queue";
    std::snprintf(reason.data(), reason.size(),
                  "p99 %.1fms > slo %.1fms (%zu of %zu over), queueing: x%.2f", *p99_ms_, slo_ms,
                  over_slo, recent.size(), options_.backoff);
    set_limit(limit_ * options_.backoff, reason.data());
    last_decrease_ = now;
    judged_until_ = now;
    pressure_ = false;
    return;
  }
  slo_unreachable_ = false;
  // Growth wants a real p99: at least 100 samples, at most 1% of them at or above the headroom.
  if (recent.size() >= kP99Samples && over_headroom * 100 <= recent.size() && pressure_) {
    trace_.outcome = "increase: p99 under the headroom, demand refused";
    std::snprintf(reason.data(), reason.size(),
                  "p99 %.1fms < %.1fms (%.0f%% of slo) with demand: +%g", *p99_ms_,
                  options_.p99_headroom * slo_ms, options_.p99_headroom * 100, options_.increase);
    set_limit(limit_ + options_.increase, reason.data());
    judged_until_ = now;
  }
  pressure_ = false;
}

std::string AimdLimit::describe_last_decision() const {
  const Trace& t = trace_;
  std::array<char, 384> line{};
  if (t.fast) {
    std::snprintf(line.data(), line.size(),
                  "limit %u -> %u (%s); rtt %.1fms, slo %.1fms; last judged %zu, above %zu; "
                  "demand %s",
                  t.limit_before, limit(), t.outcome, t.p99_ms, to_ms(options_.latency_slo),
                  t.judged, t.above, t.pressure ? "refused" : "met");
  } else {
    std::snprintf(line.data(), line.size(),
                  "limit %u -> %u (%s); samples %zu, over slo %zu (%u show a p99 over it), at or "
                  "over the headroom %zu; judged %zu, above %zu; p99 %.1fms, slo %.1fms; "
                  "demand %s",
                  t.limit_before, limit(), t.outcome, t.samples, t.over_slo, t.over_slo_needed,
                  t.over_headroom, t.judged, t.above, t.p99_ms, to_ms(options_.latency_slo),
                  t.pressure ? "refused" : "met");
  }
  return line.data();
}

bool AimdLimit::retune(const Limiter& fresh) {
  const auto* f = dynamic_cast<const AimdLimit*>(&fresh);
  if (f == nullptr) return false;
  options_ = f->options_;
  baselines_.set_options(baseline_options(options_));
  set_limit(limit_, "reload: clamped into min_limit " + std::to_string(options_.min_limit) +
                        ", max_limit " + std::to_string(options_.max_limit));
  return true;
}

void AimdLimit::set_limit(double value, const std::string& reason, bool fast) {
  const uint32_t before = limit();
  limit_ = std::clamp(value, static_cast<double>(options_.min_limit),
                      static_cast<double>(options_.max_limit));
  if (limit() != before) {
    last_reason_ = reason;
    last_change_fast_ = fast;
  }
}

}  // namespace sluice
