#include "filters/rtt_gradient/vegas_limit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

namespace sluice {
namespace {

double clamp_limit(double v, const VegasLimit::Options& o) {
  return std::clamp(v, static_cast<double>(o.min_limit), static_cast<double>(o.max_limit));
}

LatencyBaselines::Options baseline_options(const VegasLimit::Options& o) {
  LatencyBaselines::Options b;
  b.window = o.noload_window;
  b.min_limit = o.min_limit;
  return b;
}

double gradient_of(double shift) {
  return std::clamp(std::exp(-shift), VegasLimit::kMinGradient, 1.0);
}

// The median of one field of the judged samples (reorders them); 0 if there are none.
double median_of(std::vector<VegasLimit::Judged>& v, double VegasLimit::Judged::*field) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end(),
                   [field](const auto& a, const auto& b) { return a.*field < b.*field; });
  return (*mid).*field;
}

double ewma(const std::optional<double>& old, double value) {
  return old ? (1 - VegasLimit::kShareSmoothing) * *old + VegasLimit::kShareSmoothing * value
             : value;
}

}  // namespace

VegasLimit::VegasLimit(const Options& options)
    : options_(options),
      limit_(clamp_limit(options.initial_limit, options)),
      baselines_(baseline_options(options)) {}

uint32_t VegasLimit::limit() const { return static_cast<uint32_t>(std::floor(limit_)); }

std::vector<LimiterGauge> VegasLimit::gauges() const {
  return {
      {"rtt_noload_ms", "No-load median RTT of the busiest method (RTT_noload), ms",
       &LimiterState::rtt_noload_ms},
      {"rtt_smoothed_ms", "RTT_noload times the smoothed queueing shift, ms",
       &LimiterState::rtt_smoothed_ms},
      {"gradient", "RTT_noload / RTT as last used (clamped 0.5..1)", &LimiterState::gradient},
      {"queueing", "Smoothed share of samples slower than their method's no-load median",
       &LimiterState::queueing},
      {"tolerated_slowdown",
       "Slowdown tolerated as not a queue (a cut that did not lower the latency was undone)",
       &LimiterState::tolerated_slowdown},
  };
}

LimiterState VegasLimit::state() const {
  LimiterState s;
  s.limit = limit();
  s.rtt_noload_ms = baselines_.busiest_noload_ms();
  if (s.rtt_noload_ms && shift_ewma_) s.rtt_smoothed_ms = *s.rtt_noload_ms * std::exp(*shift_ewma_);
  s.gradient = gradient_;
  s.queueing = share_ewma_;
  s.tolerated_slowdown = std::exp(ambient_) - 1;
  return s;
}

