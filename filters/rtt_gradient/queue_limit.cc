#include "filters/rtt_gradient/queue_limit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sluice {
namespace {

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

QueueLimit::QueueLimit(const Options& options)
    : options_(options),
      limit_(std::clamp<double>(options.initial_limit, options.min_limit, options.max_limit)) {}

uint32_t QueueLimit::limit() const { return static_cast<uint32_t>(std::floor(limit_)); }

std::vector<LimiterGauge> QueueLimit::gauges() const {
  return {
      {"rtt_noload_ms", "No-load mean RTT of the busiest method (the estimator's baseline), ms",
       &LimiterState::rtt_noload_ms},
      {"rtt_smoothed_ms", "Mean RTT of the last judged cohort, ms", &LimiterState::rtt_smoothed_ms},
      {"gradient", "Calls served / calls in flight of the last judged cohort (RTT_noload / RTT)",
       &LimiterState::gradient},
  };
}

LimiterState QueueLimit::state() const {
  LimiterState s;
  s.limit = limit();
  s.rtt_noload_ms = rtt_noload_ms_;
  if (last_ && last_->throughput_per_s > 0 && last_->in_flight > 0) {
    s.rtt_smoothed_ms = 1000 * last_->in_flight / last_->throughput_per_s;
    if (last_->judged > 0) s.gradient = std::clamp(last_->service / last_->in_flight, 0.0, 1.0);
  }
  return s;
}

void QueueLimit::on_sample(TimePoint now, const LatencySample& sample) {
  note_peak(now, sample.concurrency);
  if (probe_since_) return;  // a probe holds the limit until its baseline is learnt
  // Slow start grows per answer (TCP's per ACK): an answer of a call that waited for its permit,
  // while no queue is seen, adds one: the limit doubles every RTT while demand refuses.
  // An answer beyond its method's overdue age pauses that until a cohort admitted after it shows
  // no queue (TCP's loss ends slow start; here a slow answer suspends it).
  // Before a baseline says what a slow answer is, the fastest answer yet does (Vegas' BaseRTT):
  // an answer more than kOverdueFactor times slower does not grow the limit.
  const double rtt_ms = ms(sample.rtt);
  const std::optional<NoloadBaselines::Range> range =
      estimator_ ? estimator_->baselines().range(sample.method) : std::nullopt;
  if (!range) {
    fastest_ms_ = fastest_ms_ ? std::min(*fastest_ms_, rtt_ms) : rtt_ms;
    if (sample.waited && rtt_ms <= kOverdueFactor * *fastest_ms_ && slow_start()) {
      set_limit(now, limit_ + 1, "slow start: calls waited, answers fast", /*decisive=*/false);
    }
    return;
  }
  if (rtt_ms > kOverdueFactor * range->p99_ms) {
    slow_answer_at_ = now;
    return;
  }
  if (sample.waited && evidence_run_ == 0 && !slow_answer_at_ && slow_start()) {
    set_limit(now, limit_ + 1, "slow start: no queue, calls waited", /*decisive=*/false);
  }
}

bool QueueLimit::grows_on_refusal() const {
  return slow_start() && evidence_run_ == 0 && !slow_answer_at_ && !probe_since_ &&
         !at_capacity() && (!last_ || !last_->queued());
}

void QueueLimit::on_refused(TimePoint now, uint32_t in_flight, uint32_t queued) {
  if (!grows_on_refusal()) return;
  double target = static_cast<double>(in_flight) + queued;
  if (const std::optional<double> c = estimator_ ? estimator_->workers() : std::nullopt) {
    target = std::min(target, std::ceil((1 + kHeadroom) * *c) + 1);
  }
  if (target > limit_) {
    set_limit(now, target, "admit on refusal: no queue seen", /*decisive=*/false);
  }
}

bool QueueLimit::at_capacity() const {
  const std::optional<double> c = estimator_ ? estimator_->workers() : std::nullopt;
  return c && limit_ >= std::floor((1 + kHeadroom) * *c + 0.5);
}

bool QueueLimit::slow_start() const { return !last_cut_ || now_ - *last_cut_ > kCutMemory; }

void QueueLimit::on_load(const LoadReading& r) {
  now_ = r.now;
  if (probe_since_ && !probe_drained_ && r.in_flight <= limit()) probe_drained_ = r.now;
  estimator_ = r.estimator;
  note_peak(r.now, r.in_flight);
  const QueueEstimator& est = *r.estimator;
  for (const QueueReading& c : est.judged_now()) decide(r.now, c);
  hold_if_overdue(r);
  // Demand bound: never more than twice the peak in flight (plus a few).
  const double p = peak(r.now);
  double bound = std::max(2 * p, p + kDemandSlack);
  if (const std::optional<double> c = est.workers()) {
    bound = std::min(bound, std::ceil((1 + kHeadroom) * *c) + 1);
  }
  if (limit_ > bound) {
    set_limit(r.now, bound, "demand bound: peak " + std::to_string(static_cast<int>(p)),
              /*decisive=*/false);
  }
  rtt_noload_ms_ = est.baselines().busiest_noload_ms();
  const std::optional<double> p99 = est.baselines().smallest_p99_ms();
  overdue_after_ = p99 ? std::optional<Duration>(std::chrono::duration_cast<Duration>(
                             std::chrono::duration<double, std::milli>(kOverdueFactor * *p99)))
                       : std::nullopt;
}

void QueueLimit::end_probe(TimePoint now, const char* why) {
  probe_since_.reset();
  last_probe_end_ = now;
  set_limit(now, std::max(limit_, pre_probe_), why);
}

void QueueLimit::decide(TimePoint now, const QueueReading& c) {
  // The probe's time counts from when the calls in flight at its start drained (calls run alone
  // only then), so a start that flooded the upstream is probed too.
  if (probe_since_ && ((c.from >= *probe_since_ && c.judged == c.calls) ||
                       (probe_drained_ && now - *probe_drained_ > kMaxProbe))) {
    end_probe(now, c.judged == c.calls ? "probe over: baselines ready" : "probe over: timed out");
  }
  // Latency that grows with concurrency by a queue's worth (a quarter of the mean RTT across the
  // cohort's concurrencies), before any baseline: contention that grows with load grows less.
  const bool queue_sized =
      c.raw_slope_z >= kCutZ && c.calls > 0 &&
      c.raw_slope_ms * (c.max_admitted_at - c.min_admitted_at) >=
          kQueueShare * 1000 * c.in_flight / std::max(1e-9, c.throughput_per_s);
  const bool unjudged = c.judged == 0 && queue_sized;
  if (!probe_since_ && unjudged && c.waited_share > 0 &&
      (!last_probe_end_ || now - *last_probe_end_ > kProbeGap)) {
    probe_since_ = now;
    probe_drained_.reset();
    pre_probe_ = limit_;
    estimator_->relearn_from(now);
    set_limit(now, options_.min_limit, "baseline probe: calls waited, no baseline to judge them");
    last_decision_ = "baseline probe";
    ++decisions_;
    return;
  }
  if (c.judged == 0 || probe_since_) return;
  last_ = c;
  ++decisions_;
  const bool counts = c.from >= changed_at_;  // admitted under the current limit
  const bool held_back = c.waited_share >= kWaitedShare || c.slope_z >= kSlopeZ;
  const bool removable = c.z >= kCutZ && c.queue >= QueueEstimator::kQueueCalls &&
                         c.queue >= kQueueShare * c.service && held_back;
  evidence_run_ = removable ? evidence_run_ + 1 : 0;
  if (slow_answer_at_ && c.from >= *slow_answer_at_ && !c.queued()) slow_answer_at_.reset();
  const bool overwhelming = removable && c.z >= kOverwhelmingZ && evidence_run_ >= 2;
  const char* outcome = "no queue";
  const double before = limit_;
  if (cut_check_ && counts) {
    const CutCheck k = *cut_check_;
    cut_check_.reset();
    const double rtt = c.throughput_per_s > 0 ? 1000 * c.in_flight / c.throughput_per_s : 0;
    if (rtt >= kRelief * k.rtt_ms && c.throughput_per_s < kRelief * k.throughput_per_s) {
      set_limit(now, k.limit_before, "cut undone: it cost throughput and relieved nothing");
      estimator_->relearn_from(now);
      evidence_run_ = 0;
      char line[192];
      std::snprintf(line, sizeof line,
                    "cut undone: limit %.0f -> %.0f, RTT %.1f ms (was %.1f), %.0f/s (was %.0f)",
                    before, limit_, rtt, k.rtt_ms, c.throughput_per_s, k.throughput_per_s);
      last_decision_ = line;
      return;
    }
  }
  if (probe_up_ && counts) {
    const ProbeUp p = *probe_up_;
    probe_up_.reset();
    if (c.queue > p.queue + 0.5 * (p.to - p.from) && limit_ >= p.to) {
      set_limit(now, p.from, "probe undone: the calls it added queued");
      probe_wait_ = std::min<Duration>(2 * probe_wait_, kMaxProbeWait);
      last_cut_ = now;
      char line[160];
      std::snprintf(line, sizeof line, "probe undone: limit %.0f -> %.0f, queue %.1f (was %.1f)",
                    before, limit_, c.queue, p.queue);
      last_decision_ = line;
      return;
    }
  }
  if (removable && counts && (evidence_run_ >= 2 || c.z >= kOverwhelmingZ)) {
    double target = std::floor((1 + kHeadroom) * c.service + 0.5);
    if (!overwhelming) target = std::max(target, std::floor(limit_ / 2));
    if (target < limit_) {
      char reason[96];
      std::snprintf(reason, sizeof reason, "queue %.1f calls, serving %.1f (z %.1f)", c.queue,
                    c.service, c.z);
      const double limit_before = limit_;
      set_limit(now, target, reason);
      if (c.throughput_per_s > 0) {
        cut_check_ =
            CutCheck{limit_before, 1000 * c.in_flight / c.throughput_per_s, c.throughput_per_s};
      }
      if (last_cut_ && now - *last_cut_ < kRepeatedCut) {
        probe_wait_ = std::min<Duration>(2 * probe_wait_, kMaxProbeWait);
      } else if (!last_cut_ || now - *last_cut_ > kCutMemory) {
        probe_wait_ = kMinProbeWait;
      }
      last_cut_ = now;
      outcome = overwhelming ? "cut (overwhelming)" : "cut";
    } else {
      outcome = "queue, at its target";
    }
  } else if (removable) {
    outcome = counts ? "queue, confirming" : "queue, admitted before the last change";
  } else if (!c.queued() && c.waited_share > 0 && counts && !slow_start() &&
             now - *last_cut_ >= probe_wait_ && !at_capacity()) {
    const double from = limit_;
    set_limit(now, limit_ + std::max(1.0, kProbeStep * limit_), "probe: no queue, calls waited");
    if (limit_ > from) probe_up_ = ProbeUp{from, limit_, c.queue};
    outcome = "probe up";
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "%s: limit %.0f -> %.0f; cohort %u calls, in flight %.1f, serving %.1f, queue "
                "%.1f (z %.1f, slope z %.1f), delay %.1f ms, waited %.0f%%",
                outcome, before, limit_, c.calls, c.in_flight, c.service, c.queue, c.z, c.slope_z,
                c.delay_ms, 100 * c.waited_share);
  last_decision_ = line;
}

void QueueLimit::hold_if_overdue(const LoadReading& r) {
  if (!r.oldest_unanswered || !r.estimator) return;
  const std::optional<NoloadBaselines::Range> range =
      r.estimator->baselines().range(r.oldest_method);
  if (!range) return;
  // Two calls overdue, not one: one slow call of a heavy tail is what an idle service gives now
  // and then (a lognormal with sigma 0.8, 20 calls/s: ~70 holds in 40 minutes on one alone).
  if (!r.second_unanswered) return;
  const double age_ms = ms(r.now - *r.second_unanswered);
  const double serving = last_ ? last_->service : 0;
  // A call overdue alone in flight is a slow call: nothing of sluice's queued behind it.
  if (age_ms <= kOverdueFactor * range->p99_ms || r.in_flight < std::max(2.0, serving + 1)) return;
  if (r.in_flight >= limit()) return;
  char reason[96];
  std::snprintf(reason, sizeof reason, "overdue: a call in flight %.0f ms, no-load p99 %.1f ms",
                age_ms, range->p99_ms);
  set_limit(r.now, r.in_flight, reason);
  // A hold is a slow answer in advance: no growth until a cohort admitted since shows no queue.
  slow_answer_at_ = r.now;
}

void QueueLimit::note_peak(TimePoint now, uint32_t in_flight) {
  const int64_t id = now.time_since_epoch() / (kPeakWindow / static_cast<int>(peaks_.size()));
  PeakSlot& slot = peaks_[static_cast<std::size_t>(id) % peaks_.size()];
  if (slot.id != id) slot = PeakSlot{id, 0};
  slot.peak = std::max(slot.peak, in_flight);
}

uint32_t QueueLimit::peak(TimePoint now) const {
  const int64_t id = now.time_since_epoch() / (kPeakWindow / static_cast<int>(peaks_.size()));
  uint32_t p = 0;
  for (const PeakSlot& s : peaks_) {
    if (s.id > id - static_cast<int64_t>(peaks_.size())) p = std::max(p, s.peak);
  }
  return p;
}

bool QueueLimit::retune(const Limiter& fresh) {
  const auto* f = dynamic_cast<const QueueLimit*>(&fresh);
  if (f == nullptr) return false;
  options_ = f->options_;
  set_limit(changed_at_, limit_,
            "reload: clamped into min_limit " + std::to_string(options_.min_limit) +
                ", max_limit " + std::to_string(options_.max_limit),
            /*decisive=*/false);
  return true;
}

void QueueLimit::set_limit(TimePoint now, double value, std::string reason, bool decisive) {
  const uint32_t before = limit();
  limit_ = std::clamp<double>(value, options_.min_limit, options_.max_limit);
  if (limit() != before) {
    last_reason_ = std::move(reason);
    last_change_bound_ = !decisive && limit() < before;
    if (decisive) changed_at_ = now;
  }
}

}  // namespace sluice
