#include "filters/admission_controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace sluice {

AdmissionController::AdmissionController(const Options& options, std::unique_ptr<Limiter> limiter,
                                         StatsRegistry& registry, const Clock& clock)
    : options_(options),
      clock_(clock),
      gate_(PermitGate::create(limiter ? limiter->limit() : options.limit, options.max_queue,
                               options.order, &clock)),
      stats_(registry, options.listener, options.filter, {"queue_full", "evicted"}),
      samples_(registry.counter(stats_.name("rtt_samples_total"),
                                "Latency samples given to the algorithm (answers that began OK)")),
      excluded_error_(
          registry.counter(stats_.name("rtt_excluded_error_total"),
                           "Admitted requests answered with an error: not latency samples")),
      excluded_local_(registry.counter(
          stats_.name("rtt_excluded_local_total"),
          "Admitted requests answered locally (upstream unavailable): not latency samples")),
      shards_(std::make_unique<std::array<Shard, kMaxShards>>()),
      liveness_(std::make_shared<Liveness>(this)),
      limiter_(std::move(limiter)) {
  // Computed gauges read the gate's own atomics: exact, and nothing to keep in sync.
  std::shared_ptr<PermitGate> gate = gate_;
  registry.gauge_fn(stats_.name("in_flight"), "Requests holding a permit of this filter",
                    [gate] { return static_cast<double>(gate->in_flight()); });
  registry.gauge_fn(stats_.name("queued"), "Requests waiting for a permit of this filter",
                    [gate] { return static_cast<double>(gate->queued()); });
  registry.gauge_fn(stats_.name("limit"), "Current concurrency limit of this filter",
                    [gate] { return static_cast<double>(gate->limit()); });
  if (limiter_) {
    limit_changes_ =
        &registry.counter(stats_.name("limit_changes_total"), "Times the limit changed");
    limit_increases_ =
        &registry.counter(stats_.name("limit_increase_total"), "Times the limit went up");
    limit_decreases_ = &registry.counter(
        stats_.name("limit_decrease_total"),
        "Times the limit went down at a control decision (or a reload clamped it)");
    limit_bound_decreases_ = &registry.counter(
        stats_.name("limit_bound_total"),
        "Times the limit was lowered to a bound of demand (rtt_gradient: twice the peak in "
        "flight), not for a queue");
    limit_fast_decreases_ =
        &registry.counter(stats_.name("limit_fast_decrease_total"),
                          "Times the limit was cut at once by one very slow call (aimd)");
    queue_calls_ = &registry.float_gauge(
        stats_.name("queue_calls"),
        "Calls waiting in front of the upstream's workers in the last judged cohort (Little's "
        "law: sum of RTT beyond each method's no-load mean / span)");
    service_calls_ = &registry.float_gauge(
        stats_.name("service_calls"),
        "Calls being served (busy upstream workers) in the last judged cohort");
    queue_delay_ms_ = &registry.float_gauge(
        stats_.name("queue_delay_ms"),
        "Mean queueing delay (RTT beyond the method's no-load mean) of the last judged cohort, ms");
    if (const std::optional<Duration> window = limiter_->noload_window()) {
      QueueEstimator::Options eo;
      eo.baselines.window = *window;
      estimator_.set_options(eo);
    }
    if (const std::optional<Duration> after = limiter_->overdue_after()) {
      overdue_after_ns_.store(after->count(), std::memory_order_relaxed);
    }
    state_ = limiter_->state();
    for (const LimiterGauge& g : limiter_->gauges()) {
      algorithm_gauges_.emplace_back(&registry.float_gauge(stats_.name(g.leaf), g.help), g.field);
    }
  }
}

AdmissionController::~AdmissionController() {
  std::lock_guard lock(liveness_->mu);
  liveness_->self = nullptr;
}

PermitGate::Acquisition AdmissionController::acquire(Dispatcher& dispatcher,
                                                     Criticality criticality,
                                                     std::function<void(Permit)> on_grant) {
  if (limiter_ &&
      clock_.now().time_since_epoch().count() > overdue_at_ns_.load(std::memory_order_relaxed)) {
    // The oldest call is overdue: the algorithm hears it before this call is admitted, not at
    // the next answer (an onset shows in the calls it holds before any answers).
    overdue_at_ns_.store(kNoneUnanswered, std::memory_order_relaxed);
    std::lock_guard lock(mu_);
    read_locked(clock_.now());
  }
  PermitGate::Acquisition acquisition =
      gate_->acquire(dispatcher, criticality, std::move(on_grant));
  if (acquisition.status != PermitGate::Status::Admitted && limiter_) {
    pressure_.store(true, std::memory_order_relaxed);
    if (acquisition.status == PermitGate::Status::Queued &&
        grows_on_refusal_.load(std::memory_order_relaxed)) {
      // The algorithm sees no queue: it may admit this call now rather than after an answer.
      std::lock_guard lock(mu_);
      const TimePoint now = clock_.now();
      const uint32_t prior = limiter_->limit();
      limiter_->on_refused(now, gate_->in_flight(), gate_->queued());
      after_call_locked(prior, now);
      publish_state_locked();
    }
  }
  return acquisition;
}