void VegasLimit::on_sample(TimePoint now, const LatencySample& sample) {
  roll(now);
  const LatencyBaselines::Judgement j = baselines_.add(now, sample);
  if (stall_check_ && j.rebuilt) {
    // The service changed speed for good (a stall that goes on): the cut's evidence was judged
    // against the old baseline, and what follows, against the new one, says nothing about it.
    stall_check_.reset();
    stall_shifts_.clear();
  } else if (stall_check_ && j.judged && sample.concurrency >= stall_check_->high) {
    // Admitted before the cut or after: a call that ran at nearly the cut's concurrency and was
    // fast says there was no queue there (the calls in flight at the cut, after a hiccup).
    stall_shifts_.push_back(j.shift - ambient_);
  }
  // Admitted before the last decrease: it ran under the old limit and says nothing about the new
  // one (one decrease per flight, as TCP's per window). It still trains the baselines.
  if (now - sample.rtt < last_decrease_) return;
  ++samples_;
  if (j.rebuilt) {
    // The service changed speed and its baseline was rebuilt: what this decision judged so far
    // was judged against the old one.
    judged_ = ties_ = above_ = far_ = far_run_ = 0;
    judged_samples_.clear();
    last_had_evidence_ = false;
    share_ewma_.reset();
    shift_ewma_.reset();
  } else if (j.judged) {
    if (j.far_above && j.shift >= kFarShift && far_ == 0 && quiet()) {
      // The first sample far beyond the no-load range after quiet ones: a queue may be starting.
      // The quiet samples would only dilute its evidence (and keep the decision open until
      // min_samples); they said all they could. Enough of them also end the last decision's
      // evidence: a queue did not go on from it, so it cannot confirm what this sample starts
      // (on a busy 2-core host: a small queue within tolerance, a CPU hiccup a few hundred
      // samples later, and a cut nobody needed).
      if (judged_ >= kCheckMinSamples) last_had_evidence_ = false;
      judged_ = ties_ = above_ = 0;
      judged_samples_.clear();
    }
    ++judged_;
    ties_ += j.tie ? 1 : 0;
    above_ += j.above ? 1 : 0;
    // Far enough for the overwhelming path: beyond the no-load range AND 1.5x the median (a
    // service with a tight no-load range has its p90 / 0.85 at ~1.25x, which CPU contention
    // alone reaches).
    const bool far = j.far_above && j.shift >= kFarShift;
    far_ += far ? 1 : 0;
    far_run_ = far ? far_run_ + 1 : 0;
    judged_samples_.push_back({j.shift, j.delay_ms});
    if (far_run_ >= kFarSamples && far_ == far_run_ && far_ < judged_) {
      // kFarSamples in a row far beyond the no-load range (the run may have begun in the last
      // decision): a queue has started. What came before the run in this decision (samples that
      // ran before it, however close to their medians) would only dilute that evidence and keep
      // the decision open until min_samples; it said all it could. The decision is the run.
      judged_samples_.erase(judged_samples_.begin(), judged_samples_.end() - far_run_);
      judged_ = above_ = far_ = far_run_;
      ties_ = 0;
    }
  }
  peak_concurrency_ = std::max(peak_concurrency_, sample.concurrency);
}

void VegasLimit::on_drop(TimePoint now, Duration in_flight_for, uint64_t method) {
  roll(now);
  // A call given up before its method could ever answer says nothing about load.
  const auto noload = baselines_.noload_ms(method);
  if (noload && to_ms(in_flight_for) < *noload) return;
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
  // A decrease needs min_samples (the interval stretches at a low rate until it has them), or
  // drops, or a run of kFarSamples samples in a row far above their methods' no-load p90. A quiet
  // decision (no sample far above, at most half above their median) can only grow or hold the
  // limit, and needs no more than one sample: growth keeps its pace at a low rate.
  if (samples_ < options_.min_samples && drops_ == 0 && !overwhelming() && !quiet()) return;
  close_interval(now);
  interval_start_ = now;
}

void VegasLimit::close_interval(TimePoint now) {
  now_ = now;
  baselines_.refresh(now);
  decide();
  pressure_ = false;
  samples_ = 0;
  judged_ = 0;
  above_ = 0;
  ties_ = 0;
  far_ = 0;
  judged_samples_.clear();
  drops_ = 0;
  peak_concurrency_ = 0;
}

bool VegasLimit::overwhelming() const {
  return judged_ > 0 && far_ == judged_ && far_run_ >= kFarSamples;
}

bool VegasLimit::quiet() const {
  return samples_ > 0 && far_ == 0 && 2 * above_ <= judged_ - ties_;
}

