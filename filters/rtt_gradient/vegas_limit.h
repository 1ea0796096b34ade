// The `rtt_gradient` algorithm: TCP-Vegas-style, comparing the latency requests meet now with the
// latency their methods have without a queue (LatencyBaselines: one no-load baseline per method,
// learned without probing).
//
// A decision closes once update_interval has passed AND min_samples samples arrived since the
// last one (at a low rate the interval stretches: a decision never rests on one or two samples).
// Of its samples, those whose method has a baseline are judged: above or below the method's
// no-load median, and by how much (the shift, log(rtt / median) less the method's no-load offset).
//   evidence  = queueing_evidence(above, judged): more above than chance allows (~1% false)
//   sustained = EWMA(share above) >= kSustainedShare
//   gradient  = clamp(exp(-mean shift of this decision), 0.5, 1)   (RTT_noload / RTT)
//   drops in flight                     -> limit = base * min(gradient, 0.9)
//   evidence and sustained,
//     gradient < tolerance              -> limit = base * gradient            (at once)
//   overwhelming: kFarSamples judged samples in a row far above their methods' no-load p90 and
//     1.5x their median (a service without a queue gives that < 0.1^4 of the time) -> limit = base
//     * gradient at once, gradient floored at 0.25, not 0.5; the decision is the run (samples
//     before it in the decision are dropped), so a queue that starts mid-decision is cut within
//     four samples
//   evidence within tolerance, the decision of kCheckMinSamples or more, demand refused
//                                       -> limit += smoothing * (limit * gradient + allowance -
//                                          limit) if that grows it (a queue below the allowance)
//   evidence, the decision's median sample less than delay_tolerance above its method's no-load
//   median (checked after the tolerance)
//                                       -> no cut; with kCheckMinSamples or more and demand
//                                          refused, grown as if there were no queue (gradient 1)
//   evidence or sustained (not both)    -> hold
// A decision "confirms" the next one's cut only if the queue went on between them: when a far
// sample resets a decision after kCheckMinSamples or more quiet ones, the decision before does
// not confirm it (a busy host's CPU hiccup after a small queue within tolerance).
//   neither, and the limit is in use    -> limit += smoothing * (limit * g + allowance - limit)
//     (slow start: until the first cut, one of min_samples or more with demand refused doubles
//     the limit instead; recovery: after a cut, the same up to half the concurrency it cut from)
// where base = min(limit, the highest concurrency a sample of the decision ran at), g =
// clamp(exp(-EWMA shift), 0.5, 1), allowance = queue_allowance (default sqrt(limit)), "in use" =
// a request waited or was shed, or the peak concurrency reached limit - allowance; every result
// is clamped to [min_limit, max_limit]. The limit is lowered only on evidence of queueing: a
// variable but idle service, or a shift in the method mix, moves no baseline and no limit.
// Decreases start from the concurrency that produced the latency and are immediate, because
// queueing costs every admitted request now; increases are smoothed. The gradient floor of 0.5
// bounds a decrease to halving.
//
// Checked cuts. A cut on queueing evidence (not an overwhelming one, not drops) whose decision
// judged kCheckMinSamples samples (at lower rates a median is too noisy to hold the next cut on,
// and a low rate cannot ratchet the limit down in a fraction of a second) is an experiment,
// checked as TCP checks a retransmission for being spurious: if the queue was in front of the
// upstream's workers, the latency falls with the concurrency (RTT ~ concurrency above capacity),
// by log(concurrency before / after) in shift. Until a decision whose samples ran at the lower
// concurrency shows at least kRelief of that fall, no further cut follows (unless the evidence
// becomes overwhelming or calls are dropped; the check ends when the evidence is gone): a
// slowdown that cutting does not relieve (every call slowed alike whatever sluice's
// concurrency: neighbours taking the CPU, a slower dependency) cannot ratchet the limit down
// cut after cut. When the shortfall is also beyond chance (kCheckZ times the standard deviation
// of the difference between consecutive decisions' shifts with no cut between them, learnt as
// it runs: samples of one queue are alike, so consecutive medians differ more than independent
// samples would say; until kMinSteps pairs taught it, kPriorInflation times what sampling alone
// gives two medians of the checking decision's size and spread, so a cut right after start is
// checked too) and the checking decision judged kCheckMinSamples too, the cut is undone and
// that shift is tolerated as ambient, subtracted from the shifts judged against the tolerance. The
// ambient shift halves every kAmbientHalfLife (it does not follow a calm decision down at once:
// contention comes in bursts), so a queue that grows later is still cut, at once if it adds more
// than the ambient shift, and more than 2x is never tolerated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiters/latency_baselines.h"
#include "filters/limiters/limiter.h"

