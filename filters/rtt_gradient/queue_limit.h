// The `rtt_gradient` algorithm: a controller on the queue estimator (QueueEstimator, Little's law
// over cohorts of admissions judged whole; AdmissionController runs it and hands every reading
// over). The estimator says how many calls wait in front of the upstream's workers (Q) and how
// many it serves (S); the controller maps that to a limit L, rule by rule:
//   demand bound  L <= max(2 P, P + kDemandSlack), P the peak of calls in flight over the last
//                 kPeakWindow: an idle limit follows the load, so an onset admits about twice what
//                 was in flight, not whatever an idle limit grew to. Ten seconds, not one: a
//                 Poisson burst beyond twice the last second's peak waits a service time for the
//                 limit to grow, longer than the queue budget for 100 ms calls (240 idle minutes
//                 shed 13 calls with one second, 8 with ten); where a queue can form, the
//                 capacity bound is the tighter one.
//   capacity bound when the estimator reads how many workers serve the calls (C, from latency
//                 growing with admission concurrency: QueueEstimator::workers), L <= ceil((1 +
//                 kHeadroom) C) + 1: an onset meets the calls its workers can take and one more,
//                 not twice the peak of a queue that was already forming.
//   queue cut     a cohort shows a queue a cut removes: a call or more waiting beyond chance (z >=
//                 3), at least kQueueShare of the calls served, and the limit held calls back
//                 (a tenth of the cohort waited for permits) or latency grew with concurrency
//                 (slope_z >= 2: a FIFO queue), in two cohorts in a row, or in one overwhelming
//                 one (z >= kOverwhelmingZ). L = floor((1 + kHeadroom) S + 0.5): the calls the
//                 upstream serves, plus headroom. At most halved unless overwhelming. Contention
//                 that slows every call alike reads as a small share of S, not as a queue.
//   overdue hold  the two oldest calls in flight waited more than kOverdueFactor x the oldest's
//                 method's no-load p99 while at least max(2, S + 1) calls are in flight: L =
//                 in-flight, no admission before an answer. An onset is heard from the calls it
//                 holds, before any answer says it.
//   cut check     the first cohort admitted after a cut must show relief: a mean RTT below
//                 kRelief of the cut cohort's, or no fall in throughput. A cut that cost
//                 throughput and relieved nothing was not of a queue but of a slower service
//                 read against an old baseline: it is undone, and the baselines are learnt
//                 again from the calls admitted since (QueueEstimator::relearn_from).
//   slow start    until the first cut, and kCutMemory after the last one: a cohort without a
//                 queue whose calls waited for permits doubles L (demand grows as fast as it
//                 likes; the demand bound keeps it from running away).
//   admit on refusal  while slow start holds and nothing says queue (no evidence in the last
//                 cohort, no slow answer, no probe, not at the capacity C reads), a refused call
//                 raises L to admit every call waiting, at once: a burst at an idle service does
//                 not wait a service time for an answer to grow the limit.
//   probe up      within kCutMemory of a cut, and kMinProbeWait (doubling with cuts that follow
//                 each other) after it: such a cohort raises L by max(1, L / 10). If the first
//                 cohort admitted at the new limit queues more than half the calls added beyond
//                 what the last one queued, the probe is undone and the wait doubles: calls added
//                 beyond the workers only queue. No probe while the estimator reads the workers
//                 (C) and L >= floor((1 + kHeadroom) C + 0.5): past that, calls only queue; the
//                 reading fades (QueueEstimator::kPoolDecay) unless queueing renews it.
//   baseline probe calls waited, and the estimator has no baseline to judge them by: a method
//                 rebuilt after its service changed speed, or a start whose latency grows with
//                 concurrency (no baseline yet; the first calls may have queued): L = min_limit
//                 until calls admitted alone gave the baseline (at most kMaxProbe after the calls
//                 in flight at its start drained), then back.
// Every result is clamped to [min_limit, max_limit]. Cuts act on cohorts admitted after the last
// change of the limit only (one decision per flight, as TCP's per window).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiters/limiter.h"
#include "filters/limiters/queue_estimator.h"

namespace sluice {

class QueueLimit final : public Limiter {
 public:
  struct Options {
    uint32_t initial_limit = 20;
    uint32_t min_limit = 1;
    uint32_t max_limit = 1000;
    Duration noload_window = std::chrono::seconds(30);  // baselines look back this far