AdmissionController::Shard& AdmissionController::shard_of(Dispatcher& worker) {
  return (*shards_)[std::min<std::size_t>(worker.worker_index(), kMaxShards - 1)];
}

uint64_t AdmissionController::on_admitted(Dispatcher& worker, std::string_view method) {
  if (!limiter_) return 0;
  const std::size_t index = std::min<std::size_t>(worker.worker_index(), kMaxShards - 1);
  if (shards_used_.load(std::memory_order_relaxed) <= index) {
    std::size_t used = shards_used_.load(std::memory_order_relaxed);
    while (used <= index && !shards_used_.compare_exchange_weak(used, index + 1)) {
    }
  }
  Shard& shard = (*shards_)[index];
  const TimePoint now = clock_.now();
  shard.unanswered.push_back(Unanswered{now, method_key(method)});
  if (shard.unanswered.size() == 2) publish_oldest(shard);  // it is the second
  if (shard.unanswered.size() == 1) {
    publish_oldest(shard);
    // Nothing was in flight at the last flush: the deadline starts with this call.
    const int64_t after = overdue_after_ns_.load(std::memory_order_relaxed);
    int64_t none = kNoneUnanswered;
    if (after != kNoneUnanswered) {
      overdue_at_ns_.compare_exchange_strong(none, now.time_since_epoch().count() + after,
                                             std::memory_order_relaxed);
    }
  }
  return shard.front_ticket + shard.unanswered.size() - 1;
}

void AdmissionController::mark_answered(Shard& shard, uint64_t ticket) {
  if (ticket < shard.front_ticket) return;
  const uint64_t i = ticket - shard.front_ticket;
  if (i < shard.unanswered.size()) shard.unanswered[i].answered = true;
}

void AdmissionController::publish_oldest(Shard& shard) {
  int64_t second = kNoneUnanswered;
  if (!shard.unanswered.empty()) {
    shard.oldest_method.store(shard.unanswered.front().method, std::memory_order_relaxed);
    // The next call still unanswered (answered ones wait for the front to be fed).
    const std::size_t scan = std::min<std::size_t>(shard.unanswered.size(), 64);
    for (std::size_t i = 1; i < scan; ++i) {
      if (!shard.unanswered[i].answered) {
        second = shard.unanswered[i].admitted.time_since_epoch().count();
        break;
      }
    }
  }
  shard.second_ns.store(second, std::memory_order_release);
  shard.oldest_ns.store(shard.unanswered.empty()
                            ? kNoneUnanswered
                            : shard.unanswered.front().admitted.time_since_epoch().count(),
                        std::memory_order_release);
}

std::optional<TimePoint> AdmissionController::oldest_unanswered(
    uint64_t* method, std::optional<TimePoint>* second) const {
  int64_t oldest = kNoneUnanswered, next = kNoneUnanswered;
  const std::size_t used = std::min(shards_used_.load(std::memory_order_relaxed), kMaxShards);
  for (std::size_t i = 0; i < used; ++i) {
    const int64_t t = (*shards_)[i].oldest_ns.load(std::memory_order_acquire);
    const int64_t t2 = (*shards_)[i].second_ns.load(std::memory_order_acquire);
    if (t < oldest) {
      next = std::min(oldest, t2);
      oldest = t;
      if (method != nullptr) *method = (*shards_)[i].oldest_method.load(std::memory_order_relaxed);
    } else {
      next = std::min(next, t);
    }
  }
  if (second != nullptr && next != kNoneUnanswered) *second = TimePoint(Duration(next));
  if (oldest == kNoneUnanswered) return std::nullopt;
  return TimePoint(Duration(oldest));
}

void AdmissionController::arm_overdue_locked(std::optional<TimePoint> oldest) {
  const std::optional<Duration> after = limiter_->overdue_after();
  overdue_after_ns_.store(after ? after->count() : kNoneUnanswered, std::memory_order_relaxed);
  overdue_at_ns_.store(
      oldest && after ? (*oldest + *after).time_since_epoch().count() : kNoneUnanswered,
      std::memory_order_relaxed);
}

