// The shared, thread-safe state of one limiter filter (fixed_semaphore, rtt_gradient, aimd):
// its PermitGate, its limit algorithm (none for a fixed semaphore), stats and decision log.
// Plays the role of Envoy's ConcurrencyController: the per-request LimiterFilter only talks to
// this, so algorithms plug in without touching the filter.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "filters/decision_log.h"
#include "filters/filter.h"
#include "filters/filter_stats.h"
#include "filters/limiter_snapshot.h"
#include "filters/limiters/limiter.h"
#include "filters/limiters/permit_gate.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class AdmissionController {
 public:
  struct Options {
    std::string listener;
    std::string filter;  // filter name
    std::string type;    // filter type
    uint32_t limit = 1;  // the fixed limit, or the initial one when an algorithm is given
    uint32_t max_queue = 1000;
    PermitGate::Order order = PermitGate::Order::Fifo;
    std::optional<Duration> retry_pushback;
  };

  // `limiter` may be null: a fixed limit. Registers the filter's stats.
  AdmissionController(const Options& options, std::unique_ptr<Limiter> limiter,
                      StatsRegistry& registry, const Clock& clock);
  AdmissionController(const AdmissionController&) = delete;
  AdmissionController& operator=(const AdmissionController&) = delete;

  // Takes a permit or queues (see PermitGate::acquire). A request that has to queue or is
  // rejected is demand pressure for the algorithm.
  PermitGate::Acquisition acquire(Dispatcher& dispatcher, std::function<void(Permit)> on_grant);
  // Outcomes of admitted requests that held a permit.
  void on_sample(Duration rtt, uint32_t in_flight_at_grant);
  void on_drop(Duration in_flight_for);
  // The answer for a request that found the queue full.
  LocalReply queue_full_reply() const;

  const Clock& clock() const { return clock_; }
  FilterStats& stats() { return stats_; }
  PermitGate& gate() { return *gate_; }
  std::unique_ptr<LimiterSnapshot> snapshot() const;

 private:
  // Runs one algorithm call under the lock and pushes any limit change into the gate.
  void with_limiter(const std::function<void(Limiter&, TimePoint)>& call);
  void publish_state_locked();

  const Options options_;
  const Clock& clock_;
  std::shared_ptr<PermitGate> gate_;
  FilterStats stats_;
  DecisionLog decisions_;
  Counter* limit_changes_ = nullptr;
  // The algorithm's own gauges (Limiter::gauges()) and the state field each one shows.
  std::vector<std::pair<FloatGauge*, std::optional<double> LimiterState::*>> algorithm_gauges_;

  // The algorithm is single-threaded; requests on every worker feed it through this lock.
  mutable std::mutex mu_;
  std::unique_ptr<Limiter> limiter_;
  LimiterState state_;  // last published, guarded by mu_
};

}  // namespace sluice