    bool operator==(const Options&) const = default;
  };
  static constexpr uint32_t kDemandSlack = 4;
  static constexpr double kHeadroom = 0.1;
  // A queue worth a cut holds at least this share of the calls being served (it adds a quarter
  // to their time): less is what CPU contention that slows every call alike looks like, and a cut
  // would trade throughput for it (a 2 ms service at 100k/s on a loaded 2-core host reads 15%).
  static constexpr double kQueueShare = 0.25;
  static constexpr double kCutZ = 3;
  static constexpr double kSlopeZ = 2;
  static constexpr double kWaitedShare = 0.1;
  static constexpr double kOverwhelmingZ = 6;
  static constexpr double kOverdueFactor = 2;
  static constexpr Duration kPeakWindow = std::chrono::seconds(10);
  static constexpr Duration kCutMemory = std::chrono::seconds(10);
  static constexpr double kProbeStep = 0.1;
  // Probing past a cut waits kMinProbeWait after it; a cut within kRepeatedCut of the last one
  // (the probe found the same wall) doubles the wait, up to kMaxProbeWait.
  static constexpr Duration kMinProbeWait = std::chrono::milliseconds(500);
  static constexpr Duration kMaxProbeWait = std::chrono::seconds(8);
  static constexpr Duration kRepeatedCut = std::chrono::seconds(2);
  static constexpr Duration kMaxProbe = std::chrono::milliseconds(500);
  static constexpr double kRelief = 0.9;
  // After a probe, another waits this long (a service whose calls never run alone).
  static constexpr Duration kProbeGap = std::chrono::seconds(5);

  explicit QueueLimit(const Options& options);

  // Limiter
  void on_sample(TimePoint now, const LatencySample& sample) override;
  void on_drop(TimePoint /*now*/, Duration /*in_flight_for*/, uint64_t /*method*/) override {}
  void on_demand_pressure(TimePoint /*now*/) override {}
  void on_load(const LoadReading& reading) override;
  std::optional<Duration> overdue_after() const override { return overdue_after_; }
  std::optional<Duration> noload_window() const override { return options_.noload_window; }
  uint32_t limit() const override;
  LimiterState state() const override;
  const std::string& last_reason() const override { return last_reason_; }
  std::vector<LimiterGauge> gauges() const override;
  bool retune(const Limiter& fresh) override;
  bool last_change_bound() const override { return last_change_bound_; }
  bool grows_on_refusal() const override;
  void on_refused(TimePoint now, uint32_t in_flight, uint32_t queued) override;
  uint64_t decisions_taken() const override { return decisions_; }
  std::string describe_last_decision() const override { return last_decision_; }

  const Options& options() const { return options_; }

 private:
  void decide(TimePoint now, const QueueReading& c);
  void hold_if_overdue(const LoadReading& r);
  void note_peak(TimePoint now, uint32_t in_flight);
  uint32_t peak(TimePoint now) const;
  // `decisive`: a cut, a hold or growth, after which only cohorts admitted later decide (the
  // demand bound is not: it lowers a limit the calls in flight do not reach).
  void set_limit(TimePoint now, double value, std::string reason, bool decisive = true);

  Options options_;
  double limit_;
  std::string last_reason_;
  std::string last_decision_;
  uint64_t decisions_ = 0;
  // The peak in flight per tenth of kPeakWindow (a ring keyed by the slot's index in time).
  struct PeakSlot {
    int64_t id = -1;
    uint32_t peak = 0;
  };
  std::array<PeakSlot, 10> peaks_{};
  TimePoint changed_at_{};                 // the limit's last change: older cohorts do not decide
  std::optional<TimePoint> last_cut_;      // slow start ends for kCutMemory after it
  uint32_t evidence_run_ = 0;              // cohorts in a row with a queue a cut removes
  std::optional<QueueReading> last_;       // the last cohort judged
  std::optional<Duration> overdue_after_;  // the smallest overdue age of any method
  std::optional<double> rtt_noload_ms_;
  Duration probe_wait_ = kMinProbeWait;
  bool last_change_bound_ = false;
  bool slow_start() const;
  // The limit is where the workers the estimator reads want it: no probe past it.
  bool at_capacity() const;
  TimePoint now_{};                          // of the last reading
  QueueEstimator* estimator_ = nullptr;      // as of the last reading (AdmissionController's)
  std::optional<TimePoint> slow_answer_at_;  // pauses per-answer slow start
  std::optional<double> fastest_ms_;         // before any baseline: the fastest answer
  std::optional<TimePoint> probe_since_;     // a baseline probe holds the limit low
  std::optional<TimePoint> probe_drained_;   // since when no more than it are in flight
  std::optional<TimePoint> last_probe_end_;
  double pre_probe_ = 0;
  // A probe up waiting for its verdict: the limit and calls served before it.
  struct ProbeUp {
    double from = 0;
    double to = 0;
    double queue = 0;
  };
  std::optional<ProbeUp> probe_up_;
  // A cut waiting for its check: the limit before it, and the cut cohort's RTT and throughput.
  struct CutCheck {
    double limit_before = 0;
    double rtt_ms = 0;
    double throughput_per_s = 0;
  };
  std::optional<CutCheck> cut_check_;
  void end_probe(TimePoint now, const char* why);
};

}  // namespace sluice