void AdmissionController::on_sample(Dispatcher& worker, uint64_t ticket, std::string_view method,
                                    Duration rtt, uint32_t concurrency, uint32_t admitted_at,
                                    bool waited) {
  samples_.inc();
  if (!limiter_) return;
  Shard& shard = shard_of(worker);
  mark_answered(shard, ticket);
  Event e;
  e.waited = waited;
  e.method = method_key(method);
  e.rtt = rtt;
  e.admitted = clock_.now() - rtt;
  e.concurrency = concurrency;
  e.admitted_at = admitted_at;
  enqueue(worker, e, method);
}

void AdmissionController::on_drop(Dispatcher& worker, uint64_t ticket, std::string_view method,
                                  Duration in_flight_for, uint32_t admitted_at) {
  if (!limiter_) return;
  mark_answered(shard_of(worker), ticket);
  Event e;
  e.kind = Event::Kind::Drop;
  e.method = method_key(method);
  e.rtt = in_flight_for;
  e.admitted = clock_.now() - in_flight_for;
  e.admitted_at = admitted_at;
  enqueue(worker, e, method);
}

void AdmissionController::on_unanswered_end(Dispatcher& worker, uint64_t ticket) {
  if (!limiter_ || ticket == 0) return;
  mark_answered(shard_of(worker), ticket);
  Event e;
  e.kind = Event::Kind::None;
  enqueue(worker, e, {});
}

void AdmissionController::enqueue(Dispatcher& worker, Event e, std::string_view method) {
  Shard& shard = shard_of(worker);
  if (e.kind != Event::Kind::None && shard.named.insert(e.method).second) {
    shard.new_names.emplace_back(e.method, method);
  }
  shard.events.push_back(e);
  post_flush(worker, shard);
}

void AdmissionController::post_flush(Dispatcher& worker, Shard& shard) {
  if (shard.flush_posted) return;
  shard.flush_posted = true;
  // After the rest of this loop turn: everything it completes is fed under one lock.
  worker.post([liveness = liveness_, &shard] {
    std::lock_guard lock(liveness->mu);
    if (liveness->self != nullptr) liveness->self->flush(shard);
  });
}

void AdmissionController::flush(Shard& shard) {
  shard.flush_posted = false;
  if (shard.events.empty()) return;
  std::lock_guard lock(mu_);
  for (const auto& [key, name] : shard.new_names) {
    limiter_->name_method(key, name);
    estimator_.baselines().name_method(key, name);
  }
  shard.new_names.clear();
  const TimePoint now = clock_.now();
  if (pressure_.exchange(false, std::memory_order_relaxed)) {
    const uint32_t prior = limiter_->limit();
    limiter_->on_demand_pressure(now);  // may close a decision
    after_call_locked(prior, now);
  }
  for (const Event& e : shard.events) {
    const uint32_t prior = limiter_->limit();
    switch (e.kind) {
      case Event::Kind::Drop:
        limiter_->on_drop(now, e.rtt, e.method);
        estimator_.add_drop(now, e.rtt, e.method, e.admitted_at);
        break;
      case Event::Kind::Sample: {
        const LatencySample sample{e.method,      e.rtt,      e.concurrency,
                                   e.admitted_at, e.admitted, e.waited};
        limiter_->on_sample(now, sample);
        estimator_.add(now, sample);
        break;
      }
      case Event::Kind::None:
        break;
    }
    after_call_locked(prior, now);
  }
  shard.events.clear();
  // The calls just fed leave the unanswered list (the front ones; later ones wait for the calls
  // admitted before them).
  while (!shard.unanswered.empty() && shard.unanswered.front().answered) {
    shard.unanswered.pop_front();
    ++shard.front_ticket;
  }
  publish_oldest(shard);  // the front, or the second, may have been answered
  read_locked(now);
}

void AdmissionController::read_locked(TimePoint now) {
  LoadReading reading;
  reading.now = now;
  reading.in_flight = gate_->in_flight();
  reading.oldest_unanswered = oldest_unanswered(&reading.oldest_method, &reading.second_unanswered);
  reading.estimator = &estimator_;
  if (estimator_.on_load(now, reading.oldest_unanswered) > 0) {
    const QueueReading& r = *estimator_.last();
    queue_calls_->set(r.queue);
    service_calls_->set(r.service);
    queue_delay_ms_->set(r.delay_ms);
  }
  const uint32_t prior = limiter_->limit();
  limiter_->on_load(reading);
  after_call_locked(prior, now);
  arm_overdue_locked(reading.oldest_unanswered);
  publish_state_locked();
}