void VegasLimit::decide() {
  bool evidence = false;
  double gradient_now = 1.0;
  double shift = 0;
  Check check = Check::kNone;
  const uint32_t sided = judged_ - ties_;  // samples the sign test counts
  decay_ambient();
  trace_ = Trace{.count = trace_.count + 1,
                 .limit_before = limit(),
                 .samples = samples_,
                 .judged = judged_,
                 .above = above_,
                 .ties = ties_,
                 .far = far_,
                 .drops = drops_,
                 .peak_concurrency = peak_concurrency_,
                 .knee = baselines_.knee().value_or(0),
                 .ambient = ambient_,
                 .pressure = pressure_,
                 .overwhelming = overwhelming()};
  if (judged_ > 0) {
    shift = median_shift();
    trace_.delay_ms = median_of(judged_samples_, &Judged::delay_ms);
    // A tie counts half: a service with one fixed no-load time shows ties, not a queue.
    share_ewma_ = ewma(share_ewma_, (above_ + 0.5 * ties_) / judged_);
    shift_ewma_ = ewma(shift_ewma_, shift);
    evidence = queueing_evidence(above_, sided) || overwhelming();
    // Unanimous evidence (every sample above its median, or overwhelming) may cut deeper than
    // halving: a 4x slowdown needs a 4x smaller limit, and the next cut waits a whole flight.
    const bool unanimous = overwhelming() || (sided >= options_.min_samples && above_ == sided);
    // An overwhelming queue is never taken for ambient noise.
    const double tolerated = overwhelming() ? 0.0 : ambient_;
    gradient_now = std::clamp(std::exp(-(shift - tolerated)),
                              unanimous ? kMinGradientOverwhelming : kMinGradient, 1.0);
    gradient_ = gradient_now;
    trace_.shift = shift;
    trace_.gradient = gradient_now;
    trace_.evidence = evidence;
    if (check_stall()) return;
    check = check_cut(shift, evidence);
    if (check == Check::kUndone) {
      trace_.outcome = "the last cut undone: not a queue";
      last_shift_.reset();
      stall_check_.reset();
      return;
    }
    track_steps(shift);
  }
  // A decrease needs two decisions in a row with evidence, or one overwhelming one (every sample
  // far above its no-load p90: a service without a queue gives that < 0.1^4 of the time). One
  // decision's sign test errs about 1% of the time, two in a row about 0.01%.
  const bool confirmed = overwhelming() || (evidence && last_had_evidence_);
  trace_.confirmed = confirmed;
  // A decision short of min_samples (closed by drops) says nothing for or against a queue to
  // come; a quiet one does: it ends a row of evidence. At a low rate a decision stays open while
  // more than half of its samples are above their medians and closes as soon as it is quiet, so
  // the decisions that reach min_samples are those that began above, and quiet ones are short
  // trials in between. Skipped over, they let such a decision with 9 of 10 above confirm the last
  // one with evidence: about 4%, not 1%, and an idle service with a variable latency was cut
  // (simulated: 20 calls/s, 64 workers, six service-time shapes, 30 of 240 one-minute runs).
  if (samples_ >= options_.min_samples || evidence || quiet()) last_had_evidence_ = evidence;
  // Start a decrease from the concurrency that produced the latency, not from a limit nobody used.
  // A decrease from above the knee stops at it: below the knee the window showed no queue, so
  // the next decision, with samples at the knee, tells whether the service merely got slower
  // (the baseline is rebuilt, the limit holds) or queues there too.
  const double base =
      peak_concurrency_ > 0 ? std::min(limit_, static_cast<double>(peak_concurrency_)) : limit_;
  const auto knee = baselines_.knee();
  const double floor = knee && limit_ > *knee ? static_cast<double>(*knee) : 0.0;
  std::array<char, 192> reason{};
  if (drops_ > 0) {
    trace_.outcome = "cut: drops in flight";
    const double factor = std::min(gradient_now, kDropBackoff);
    std::snprintf(reason.data(), reason.size(), "%u drop%s in flight: x%.2f", drops_,
                  drops_ == 1 ? "" : "s", factor);
    const double before = limit_;
    set_limit(std::min(limit_, base * factor), reason.data());
    after_cut(before, base);
    last_decrease_ = now_;
    far_run_ = 0;
    return;
  }
  if (evidence) {
    // A queue within tolerance: no cut. With kCheckMinSamples or more, a queue shorter than the
    // allowance (limit x (1 - gradient) < allowance, Vegas's "below alpha") may still grow if
    // demand was refused: at thousands of calls a second the sign test finds a 5% slowdown (CPU
    // contention that grows with the load), and holding on it kept a limit below the demand
    // while the budget shed (sim: contention 1.2x at 8,700/s, 2.7% shed). With fewer samples,
    // evidence means a slowdown of a whole call or more at a small limit: hold, as before.
    if (gradient_now >= options_.tolerance) {
      trace_.outcome = "queueing within tolerance";
      note_clear();
      if (sided >= kCheckMinSamples) grow(gradient_now, Queue::kWithinTolerance);
      return;
    }
    // A queue that adds less than delay_tolerance to the median call costs less than refusing
    // calls would: on a busy host, CPU contention makes a 2 ms call 20-40% slower (0.4-1 ms)
    // whatever sluice admits, and cutting for it shed what the upstream had room for. It is not
    // cut, and a well-sampled decision grows the limit into refused demand as if there were no
    // queue: a real overload builds a queue that soon passes delay_tolerance.
    if (trace_.delay_ms < to_ms(options_.delay_tolerance)) {
      trace_.outcome = "queueing within delay_tolerance";
      note_clear();
      if (sided >= kCheckMinSamples) grow(1.0, Queue::kWithinDelay);
      return;
    }
    // A queue of less than half a call where it was measured (the concurrency the samples saw x
    // (1 - gradient), Vegas's queue estimate) is not cut: a cut removes a whole permit, at 2
    // calls in flight half of them, for a fraction of one call's wait. One call queued at a
    // FIFO upstream waits on average half a service time or more (2 in flight on 1 worker:
    // 0.5-1 call), and is cut as before; CPU taken by neighbours on a busy host made an idle
    // 4-worker 5 ms service 18% slower (+1.1 ms) at 2 calls in flight, 0.32 of a call, and the
    // limit went 20 -> 1 (integration test under ctest -j2). TCP Vegas holds below beta too.
    if (base * (1.0 - gradient_now) < kMinQueueCalls) {
      trace_.outcome = "hold: a queue of less than half a call";
      note_clear();
      return;
    }
    // Not confirmed yet, or the last cut not checked yet: hold.
    if (!confirmed) {
      trace_.outcome = "hold: queueing beyond tolerance, not confirmed";
      return;
    }
    if (check == Check::kPending) {
      trace_.outcome = "hold: the last cut not relieved yet";
      return;
    }
    trace_.outcome = "cut: queueing beyond tolerance";
    std::snprintf(reason.data(), reason.size(),
                  "queueing: %u of %u slower than their no-load median, gradient %.2f < %.2f",
                  above_, sided, gradient_now, options_.tolerance);
    const double before = limit_;
    set_limit(std::min(limit_, std::max(base * gradient_now, floor)), reason.data());
    after_cut(before, base);
    last_shift_.reset();  // the next decision runs at another concurrency
    // Only a well-sampled cut is checked: at a low rate a decision's median is too noisy to
    // hold the next cut on (and a low rate cannot ratchet the limit down in a fraction of a
    // second); an overwhelming cut is never checked (a service 4x slower that also queues must
    // be cut again before its baseline is relearnt).
    if (limit_ < before && !overwhelming() && judged_ >= kCheckMinSamples) {
      check_ = CutCheck{before, base, shift, shift - ambient_, judged_, kCheckDecisions};
    }
    stall_check_.reset();
    stall_shifts_.clear();
    const double queue_shift = shift - (overwhelming() ? 0.0 : ambient_);
    if (limit_ < before && queue_shift >= kStallCheckShift && samples_ >= kCheckMinSamples) {
      stall_check_ =
          StallCheck{before, base, queue_shift, base * kStallConcurrency, kCheckDecisions};
    }
    last_decrease_ = now_;
    far_run_ = 0;  // the next cut needs a run of samples admitted under the new limit
    return;
  }
  // Just after a queue (the smoothed share still high), do not grow into it again yet; unless the
  // limit is recovering from a cut and this decision, well sampled and with demand refused, ran
  // under the cut limit without a queue (its samples were admitted after the cut): the queue has
  // drained, and what waits is in sluice's queue, not the upstream's.
  note_clear();
  if (recovery_to_ && limit_ >= *recovery_to_) recovery_to_.reset();  // back by other means
  const bool recovering = recovery_to_ && pressure_ && sided >= options_.min_samples;
  if (share_ewma_ && *share_ewma_ >= kSustainedShare && !recovering) {
    trace_.outcome = "hold: just after a queue";
    return;
  }
  trace_.outcome = "no queueing";
  const double g = shift_ewma_ ? gradient_of(*shift_ewma_ - ambient_) : 1.0;
  grow(std::max(g, options_.tolerance), Queue::kNone);
}