namespace sluice {

class VegasLimit final : public Limiter {
 public:
  struct Options {
    uint32_t initial_limit = 20;
    uint32_t min_limit = 1;
    uint32_t max_limit = 1000;
    double tolerance = 0.85;
    // A queue that adds less than this to the median call is not cut (see decide()).
    Duration delay_tolerance = std::chrono::milliseconds(1);
    double smoothing = 0.2;
    std::optional<double> queue_allowance;  // absent: sqrt(limit)
    Duration update_interval = std::chrono::milliseconds(50);
    Duration noload_window = std::chrono::seconds(30);
    uint32_t min_samples = 10;  // per decision; the interval stretches until there are as many

    bool operator==(const Options&) const = default;
  };
  static constexpr double kMinGradient = 0.5;
  static constexpr double kMinGradientOverwhelming = 0.25;
  static constexpr double kDropBackoff = 0.9;
  // A queue of fewer calls than this where it was measured is not cut (see decide()).
  static constexpr double kMinQueueCalls = 0.5;
  static constexpr double kSustainedShare = 0.6;
  // Slow start (TCP's, before its first loss): until the first cut (queueing beyond tolerance, or
  // drops), a well-sampled decision without a queue and with demand refused doubles the limit. A
  // queue within tolerance holds it (no doubling into a queue) but does not end it: a start on a
  // busy host shows one in its first decision, before the upstream's capacity showed anything.
  static constexpr double kSlowStartFactor = 2.0;
  // Recovery (TCP's slow start up to ssthresh after a loss): a cut remembers this share of the
  // concurrency it cut from; until the limit is back there, a decision that would grow it
  // doubles it instead (capped there), on the same terms as slow start, and the "just after a
  // queue" hold does not apply (the decision's calls ran under the cut limit without one). Cuts
  // before the recovery doubled anything keep the highest threshold (a queue still draining from a
  // hiccup's cut, cut again); a cut after it sets a new one (the doubling found a queue below the
  // old threshold). Never past the highest concurrency the decisions before the cut ran at without
  // a queue to cut: in a sustained overload the limit sits there, and the recovery goes no further
  // than the cut.
  static constexpr double kRecoveryShare = 0.5;
  static constexpr double kShareSmoothing = 0.3;  // EWMA weight of a decision's share and shift
  static constexpr uint32_t kFarSamples = 4;  // overwhelming evidence: this many in a row, all far
  static constexpr double kFarShift = 0.405;  // log 1.5: "far" is also at least 1.5x the median
  static constexpr double kRelief = 0.5;      // of the predicted fall a checked cut must show
  static constexpr double kCheckZ = 2.3;      // chance differences (step_sd) it must fall short by
  static constexpr uint32_t kMinSteps = 8;    // decision pairs that teach what chance gives
  static constexpr double kPriorInflation = 3;  // on sampling's own error, before kMinSteps
  static constexpr double kStepSmoothing = 0.1;
  static constexpr uint32_t kCheckMinSamples = 50;  // judged, in the cut's and the check's decision
  static constexpr double kMinPredictedFall = 0.05;  // smaller: the check is inconclusive
  static constexpr double kMaxAmbient = 0.693;       // log 2: never tolerate more than 2x
  static constexpr Duration kAmbientHalfLife = std::chrono::seconds(2);
  static constexpr int kCheckDecisions = 4;  // a cut still unchecked after this many stands
  // A cut on calls this much slower (log 1.5) is also checked for a stall of every call: see
  // StallCheck.
  static constexpr double kStallCheckShift = kFarShift;
  static constexpr double kStallConcurrency = 0.85;  // of the cut's: calls there are compared

