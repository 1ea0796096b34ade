// A limit algorithm: a pure, single-threaded state machine fed with samples and an explicit `now`.
// It knows nothing of HTTP, permits or threads; the filter serialises calls and pushes limit()
// into the PermitGate after each one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "filters/limiters/latency_baselines.h"
#include "src/core/time.h"

namespace sluice {

// What an algorithm exposes for stats and /limits. Fields an algorithm does not track stay empty.
struct LimiterState {
  uint32_t limit = 0;
  std::optional<double> rtt_noload_ms;    // baseline RTT (Vegas)
  std::optional<double> rtt_smoothed_ms;  // the RTT signal compared with the baseline (Vegas)
  std::optional<double> gradient;         // rtt_noload / rtt_smoothed as used, clamped (Vegas)
  std::optional<double> p99_ms;           // p99 of the last evaluation (AIMD)
  // Smoothed share of judged samples slower than their method's no-load median (0.5 without a
  // queue; see LatencyBaselines).
  std::optional<double> queueing;
  // 1 while the p99 exceeds the SLO with no queue to remove (AIMD: the limit is held, not cut).
  std::optional<double> slo_unreachable;
  // The slowdown tolerated as not a queue (Vegas: a cut that did not lower the latency was
  // undone), as a fraction: 0.2 = calls 20% slower than their baselines count as no queue.
  std::optional<double> tolerated_slowdown;
};

// A value an algorithm publishes as a gauge of its filter (filter.<listener>.<filter>.<leaf>),
// read from its LimiterState after every update. Reads 0 until the algorithm has measured it.
struct LimiterGauge {
  const char* leaf;
  const char* help;
  std::optional<double> LimiterState::*field;
};

class QueueEstimator;

// What an algorithm hears at every flush of samples (and when the oldest call in flight became
// overdue): the load as it is now, and the queue estimator with the cohorts it judged just now.
struct LoadReading {
  TimePoint now{};
  uint32_t in_flight = 0;  // permits held
  // The admission time and method of the oldest call still unanswered; nullopt: none.
  std::optional<TimePoint> oldest_unanswered;
  uint64_t oldest_method = 0;
  std::optional<TimePoint> second_unanswered;  // the next oldest (of any worker)
  QueueEstimator* estimator = nullptr;         // never null when called by AdmissionController
};

class Limiter {
 public:
  virtual ~Limiter() = default;

  // An admitted request's answer began (its first response message, or a trailers-only OK):
  // a latency sample of its method at the concurrency it ran at. Error answers and local replies
  // are never samples (LimiterFilter counts them apart).
  virtual void on_sample(TimePoint now, const LatencySample& sample) = 0;
  // An admitted request ended without an RTT sample for a reason that signals overload (its
  // deadline passed in flight, the upstream reset it) after `in_flight_for` since admission: a
  // lower bound on the RTT it would have had. A drop sooner than the upstream could ever answer
  // (a client deadline shorter than the service time) says nothing about load; algorithms
  // ignore those, or one impatient client would drive the limit down for everybody.
  virtual void on_drop(TimePoint now, Duration in_flight_for, uint64_t method) = 0;
  // Demand exceeded the limit: a request had to wait for a permit, or was shed for lack of one.
  // Algorithms grow only under demand, so an idle service never inflates its limit.
  virtual void on_demand_pressure(TimePoint now) = 0;

  // The load after each flush (see LoadReading); after the samples of that flush.
  virtual void on_load(const LoadReading& /*reading*/) {}
  // Whether a refused call should be told at once (on_refused), not at the next flush: the
  // algorithm sees no queue and would rather admit it. Read after every call into the algorithm.
  virtual bool grows_on_refusal() const { return false; }
  // A call was refused (it waits for a permit) with `in_flight` permits held and `queued` calls
  // waiting, itself included.
  virtual void on_refused(TimePoint /*now*/, uint32_t /*in_flight*/, uint32_t /*queued*/) {}
  // How long the oldest call may stay unanswered before the algorithm wants a reading at the
  // next admission (a call that overdue says "queue" before any answer does); nullopt: never.
  virtual std::optional<Duration> overdue_after() const { return std::nullopt; }
  // How far back the queue estimator's baselines look (its default when nullopt).
  virtual std::optional<Duration> noload_window() const { return std::nullopt; }

  // The current limit, always within the configured [min_limit, max_limit].
  virtual uint32_t limit() const = 0;
  virtual LimiterState state() const = 0;
  // Why limit() last changed, e.g. "gradient 0.62 < tolerance 0.85"; empty before any change.
  virtual const std::string& last_reason() const = 0;
  // Whether the last change of limit() was an emergency cut outside the control period (aimd's
  // fast decrease), which the filter counts apart from ordinary decreases.
  virtual bool last_change_fast() const { return false; }
  // Whether the last change of limit() lowered it to a bound of demand (rtt_gradient: twice the
  // peak in flight), not for a queue: counted apart (limit_bound_total).
  virtual bool last_change_bound() const { return false; }
  // The gauges this algorithm adds beside limit, in_flight and queued.
  virtual std::vector<LimiterGauge> gauges() const { return {}; }
  // Per-method baselines for /limits, and a name for a method key (the :path it came from).
  virtual std::vector<MethodBaseline> baselines() const { return {}; }
  virtual void name_method(uint64_t /*method*/, std::string_view /*name*/) {}
  // A reload kept this filter: take the options of `fresh` (the same algorithm, built from the
  // new config) and keep this one's state: the current limit (clamped into the new bounds; the
  // new initial_limit is ignored), baselines, the open decision or window. False: this algorithm
  // cannot, and the caller replaces it with `fresh` (its state restarts).
  virtual bool retune(const Limiter& /*fresh*/) { return false; }
  // Control decisions taken so far (0: this algorithm does not describe them), and one line
  // saying what the last one saw and did, holds included: the filter logs it at debug level.
  virtual uint64_t decisions_taken() const { return 0; }
  virtual std::string describe_last_decision() const { return {}; }
};

}  // namespace sluice