void VegasLimit::grow(double gradient, Queue queue) {
  const bool queue_seen = queue != Queue::kNone;
  const double allowance = options_.queue_allowance.value_or(std::sqrt(limit_));
  // In use: requests waited or were shed, or (with no queue seen) the concurrency came near it.
  // Into a queue, even a small one, the limit grows only for demand it refused.
  const bool in_use =
      pressure_ || (!queue_seen && static_cast<double>(peak_concurrency_) + allowance >= limit_);
  if (!in_use) return;  // an unused limit says nothing about the upstream: hold it
  const double target = limit_ * gradient + allowance;
  if (target <= limit_) return;  // the queue has reached the allowance: hold
  const uint32_t sided = judged_ - ties_;
  std::array<char, 192> reason{};
  const bool doubling = !queue_seen && pressure_ && sided >= options_.min_samples;
  if (slow_start_ && doubling) {
    // Nothing has shown the upstream's capacity yet and demand is refused: a start under load
    // (initial_limit 20 against the ~25-30 calls in flight 9,500/s needs on the bench rig) would
    // otherwise queue, and shed, for the ~0.5 s the additive growth takes.
    std::snprintf(reason.data(), reason.size(),
                  "slow start: no queueing (%u of %u above median), demand refused: x%.0f", above_,
                  sided, kSlowStartFactor);
    set_limit(limit_ * kSlowStartFactor, reason.data());
    trace_.outcome = "slow start: no queueing, demand refused";
    return;
  }
  if (recovery_to_ && limit_ < *recovery_to_ && doubling) {
    // After a cut that went below what the decisions since show the upstream can take without a
    // queue (a hiccup's cut, or one from a queue still draining): back to the threshold by
    // doubling, not by +sqrt(limit) x smoothing a decision while sluice's queue sheds.
    const double to = std::min(limit_ * kSlowStartFactor, *recovery_to_);
    std::snprintf(reason.data(), reason.size(),
                  "recovery: no queueing (%u of %u above median), demand refused: toward %.0f",
                  above_, sided, *recovery_to_);
    set_limit(to, reason.data());
    trace_.outcome = "recovery: no queueing, demand refused";
    recovery_doubled_ = true;
    if (limit_ >= *recovery_to_) recovery_to_.reset();
    return;
  }
  if (queue == Queue::kWithinDelay) {
    std::snprintf(reason.data(), reason.size(),
                  "queue adds %.2f ms < delay_tolerance %.2f ms (%u of %u above median), limit in "
                  "use: toward %.1f",
                  trace_.delay_ms, to_ms(options_.delay_tolerance), above_, sided, target);
  } else if (queue_seen) {
    std::snprintf(reason.data(), reason.size(),
                  "queue of %.1f below the allowance (%u of %u above median, gradient %.2f), "
                  "limit in use: toward %.1f",
                  limit_ * (1 - gradient), above_, sided, gradient, target);
  } else {
    std::snprintf(reason.data(), reason.size(),
                  "no queueing (%u of %u above median), limit in use: toward %.1f (allowance %.1f)",
                  above_, sided, target, allowance);
  }
  set_limit(limit_ + options_.smoothing * (target - limit_), reason.data());
}

