// What an adaptive limiter knows of the queue in front of the upstream's workers: Little's law
// applied to cohorts of admissions, apart from any controller (issue 32's estimator).
//
// A cohort is the calls admitted within one span of time [from, to). It is judged once every one
// of them has answered (QueueEstimator::on_load is told the admission time of the oldest call
// still unanswered), never before: a cohort judged on the answers that came first holds its
// fastest calls only, and a bimodal service read as a queue of 24-40 calls at an upstream with
// no queue at all. For a judged cohort of n calls over span T, each call i of method m(i) with
// RTT r_i and its method's no-load mean service time b_m (NoloadBaselines):
//   in_flight  N = sum r_i / T              (time-averaged calls in flight, Little's law)
//   throughput X = n / T
//   service    S = sum b_m(i) / T           (calls being served: the busy workers)
//   queue      Q = sum (r_i - b_m(i)) / T = N - S   (calls waiting; Vegas' N (1 - R_base / R))
//   delay        = mean (r_i - b_m(i))      (the queueing delay a call met, ms)
//   z            = delay / its standard error (the calls' own spread and the baselines' error)
//   slope        = least squares of r_i - b_m(i) on admitted_at: ~ b / workers (ms per call) for a
//                  FIFO queue, ~0 when every call slowed alike (CPU contention, a slower
//                  dependency, a shift in the mix of one method's arguments)
// Q counts calls, so a machine-wide 5% slowdown reads as 5% of S, not as "400 samples slower":
// samples of one cohort are not independent evidence, cohorts are (queue_run() counts them).
//
// Clean answers (those that train the baselines): a call admitted at or below clean_level (1
// unless the controller knows more: nothing of sluice's was ahead of it), and every call of a
// quiet cohort: one whose delay is not beyond chance (z < kCleanZ), with no latency growing with
// concurrency (slope_z < kCleanZ) -- once the method's baseline holds kMaxClean / 4 answers, only
// its calls admitted with no more in flight than the cohort's S, which no queue can have held;
// before a method's baseline is ready, every call of a cohort whose raw latency does not grow with
// the concurrency its calls were admitted at, else its calls at the cohort's lowest concurrency.
// Selection by admission concurrency, never by RTT: which calls are clean does not depend on how
// long they took. A controller that must know the service without any queue (a start into an
// overload) holds its limit low and calls relearn_from().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "filters/limiters/latency_sample.h"
#include "filters/limiters/noload_baselines.h"
#include "src/core/time.h"

namespace sluice {

// One judged cohort.
struct QueueReading {
  TimePoint from{};  // admissions in [from, to)
  TimePoint to{};
  uint32_t calls = 0;   // answered (drops included, at the time they were in flight)
  uint32_t judged = 0;  // of them, with a ready baseline (the rest are not in queue/service)
  double in_flight = 0;
  double throughput_per_s = 0;
  double service = 0;  // S, scaled to every call of the cohort
  double queue = 0;    // Q, scaled to every call of the cohort
  double delay_ms = 0;
  double z = 0;
  double delay_se_ms = 0;  // the delay's standard error
  double slope_ms = 0;     // per call of admission concurrency; 0 without spread
  double slope_z = 0;
  double waited_share = 0;  // calls that waited for their permit
  // Calls whose method has clean answers but no ready baseline (rebuilt after a change).
  uint32_t rebuilding = 0;
  // Least squares of the raw RTT (no baseline) on admitted_at, in standard errors: latency that
  // grows with concurrency before any baseline says so (a start into an overload).
  double raw_slope_z = 0;
  double raw_slope_ms = 0;  // per call of admission concurrency
  uint32_t min_admitted_at = 0;
  uint32_t max_admitted_at = 0;
  // The cohort shows a queue: at least kQueueCalls calls waiting, beyond chance (z >= kQueueZ).
  bool queued() const;
};

class QueueEstimator {
 public:
  struct Options {
    NoloadBaselines::Options baselines;
    // A cohort spans at least two mean RTTs and at least the time kMinCalls arrivals take.
    uint32_t min_calls = 8;
    bool operator==(const Options&) const = default;
  };
  static constexpr double kQueueCalls = 1.0;
  static constexpr double kQueueZ = 3.0;
  // A quiet cohort (see above) trains the baselines with every call.
  static constexpr double kCleanZ = 2.0;
  // Clean answers a cohort gives the baselines at most, spread evenly over its admissions: the
  // order answers come in follows their RTT, so "the last ones" would be the slowest.
  static constexpr std::size_t kCleanPerCohort = 16;
  static constexpr double kResolutionMs = 1e-3;  // standard errors are at least this
  static constexpr double kPoolDecay = 0.95;
  static constexpr double kWorkersZ = 3;
  static constexpr Duration kMinSpan = std::chrono::milliseconds(1);
  static constexpr Duration kMaxSpan = std::chrono::seconds(2);
  static constexpr Duration kInitialSpan = std::chrono::milliseconds(50);
  static constexpr double kRateSmoothing = 0.2;     // EWMA weight of a cohort's rate
  static constexpr double kAnswerSmoothing = 0.05;  // EWMA weight of an answer's RTT
  // A cohort is judged at the latest this long after its span ended, with the calls that
  // answered by then (a call in flight for longer is left out, counted late when it answers):
  // one call stuck for minutes does not hold every reading back, nor the memory of its cohorts.
  static constexpr Duration kCensorAfter = std::chrono::seconds(10);

