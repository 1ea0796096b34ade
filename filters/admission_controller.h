// The shared, thread-safe state of one limiter filter (fixed_semaphore, rtt_gradient, aimd):
// its PermitGate, its limit algorithm (none for a fixed semaphore), stats and decision log.
// Plays the role of Envoy's ConcurrencyController: the per-request LimiterFilter only talks to
// this, so algorithms plug in without touching the filter.
//
// The per-call path takes no lock shared across workers: admission is the gate's CAS, demand
// pressure an atomic flag, and latency samples go into the calling worker's own shard. A shard
// is fed to the (single-threaded) algorithm under the controller's lock once per event-loop turn
// of that worker (a flush posted when the shard stops being empty), so under load one lock
// acquisition serves every call a turn completed. Decisions are as of the flush: at most one
// loop turn late.
#pragma once

#include <array>
#include <atomic>
#include <boost/unordered/unordered_flat_set.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/decision_log.h"
#include "filters/filter.h"
#include "filters/filter_stats.h"
#include "filters/limiter_config.h"
#include "filters/limiter_snapshot.h"
#include "filters/limiters/limiter.h"
#include "filters/limiters/permit_gate.h"
#include "filters/limiters/queue_estimator.h"
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
  };
  // Shards for worker indexes 0..kMaxShards-1; higher ones share the last (the config allows at
  // most 256 workers).
  static constexpr std::size_t kMaxShards = 256;

  // `limiter` may be null: a fixed limit. Registers the filter's stats.
  AdmissionController(const Options& options, std::unique_ptr<Limiter> limiter,
                      StatsRegistry& registry, const Clock& clock);
  ~AdmissionController();
  AdmissionController(const AdmissionController&) = delete;
  AdmissionController& operator=(const AdmissionController&) = delete;

  // Takes a permit or queues as `criticality` (see PermitGate::acquire). A request that has to
  // queue or is rejected is demand pressure for the algorithm.
  PermitGate::Acquisition acquire(Dispatcher& dispatcher, Criticality criticality,
                                  std::function<void(Permit)> on_grant);
  // A request was admitted on `worker` (it holds a permit): it stays unanswered, for the queue
  // estimator (see QueueEstimator), until on_sample, on_drop or on_unanswered_end gives the
  // ticket back on the same worker. Ticket 0: not tracked (no algorithm).
  uint64_t on_admitted(Dispatcher& worker, std::string_view method);
  // An admitted request's answer began `rtt` after admission, OK: a latency sample of `method`
  // (its :path), fed to the algorithm on `worker`'s next flush. `admitted_at`: permits held when
  // it was admitted; `concurrency`: the most it saw (see LatencySample); `waited`: it queued for
  // its permit.
  void on_sample(Dispatcher& worker, uint64_t ticket, std::string_view method, Duration rtt,
                 uint32_t concurrency, uint32_t admitted_at, bool waited);
  // Demand the gate did not see (FilterFactory::on_demand_pressure): fed to the algorithm with
  // the next flush, as a request that had to queue would be.
  void on_demand_pressure() {
    if (limiter_) pressure_.store(true, std::memory_order_relaxed);
  }
  // An admitted request ended without an answer because of overload (see Limiter::on_drop).
  void on_drop(Dispatcher& worker, uint64_t ticket, std::string_view method, Duration in_flight_for,
               uint32_t admitted_at);
  // An admitted request ended (or its answer was an error) without a sample or a drop: it is
  // answered for the estimator, and says nothing of the latency.
  void on_unanswered_end(Dispatcher& worker, uint64_t ticket);
  // An admitted request whose answer was an error (not a latency sample), or that ended with a
  // local reply (upstream unavailable): counted, never fed to the algorithm.
  void on_error_answer() { excluded_error_.inc(); }
  void on_local_answer() { excluded_local_.inc(); }
  // The answer for a request that found the queue full, or was evicted from it.
  LocalReply queue_full_reply(bool evicted, std::optional<Duration> retry_pushback) const;

  // A reload kept this filter (same name and type): applies the new queue bound and order, and
  // the new fixed limit (no algorithm) or the algorithm options of `fresh` (Limiter::retune: its
  // limit is kept, clamped into the new bounds). Permits held and waiters queued are untouched;
  // a raised limit grants waiters at once, a lowered one stops admissions until in-flight falls
  // below it. Never throws. `options` names must match this controller's.
  void reconfigure(const Options& options, std::unique_ptr<Limiter> fresh);

  // Feeds every shard's pending samples to the algorithm now (tests; the posted flushes do it
  // in production).
  void flush_all();

  const Clock& clock() const { return clock_; }
  FilterStats& stats() { return stats_; }
  PermitGate& gate() { return *gate_; }
  std::unique_ptr<LimiterSnapshot> snapshot() const;

 private:
  struct Event {
    enum class Kind : uint8_t { Sample, Drop, None };
    Kind kind = Kind::Sample;
    bool waited = false;
    uint64_t method = 0;
    Duration rtt{};  // the sample's RTT, or a drop's time in flight
    TimePoint admitted{};
    uint32_t concurrency = 0;
    uint32_t admitted_at = 0;
  };
  // An admitted call not yet fed to the algorithm as answered, in admission order.
  struct Unanswered {
    TimePoint admitted;
    uint64_t method = 0;
    bool answered = false;
  };
  static constexpr int64_t kNoneUnanswered = INT64_MAX;
  // One worker's samples waiting for the algorithm. Touched only on that worker's thread, except
  // by flush_all() (tests, single-threaded), and `oldest_ns`, read by every flush.
  struct alignas(64) Shard {
    std::vector<Event> events;
    std::vector<std::pair<uint64_t, std::string>> new_names;  // methods this worker names first
    boost::unordered_flat_set<uint64_t> named;
    bool flush_posted = false;
    // Calls admitted on this worker, oldest first; the front one's ticket is `front_ticket`. A
    // call leaves the front only once its answer was fed to the algorithm, so `oldest_ns` (the
    // front's admission, published after every flush) is never later than a call whose answer
    // another worker's flush has not seen yet.
    std::deque<Unanswered> unanswered;
    uint64_t front_ticket = 1;
    std::atomic<int64_t> oldest_ns{kNoneUnanswered};
    std::atomic<uint64_t> oldest_method{0};
    std::atomic<int64_t> second_ns{kNoneUnanswered};  // the next unanswered call after it
  };

  Shard& shard_of(Dispatcher& worker);
  void enqueue(Dispatcher& worker, Event e, std::string_view method);
  void mark_answered(Shard& shard, uint64_t ticket);
  void publish_oldest(Shard& shard);
  // The admission time of the oldest call of any worker not yet fed as answered.
  std::optional<TimePoint> oldest_unanswered(uint64_t* method = nullptr,
                                             std::optional<TimePoint>* second = nullptr) const;
  void post_flush(Dispatcher& worker, Shard& shard);
  // Re-arms overdue_at_ns_ from the oldest call and the algorithm's overdue_after() (under mu_).
  void arm_overdue_locked(std::optional<TimePoint> oldest);
  void flush(Shard& shard);
  // Pushes a limit change into the gate and the decision log (under mu_).
  void after_call_locked(uint32_t before, TimePoint now);
  void publish_state_locked();
  // Judges what the estimator can and gives the algorithm a reading (under mu_).
  void read_locked(TimePoint now);

  const Options options_;
  const Clock& clock_;
  std::shared_ptr<PermitGate> gate_;
  FilterStats stats_;
  DecisionLog decisions_;
  Counter* limit_changes_ = nullptr;
  // limit_changes_total by direction (limit_<direction>_total), with a limiter only.
  Counter* limit_increases_ = nullptr;
  Counter* limit_decreases_ = nullptr;
  Counter* limit_fast_decreases_ = nullptr;
  Counter* limit_bound_decreases_ = nullptr;
  Counter& samples_;
  Counter& excluded_error_;
  Counter& excluded_local_;
  // The algorithm's own gauges (Limiter::gauges()) and the state field each one shows.
  std::vector<std::pair<FloatGauge*, std::optional<double> LimiterState::*>> algorithm_gauges_;
  std::atomic<bool> pressure_{false};
  std::unique_ptr<std::array<Shard, kMaxShards>> shards_;
  // Flushes posted but not run yet hold this: a flush finds `self` null once the controller is
  // gone and does nothing. The destructor clears `self` under `mu`, so it waits for a flush
  // running on another worker (a reload can drop the last reference on any thread).
  struct Liveness {
    explicit Liveness(AdmissionController* c) : self(c) {}
    std::mutex mu;
    AdmissionController* self;
  };
  std::shared_ptr<Liveness> liveness_;

  // The algorithm is single-threaded; flushes from every worker feed it through this lock.
  mutable std::mutex mu_;
  std::unique_ptr<Limiter> limiter_;
  QueueEstimator estimator_{QueueEstimator::Options{}};  // guarded by mu_
  // An admission after this (clock ns) asks for a reading: the oldest call is overdue.
  std::atomic<int64_t> overdue_at_ns_{kNoneUnanswered};
  std::atomic<int64_t> overdue_after_ns_{kNoneUnanswered};  // Limiter::overdue_after()
  std::atomic<bool> grows_on_refusal_{false};               // Limiter::grows_on_refusal()
  std::atomic<std::size_t> shards_used_{0};                 // worker indexes seen, + 1
  FloatGauge* queue_calls_ = nullptr;
  FloatGauge* service_calls_ = nullptr;
  FloatGauge* queue_delay_ms_ = nullptr;
  LimiterState state_;             // last published, guarded by mu_
  uint64_t decisions_logged_ = 0;  // Limiter::decisions_taken() last seen, guarded by mu_
};

}  // namespace sluice