void VegasLimit::note_clear() {
  if (judged_ - ties_ >= options_.min_samples) {
    last_clear_concurrency_ = static_cast<double>(peak_concurrency_);
  }
}

void VegasLimit::after_cut(double limit_before, double base) {
  if (limit_ >= limit_before) return;
  slow_start_ = false;  // the upstream's capacity has shown itself
  const double to = std::min(base * kRecoveryShare, last_clear_concurrency_);
  recovery_to_ = recovery_to_ && !recovery_doubled_ ? std::max(*recovery_to_, to) : to;
  recovery_doubled_ = false;
  if (limit_ >= *recovery_to_) recovery_to_.reset();
}

bool VegasLimit::check_stall() {
  if (!stall_check_) return false;
  if (drops_ > 0) {  // stronger evidence than the check could give: the cut stands
    stall_check_.reset();
    stall_shifts_.clear();
    return false;
  }
  trace_.stall_samples = static_cast<uint32_t>(stall_shifts_.size());
  if (stall_shifts_.size() < options_.min_samples) {
    if (--stall_check_->decisions_left > 0) return false;
    stall_check_.reset();  // calls never ran at that concurrency again: the cut stands
    stall_shifts_.clear();
    return false;
  }
  const std::size_t mid = stall_shifts_.size() / 2;
  std::nth_element(stall_shifts_.begin(), stall_shifts_.begin() + static_cast<std::ptrdiff_t>(mid),
                   stall_shifts_.end());
  const double median = stall_shifts_[mid];
  trace_.stall_shift = median;
  trace_.stall_evaluated = true;
  const StallCheck cut = *stall_check_;
  stall_check_.reset();
  stall_shifts_.clear();
  // Still slower than the tolerance allows: a queue (it leaves at least queue_shift -
  // log(1 / kStallConcurrency) there); the cut stands.
  if (gradient_of(median) < options_.tolerance) return false;
  check_.reset();
  last_had_evidence_ = false;
  last_shift_.reset();
  trace_.outcome = "the last cut undone: a stall, over";
  std::array<char, 192> reason{};
  std::snprintf(reason.data(), reason.size(),
                "cut undone: calls at concurrency %.0f+ back at their no-load times (%+.0f%%) "
                "after %.0f%% slower at %.0f: a stall of every call, over",
                cut.high, (std::exp(median) - 1) * 100, (std::exp(cut.queue_shift) - 1) * 100,
                cut.concurrency);
  set_limit(std::max(limit_, cut.limit_before), reason.data());
  return true;
}