void AdmissionController::flush_all() {
  for (Shard& s : *shards_) flush(s);
}

void AdmissionController::after_call_locked(uint32_t before, TimePoint now) {
  if (const uint64_t taken = limiter_->decisions_taken(); taken != decisions_logged_) {
    decisions_logged_ = taken;  // a reload that replaced the algorithm restarts its count
    if (taken > 0 && spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("{} {} {} decision: {}", options_.listener, options_.filter, options_.type,
                    limiter_->describe_last_decision());
    }
  }
  const uint32_t after = limiter_->limit();
  if (after == before) return;
  // Under the lock, so that concurrent changes reach the gate in the order they were decided.
  gate_->set_limit(after);
  limit_changes_->inc();
  if (after > before) {
    limit_increases_->inc();
  } else {
    if (limiter_->last_change_bound()) {
      limit_bound_decreases_->inc();
    } else {
      (limiter_->last_change_fast() ? limit_fast_decreases_ : limit_decreases_)->inc();
    }
  }
  decisions_.add(LimitDecision{now, before, after, limiter_->last_reason()});
}

void AdmissionController::reconfigure(const Options& options, std::unique_ptr<Limiter> fresh) {
  gate_->set_max_queue(options.max_queue);
  gate_->set_order(options.order);
  if (!limiter_) {
    gate_->set_limit(options.limit);
    return;
  }
  if (!fresh) return;
  std::lock_guard lock(mu_);
  const uint32_t before = limiter_->limit();
  // The same type builds the same algorithm; replacing it is only a fallback for one that
  // cannot retune (its gauges were registered from the old one: the same list).
  if (!limiter_->retune(*fresh)) limiter_ = std::move(fresh);
  if (const std::optional<Duration> window = limiter_->noload_window()) {
    QueueEstimator::Options eo;
    eo.baselines.window = *window;
    estimator_.set_options(eo);
  }
  after_call_locked(before, clock_.now());
  gate_->set_limit(limiter_->limit());
  publish_state_locked();
}

void AdmissionController::publish_state_locked() {
  grows_on_refusal_.store(limiter_->grows_on_refusal(), std::memory_order_relaxed);
  state_ = limiter_->state();
  for (const auto& [gauge, field] : algorithm_gauges_) {
    if (const std::optional<double>& v = state_.*field) gauge->set(*v);
  }
}

LocalReply AdmissionController::queue_full_reply(bool evicted,
                                                 std::optional<Duration> retry_pushback) const {
  LocalReply reply;
  reply.grpc_status = GrpcStatus::ResourceExhausted;
  reply.http_status = 503;
  reply.message =
      options_.filter + ": queue full (" + std::to_string(gate_->max_queue()) + " waiting)";
  if (evicted) reply.message += ", shed for a more critical request";
  reply.retry_pushback = retry_pushback;
  reply.reason = evicted ? "evicted" : "queue_full";
  return reply;
}

std::unique_ptr<LimiterSnapshot> AdmissionController::snapshot() const {
  auto s = std::make_unique<LimiterSnapshot>();
  s->listener = options_.listener;
  s->filter = options_.filter;
  s->type = options_.type;
  s->limit = gate_->limit();
  s->in_flight = gate_->in_flight();
  s->queued = gate_->queued();
  s->admitted = stats_.admitted_total();
  s->shed = stats_.shed_total();
  for (const Criticality c : kCriticalities) {
    ClassSnapshot& cs = s->classes[index_of(c)];
    cs.admitted = stats_.admitted_total(c);
    cs.shed = stats_.shed_total(c);
    cs.queued = gate_->queued(c);
  }
  if (limiter_) {
    std::lock_guard lock(mu_);
    s->rtt_noload_ms = state_.rtt_noload_ms;
    s->rtt_smoothed_ms = state_.rtt_smoothed_ms;
    s->gradient = state_.gradient;
    s->p99_ms = state_.p99_ms;
    s->queueing = state_.queueing;
    s->tolerated_slowdown = state_.tolerated_slowdown;
    s->baselines = limiter_->baselines();
    // An algorithm without baselines of its own judges by the estimator's.
    if (s->baselines.empty()) s->baselines = estimator_.baselines().snapshot();
    s->queue_cuts = limit_decreases_->value();
    if (const std::optional<QueueReading>& r = estimator_.last(); r && r->judged > 0) {
      s->queue_calls = r->queue;
      s->service_calls = r->service;
      s->queue_delay_ms = r->delay_ms;
    }
  }
  s->recent_decisions = decisions_.recent();
  return s;
}

}  // namespace sluice