  explicit QueueEstimator(const Options& options);
  void set_options(const Options& options);

  // An answered call (admission time: s.admitted, or now - rtt when unset).
  void add(TimePoint now, const LatencySample& s);
  // A call that ended unanswered for a reason that signals overload after `in_flight_for`: a
  // censored RTT, counted as if it had answered then (a lower bound on its queueing).
  void add_drop(TimePoint now, Duration in_flight_for, uint64_t method, uint32_t admitted_at);
  // Judges every cohort all of whose calls have answered: those that ended before
  // `oldest_unanswered` (the admission time of the oldest call still in flight; nullopt: none).
  // Returns how many it judged (their readings: judged_now()).
  std::size_t on_load(TimePoint now, std::optional<TimePoint> oldest_unanswered);
  // A call admitted at or below this concurrency met no queue of sluice's (default 1).
  void set_clean_level(uint32_t level) { clean_level_ = level == 0 ? 1 : level; }
  // Forgets the baselines and learns them again from calls admitted from `since` on (a probe:
  // the controller holds the limit low so that calls run alone; those admitted before it ran
  // into the queue it probes past).
  void relearn_from(TimePoint since) {
    baselines_.clear();
    relearn_from_ = since;
  }

  const std::vector<QueueReading>& judged_now() const { return judged_now_; }
  const std::optional<QueueReading>& last() const { return last_; }
  // Consecutive judged cohorts that showed a queue (QueueReading::queued), up to the last one.
  uint32_t queue_run() const { return queue_run_; }
  // Calls answered too late for their cohort (judged already): 0 unless answers outran the
  // unanswered bookkeeping.
  uint64_t late() const { return late_; }
  const NoloadBaselines& baselines() const { return baselines_; }
  NoloadBaselines& baselines() { return baselines_; }
  // How many workers serve the calls, from how latency grows with the concurrency calls are
  // admitted at: at a FIFO upstream of C workers each call ahead adds b / C to a call's time, so
  // C = b / slope, the slope pooled over recent cohorts (kPoolDecay) and beyond chance
  // (kWorkersZ standard errors). A lower bound's opposite: calls start waiting only past C, so a
  // straight line through the hinge reads a smaller slope, a larger C. Nullopt without such a
  // slope (no queue seen, every call slowed alike, or every call admitted at the same level).
  std::optional<double> workers() const;
  // The span the next cohort gets.
  Duration span() const { return span_; }

 private:
  struct Call {
    TimePoint admitted;
    uint64_t method;
    double rtt_ms;
    uint32_t admitted_at;
    bool waited;
  };
  struct Cohort {
    TimePoint from;
    TimePoint to;
    std::vector<Call> calls;
  };
  void place(TimePoint admitted, const Call& call);
  QueueReading judge(TimePoint now, const Cohort& c);
  void update_span(const QueueReading& r);
  void set_span();

  Options options_;
  NoloadBaselines baselines_;
  std::vector<Cohort> pending_;  // oldest first, contiguous
  TimePoint judged_until_{};     // calls admitted before it come too late
  TimePoint relearn_from_{};     // cohorts admitted before it train no baseline
  std::vector<QueueReading> judged_now_;
  std::optional<QueueReading> last_;
  uint32_t queue_run_ = 0;
  uint32_t clean_level_ = 1;

  uint64_t late_ = 0;
  Duration span_ = kInitialSpan;
  std::optional<double> rate_per_s_;  // EWMA over judged cohorts
  std::optional<double> rtt_ms_;
  // The pooled regression of delay on admission concurrency (see workers()).
  double pool_sad_ = 0;
  double pool_saa_ = 0;
  double pool_var_saa_ = 0;
  double pool_b_ = 0;  // sum of the cohorts' mean baselines
  double pool_w_ = 0;
};

}  // namespace sluice