VegasLimit::Check VegasLimit::check_cut(double shift, bool evidence) {
  if (!check_) return Check::kNone;
  if (drops_ > 0 || overwhelming() || !evidence) {
    // Stronger evidence than the check could give (the cut stands and the next may follow), or
    // the queue is gone: either way nothing is left to check.
    check_.reset();
    return Check::kNone;
  }
  if (judged_ < options_.min_samples) return Check::kPending;
  // What a queue in front of the workers predicts: the shift falls by log(concurrency before /
  // after), down to no queue at all.
  const auto after = static_cast<double>(peak_concurrency_);
  const double predicted =
      after > 0 ? std::min(check_->queue_shift, std::log(check_->concurrency / after)) : 0.0;
  trace_.checked = true;
  trace_.predicted = predicted;
  trace_.fall = check_->shift - shift;
  if (predicted < kMinPredictedFall) {
    // The concurrency did not fall (demand fell, or the cut was small): no experiment yet. After
    // kCheckDecisions of that, the cut stands and the next may follow.
    if (--check_->decisions_left > 0) return Check::kPending;
    check_.reset();
    return Check::kNone;
  }
  const double shortfall = predicted - (check_->shift - shift);  // ~0 if it was a queue
  if (shortfall <= (1 - kRelief) * predicted) {
    check_.reset();  // relieved: it was a queue; if one is left, the next cut may follow
    return Check::kNone;
  }
  // Not relieved (yet): no further cut until a decision shows relief, the queue is gone, or the
  // evidence becomes overwhelming. Undone when the shortfall is beyond what chance gives (the
  // difference between consecutive decisions' shifts: chance_sd()).
  const bool well_sampled = judged_ >= kCheckMinSamples;
  const bool beyond_chance = shortfall > kCheckZ * chance_sd();
  if (!well_sampled || !beyond_chance || shift > kMaxAmbient) return Check::kPending;
  const CutCheck cut = *check_;
  check_.reset();
  ambient_ = std::clamp(shift, 0.0, kMaxAmbient);
  ambient_at_ = now_;
  last_had_evidence_ = false;
  std::array<char, 192> reason{};
  std::snprintf(reason.data(), reason.size(),
                "cut undone: calls %.0f%% slower at concurrency %.0f as at %.0f, not a queue; "
                "tolerating it",
                (std::exp(shift) - 1) * 100, after, cut.concurrency);
  set_limit(std::max(limit_, cut.limit_before), reason.data());
  return Check::kUndone;
}

