#include "filters/limiters/queue_estimator.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace sluice {
namespace {

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

bool QueueReading::queued() const {
  return queue >= QueueEstimator::kQueueCalls && z >= QueueEstimator::kQueueZ;
}

QueueEstimator::QueueEstimator(const Options& options)
    : options_(options), baselines_(options.baselines) {}

void QueueEstimator::set_options(const Options& options) {
  options_ = options;
  baselines_.set_options(options.baselines);
}

void QueueEstimator::add(TimePoint now, const LatencySample& s) {
  const TimePoint admitted = s.admitted == TimePoint{} ? now - s.rtt : s.admitted;
  place(admitted, Call{admitted, s.method, ms(s.rtt), s.admitted_at, s.waited});
  // The span follows the RTT answers have now (after a stall, the fast answers of calls
  // admitted since, not the mean of the last cohort judged: it was the stall's).
  const double rtt = ms(s.rtt);
  rtt_ms_ = rtt_ms_ ? (1 - kAnswerSmoothing) * *rtt_ms_ + kAnswerSmoothing * rtt : rtt;
  set_span();
}

void QueueEstimator::add_drop(TimePoint now, Duration in_flight_for, uint64_t method,
                              uint32_t admitted_at) {
  place(now - in_flight_for,
        Call{now - in_flight_for, method, ms(in_flight_for), admitted_at, false});
}

void QueueEstimator::place(TimePoint admitted, const Call& call) {
  if (admitted < judged_until_) {
    ++late_;
    return;
  }
  if (pending_.empty()) {
    // Cohorts go on from the last judged one, on its grid: a cohort that began with an admission
    // would hold one call more than its span's share (every span would start with a call).
    const TimePoint last = judged_until_ == TimePoint{} ? admitted : judged_until_;
    const TimePoint from = last + span_ * ((admitted - last) / span_);
    pending_.push_back(Cohort{from, from + span_, {}});
  } else if (admitted >= pending_.back().to + 8 * span_) {
    const TimePoint last = pending_.back().to;  // after a long quiet: on the grid, at `admitted`
    const TimePoint from = last + span_ * ((admitted - last) / span_);
    pending_.push_back(Cohort{from, from + span_, {}});
  }
  // Admitted before the first pending cohort but after the last judged one (the first answer
  // after a quiet came from a later admission): cohorts before it, as far back as it needs.
  while (admitted < pending_.front().from) {
    const TimePoint to = pending_.front().from;
    const TimePoint from =
        to - admitted > 8 * span_ ? admitted : std::max(judged_until_, to - span_);
    pending_.insert(pending_.begin(), Cohort{from, to, {}});
  }
  while (admitted >= pending_.back().to) {
    const TimePoint from = pending_.back().to;
    pending_.push_back(Cohort{from, from + span_, {}});
  }
  auto it = std::upper_bound(pending_.begin(), pending_.end(), admitted,
                             [](TimePoint t, const Cohort& c) { return t < c.from; });
  std::prev(it)->calls.push_back(call);
}

std::size_t QueueEstimator::on_load(TimePoint now, std::optional<TimePoint> oldest_unanswered) {
  judged_now_.clear();
  const TimePoint horizon =
      oldest_unanswered ? std::max(std::min(*oldest_unanswered, now), now - kCensorAfter) : now;
  std::size_t done = 0;
  while (done < pending_.size() && pending_[done].to <= horizon) {
    if (!pending_[done].calls.empty()) judged_now_.push_back(judge(now, pending_[done]));
    judged_until_ = pending_[done].to;
    ++done;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
  if (done > 0) baselines_.expire(now);
  return judged_now_.size();
}

QueueReading QueueEstimator::judge(TimePoint now, const Cohort& c) {
  QueueReading r;
  r.from = c.from;
  r.to = c.to;
  r.calls = static_cast<uint32_t>(c.calls.size());
  const double span_ms = ms(c.to - c.from);
  // Per method: its baseline (looked up once) and the calls of the cohort judged against it,
  // whose share of the baseline's error is common to them all.
  struct Seen {
    uint64_t method;
    std::optional<NoloadBaselines::Baseline> baseline;
    uint32_t calls = 0;
  };
  std::vector<Seen> seen;
  auto baseline_of = [&](uint64_t method) -> Seen& {
    for (Seen& s : seen) {
      if (s.method == method) return s;
    }
    return seen.emplace_back(Seen{method, baselines_.find(method)});
  };
  double sum_r = 0, sum_b = 0, sum_d = 0, sum_d2 = 0, sum_a = 0, sum_a2 = 0, sum_da = 0;
  double raw_r2 = 0, raw_a = 0, raw_a2 = 0, raw_ra = 0;
  uint32_t waited = 0, min_admitted_at = UINT32_MAX;
  for (const Call& call : c.calls) {
    sum_r += call.rtt_ms;
    waited += call.waited ? 1 : 0;
    r.max_admitted_at = std::max(r.max_admitted_at, call.admitted_at);
    min_admitted_at = std::min(min_admitted_at, call.admitted_at);
    raw_r2 += call.rtt_ms * call.rtt_ms;
    raw_a += call.admitted_at;
    raw_a2 += static_cast<double>(call.admitted_at) * call.admitted_at;
    raw_ra += call.rtt_ms * call.admitted_at;
    Seen& s = baseline_of(call.method);
    if (!s.baseline) {
      if (baselines_.seen(call.method)) ++r.rebuilding;
      continue;
    }
    ++s.calls;
    ++r.judged;
    const double d = call.rtt_ms - s.baseline->mean_ms;
    const double a = call.admitted_at;
    sum_b += s.baseline->mean_ms;
    sum_d += d;
    sum_d2 += d * d;
    sum_a += a;
    sum_a2 += a * a;
    sum_da += d * a;
  }
  const double n = r.calls;
  r.min_admitted_at = min_admitted_at;
  if (n >= 3) {
    const double mean_a = raw_a / n, mean_r = sum_r / n;
    const double saa = raw_a2 - n * mean_a * mean_a;
    if (saa > 1e-9) {
      const double slope = (raw_ra - n * mean_r * mean_a) / saa;
      const double var = std::max(0.0, (raw_r2 - n * mean_r * mean_r) / (n - 1));
      r.raw_slope_z = slope / std::max(kResolutionMs, std::sqrt(var / saa));
      r.raw_slope_ms = slope;
    }
  }
  r.in_flight = span_ms > 0 ? sum_r / span_ms : 0;
  r.throughput_per_s = span_ms > 0 ? 1000 * n / span_ms : 0;
  r.waited_share = waited / n;
  if (r.judged > 0 && span_ms > 0) {
    const double j = r.judged;
    const double scale = n / j;
    r.queue = scale * sum_d / span_ms;
    r.service = scale * sum_b / span_ms;
    r.delay_ms = sum_d / j;
    if (r.judged >= 2) {
      const double var = std::max(0.0, (sum_d2 - j * r.delay_ms * r.delay_ms) / (j - 1));
      double baseline_error = 0;  // of the cohort's mean, from its methods' baselines
      for (const Seen& s : seen) {
        if (s.baseline) baseline_error += s.calls * s.baseline->se_ms();
      }
      baseline_error /= j;
      // Floored at a microsecond: identical calls (a deterministic test, a cache) are not
      // infinitely sure of nothing, nor of a queue.
      const double se =
          std::max(kResolutionMs, std::sqrt(var / j + baseline_error * baseline_error));
      r.z = r.delay_ms / se;
      r.delay_se_ms = se;
      const double mean_a = sum_a / j;
      const double saa = sum_a2 - j * mean_a * mean_a;
      // Pooled over recent cohorts (within each: centred on its own means), every one weighted
      // down by kPoolDecay per cohort judged since.
      pool_sad_ *= kPoolDecay;
      pool_saa_ *= kPoolDecay;
      pool_var_saa_ *= kPoolDecay;
      pool_b_ = pool_b_ * kPoolDecay;
      pool_w_ *= kPoolDecay;
      if (saa > 1e-9) {
        const double sad = sum_da - j * r.delay_ms * mean_a;
        r.slope_ms = sad / saa;
        r.slope_z = r.slope_ms / std::max(kResolutionMs, std::sqrt(var / saa));
        pool_sad_ += sad;
        pool_saa_ += saa;
        pool_var_saa_ += var * saa;
      }
      pool_b_ += sum_b / j;
      pool_w_ += 1;
    }
  }
  // Clean answers train the baselines, after the cohort was judged against them as they were.
  // Quiet: no queue beyond chance (z < kCleanZ), and no latency growing with concurrency.
  const bool quiet = r.judged >= 2 && r.slope_z < kCleanZ && r.z < kCleanZ;
  // Of a quiet cohort, the calls admitted with no more in flight than the upstream was serving
  // (S <= its workers): a queue too small to show may have held the others. All of them while
  // the method's baseline is young (its own error is larger than that bias, and a baseline that
  // started low reads S low: it would only ever learn from calls admitted at that low level).
  const double quiet_level = std::max(1.0, std::floor(r.service));
  // Without a baseline: a cohort whose latency does not grow with the concurrency its calls
  // were admitted at (they spread over several) met no queue of theirs; else its lowest level.
  const bool flat = r.max_admitted_at > min_admitted_at && r.raw_slope_z < kCleanZ;
  std::vector<const Call*> clean;
  for (const Call& call : c.calls) {
    if (c.from < relearn_from_) break;
    // Before a method's baseline is ready, its calls at the cohort's lowest concurrency start it
    // (the best there is at a start: the first calls meet an empty upstream). Once ready, it
    // stays so (a rebuild keeps kMinClean answers) until the method is forgotten.
    const bool ready = baseline_of(call.method).baseline.has_value();
    const bool young =
        ready && baseline_of(call.method).baseline->samples < NoloadBaselines::kMaxClean / 4;
    if (call.admitted_at <= clean_level_ ||
        (ready && quiet && (young || call.admitted_at <= quiet_level)) ||
        (!ready && (flat || call.admitted_at <= min_admitted_at))) {
      clean.push_back(&call);
    }
  }
  std::sort(clean.begin(), clean.end(),
            [](const Call* a, const Call* b) { return a->admitted < b->admitted; });
  const std::size_t stride = (clean.size() + kCleanPerCohort - 1) / kCleanPerCohort;
  for (std::size_t i = 0; i < clean.size(); i += std::max<std::size_t>(1, stride)) {
    baselines_.add(now, clean[i]->method, clean[i]->rtt_ms);
  }
  if (r.judged > 0) queue_run_ = r.queued() ? queue_run_ + 1 : 0;
  update_span(r);
  last_ = r;
  return r;
}

std::optional<double> QueueEstimator::workers() const {
  if (pool_saa_ <= 0 || pool_w_ <= 0) return std::nullopt;
  const double slope = pool_sad_ / pool_saa_;
  // Var(slope) = sum (var_c saa_c) / (sum saa_c)^2 for independent cohorts.
  const double se = std::sqrt(pool_var_saa_) / pool_saa_;
  if (slope <= 0 || slope < kWorkersZ * std::max(kResolutionMs, se)) return std::nullopt;
  return (pool_b_ / pool_w_) / slope;
}

void QueueEstimator::update_span(const QueueReading& r) {
  rate_per_s_ = rate_per_s_
                    ? (1 - kRateSmoothing) * *rate_per_s_ + kRateSmoothing * r.throughput_per_s
                    : r.throughput_per_s;
  set_span();
}

void QueueEstimator::set_span() {
  if (!rtt_ms_) return;
  double span_ms = 2 * *rtt_ms_;
  if (rate_per_s_ && *rate_per_s_ > 0) {
    span_ms = std::max(span_ms, 1000 * options_.min_calls / *rate_per_s_);
  }
  span_ = std::clamp(
      std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(span_ms)),
      kMinSpan, kMaxSpan);
}

}  // namespace sluice