  // A judged sample of the open decision: its shift and its time beyond its method's no-load
  // median (ms).
  struct Judged {
    double shift = 0;
    double delay_ms = 0;
  };

  explicit VegasLimit(const Options& options);

  // Limiter
  void on_sample(TimePoint now, const LatencySample& sample) override;
  void on_drop(TimePoint now, Duration in_flight_for, uint64_t method) override;
  void on_demand_pressure(TimePoint now) override;
  uint32_t limit() const override;
  LimiterState state() const override;
  const std::string& last_reason() const override { return last_reason_; }
  std::vector<LimiterGauge> gauges() const override;
  std::vector<MethodBaseline> baselines() const override { return baselines_.snapshot(); }
  void name_method(uint64_t method, std::string_view name) override {
    baselines_.name_method(method, name);
  }
  bool retune(const Limiter& fresh) override;
  uint64_t decisions_taken() const override { return trace_.count; }
  std::string describe_last_decision() const override;

  const LatencyBaselines& latency_baselines() const { return baselines_; }

 private:
  void roll(TimePoint now);
  void close_interval(TimePoint now);
  void decide();
  // limit += smoothing * (limit * gradient + allowance - limit), if that grows it and the limit
  // is in use (with a queue seen: only if demand was refused).
  enum class Queue {
    kNone,             // no queueing evidence
    kWithinTolerance,  // a queue, its gradient within `tolerance`
    kWithinDelay,      // a queue that adds less than `delay_tolerance`: grown into as if none
  };
  void grow(double gradient, Queue queue);
  // After any cut from limit_before (of which `base` was in use): where recovery doubles the limit
  // back to (see kRecoveryShare).
  void after_cut(double limit_before, double base);
  void note_clear();  // a well-sampled decision without a queue to cut: see last_clear_concurrency_
  double median_shift();  // of this decision's judged samples (reorders them)
  bool overwhelming() const;
  bool quiet() const;
  // The pending cut's check (see above).
  enum class Check {
    kNone,     // no cut waits for its check (any more)
    kPending,  // one does, not relieved (yet): no further cut before it is
    kUndone,   // the cut was undone: the decision is spent
  };
  Check check_cut(double shift, bool evidence);
  // What the last decision saw and did, for describe_last_decision() (a debug log line per
  // decision): kept as numbers, formatted only when asked.
  struct Trace {
    uint64_t count = 0;
    const char* outcome = "no queueing";  // what it did, and why (a literal)
    uint32_t limit_before = 0;
    uint32_t samples = 0, judged = 0, above = 0, ties = 0, far = 0, drops = 0;
    uint32_t peak_concurrency = 0;
    uint32_t knee = 0;  // the baselines' knee (0: none yet)
    double shift = 0, gradient = 1, ambient = 0;
    double delay_ms = 0;  // the median judged sample's time beyond its method's no-load median
    bool pressure = false, evidence = false, confirmed = false, overwhelming = false;
    // The pending cut's check in this decision: its latency fall, observed and predicted.
    bool checked = false;
    double fall = 0, predicted = 0;
    // The stall check: calls run at nearly the cut's concurrency since, and how much faster
    // than a queue would leave them (median, log RTT ratio).
    bool stall_evaluated = false;
    uint32_t stall_samples = 0;
    double stall_shift = 0;
  };
  // Undoes the last cut if calls ran at nearly its concurrency since, as fast as without a
  // queue (see StallCheck). True if it did.
  bool check_stall();
  // Learns how much consecutive decisions' median shifts differ without a cut between them.
  void track_steps(double shift);
  // The standard deviation of the difference between consecutive decisions' median shifts that
  // chance gives: learnt after kMinSteps, before then estimated from this decision's samples.
  double chance_sd() const;
  void decay_ambient();
  void set_limit(double value, const std::string& reason);