void VegasLimit::track_steps(double shift) {
  if (judged_ < kCheckMinSamples) return;
  if (last_shift_) {
    const double step = shift - *last_shift_;
    step_var_ =
        steps_ == 0 ? step * step : (1 - kStepSmoothing) * step_var_ + kStepSmoothing * step * step;
    ++steps_;
  }
  last_shift_ = shift;
}

double VegasLimit::chance_sd() const {
  if (steps_ >= kMinSteps) return std::sqrt(step_var_);
  // Not learnt yet: what sampling alone gives the difference of two medians of this decision's
  // size (sqrt(2) x 1.25 sigma / sqrt(n)), kPriorInflation times over (samples of one queue are
  // alike: consecutive medians differ more than independent samples would say).
  if (judged_samples_.size() < 2) return std::numeric_limits<double>::infinity();
  double sum = 0;
  double squares = 0;
  for (const Judged& j : judged_samples_) {
    sum += j.shift;
    squares += j.shift * j.shift;
  }
  const auto n = static_cast<double>(judged_samples_.size());
  const double var = std::max(0.0, (squares - sum * sum / n) / (n - 1));
  return kPriorInflation * std::sqrt(2 * (std::numbers::pi / 2) * var / n);
}

void VegasLimit::decay_ambient() {
  if (ambient_ <= 0) return;
  const double halves = to_ms(now_ - ambient_at_) / to_ms(kAmbientHalfLife);
  ambient_ *= std::exp2(-halves);
  ambient_at_ = now_;
}

double VegasLimit::median_shift() { return median_of(judged_samples_, &Judged::shift); }

std::string VegasLimit::describe_last_decision() const {
  const Trace& t = trace_;
  std::array<char, 512> line{};
  int n = std::snprintf(
      line.data(), line.size(),
      "limit %u -> %u (%s); samples %u, judged %u, above %u, ties %u, far %u, drops %u; "
      "median shift %+.3f (%+.2f ms), gradient %.2f, tolerated %+.3f; peak concurrency %u, "
      "knee %u, demand %s; evidence %s, confirmed %s%s",
      t.limit_before, limit(), t.outcome, t.samples, t.judged, t.above, t.ties, t.far, t.drops,
      t.shift, t.delay_ms, t.gradient, t.ambient, t.peak_concurrency, t.knee,
      t.pressure ? "refused" : "met", t.evidence ? "yes" : "no", t.confirmed ? "yes" : "no",
      t.overwhelming ? ", overwhelming" : "");
  if (t.checked && n > 0 && static_cast<std::size_t>(n) < line.size()) {
    n += std::snprintf(line.data() + n, line.size() - static_cast<std::size_t>(n),
                       "; the last cut's check: latency fell %+.3f of %+.3f predicted", t.fall,
                       t.predicted);
  }
  if (t.stall_evaluated && n > 0 && static_cast<std::size_t>(n) < line.size()) {
    std::snprintf(line.data() + n, line.size() - static_cast<std::size_t>(n),
                  "; stall check: %u calls near the cut's concurrency, median shift %+.3f",
                  t.stall_samples, t.stall_shift);
  }
  return line.data();
}

bool VegasLimit::retune(const Limiter& fresh) {
  const auto* f = dynamic_cast<const VegasLimit*>(&fresh);
  if (f == nullptr) return false;
  options_ = f->options_;
  baselines_.set_options(baseline_options(options_));
  set_limit(limit_, "reload: clamped into min_limit " + std::to_string(options_.min_limit) +
                        ", max_limit " + std::to_string(options_.max_limit));
  return true;
}

void VegasLimit::set_limit(double value, const std::string& reason) {
  const uint32_t before = limit();
  limit_ = clamp_limit(value, options_);
  if (limit() != before) last_reason_ = reason;
}

}  // namespace sluice