  Options options_;  // replaced only by retune()
  double limit_;
  LatencyBaselines baselines_;
  std::optional<double> share_ewma_;  // share of judged samples above their median
  std::optional<double> shift_ewma_;
  std::optional<double> gradient_;  // as last used
  std::string last_reason_;

  // The open decision.
  bool interval_open_ = false;
  TimePoint interval_start_{};
  uint32_t samples_ = 0;
  uint32_t judged_ = 0;
  uint32_t above_ = 0;
  uint32_t ties_ = 0;     // judged samples exactly at their median (no side in the sign test)
  uint32_t far_ = 0;      // judged samples far above their method's no-load p90
  uint32_t far_run_ = 0;  // the latest judged samples that were all far above, in a row
  std::vector<Judged> judged_samples_;
  bool last_had_evidence_ = false;
  bool slow_start_ = true;             // no cut yet
  std::optional<double> recovery_to_;  // after a cut: doubles up to this (see kRecoveryShare)
  // The peak concurrency of the last decision of min_samples or more that showed no queue beyond
  // what is not cut (none, within tolerance, within delay_tolerance or under kMinQueueCalls):
  // recovery never goes past it.
  double last_clear_concurrency_ = 0;
  bool recovery_doubled_ = false;  // recovery doubled the limit since the last cut
  TimePoint now_{};                // of the decision being taken
  TimePoint last_decrease_{};      // samples admitted before it are not evidence any more
  uint32_t drops_ = 0;
  uint32_t peak_concurrency_ = 0;
  // Demand seen since the last decision; kept across intervals that had nothing to decide on.
  bool pressure_ = false;

  // A cut on queueing evidence waiting for its check.
  struct CutCheck {
    double limit_before = 0;
    double concurrency = 0;  // the base it was cut from
    double shift = 0;        // the decision's median shift
    double queue_shift = 0;  // the part of it beyond the ambient shift
    uint32_t judged = 0;     // samples the cut's decision judged
    int decisions_left = kCheckDecisions;
  };
  std::optional<CutCheck> check_;
  // A cut on calls kStallCheckShift or more slower, of any kind but drops (overwhelming ones and
  // those of a few samples included), checked for a stall of every call: a 2-core host's CPU
  // hiccup, or a startup, slows every call in flight for a few ms, and calls pile up to the
  // limit because none completes. That looks like a queue at the limit (a run of samples far
  // above their baselines, at the peak concurrency) and is cut at once, unchecked: the cut
  // decision saw the few calls of the hiccup only. A queue in front of the workers leaves calls
  // that still run at nearly that concurrency slow: at kStallConcurrency of it, RTT ~
  // concurrency leaves queue_shift - log(1 / 0.85), beyond the tolerance for any queue_shift of
  // kStallCheckShift or more. A stall that is over leaves them as fast as ever. So when
  // min_samples calls answered after the cut, within kCheckDecisions decisions, ran at `high`
  // (kStallConcurrency x the cut's concurrency) or more and their median shift is within the
  // tolerance, the cut is undone. Calls admitted before the cut count too: after a hiccup those
  // in flight at the cut, admitted once it was over, are most of the calls that ran at that
  // concurrency (the cut keeps it from coming back; on the rig, fewer than 10 admitted after
  // it); caught in the hiccup, they are slow and keep the cut. A stall that goes on gives no fast
  // calls and the cut stands; once it is over, the limit comes back at once.
  struct StallCheck {
    double limit_before = 0;
    double concurrency = 0;  // the base it was cut from
    double queue_shift = 0;
    double high = 0;  // calls at this concurrency or more are compared
    int decisions_left = kCheckDecisions;
  };
  std::optional<StallCheck> stall_check_;
  std::vector<double> stall_shifts_;
  Trace trace_;
  double ambient_ = 0;  // a shift a cut did not relieve (log RTT ratio), tolerated
  TimePoint ambient_at_{};
  // The median shift of the last decision of kCheckMinSamples, unless a cut followed it.
  std::optional<double> last_shift_;
  double step_var_ = 0;  // EWMA of the squared difference of consecutive decisions' shifts
  uint32_t steps_ = 0;
};

}  // namespace sluice
