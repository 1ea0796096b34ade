#include "filters/admission_controller.h"

#include <utility>

namespace sluice {

AdmissionController::AdmissionController(const Options& options, std::unique_ptr<Limiter> limiter,
                                         StatsRegistry& registry, const Clock& clock)
    : options_(options),
      clock_(clock),
      gate_(PermitGate::create(limiter ? limiter->limit() : options.limit, options.max_queue,
                               options.order, &clock)),
      stats_(registry, options.listener, options.filter, {"queue_full"}),
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
    state_ = limiter_->state();
    for (const LimiterGauge& g : limiter_->gauges()) {
      algorithm_gauges_.emplace_back(&registry.float_gauge(stats_.name(g.leaf), g.help), g.field);
    }
  }
}

PermitGate::Acquisition AdmissionController::acquire(Dispatcher& dispatcher,
                                                     std::function<void(Permit)> on_grant) {
  PermitGate::Acquisition acquisition = gate_->acquire(dispatcher, std::move(on_grant));
  if (acquisition.status != PermitGate::Status::Admitted && limiter_) {
    with_limiter([](Limiter& l, TimePoint now) { l.on_demand_pressure(now); });
  }
  return acquisition;
}

void AdmissionController::on_sample(Duration rtt, uint32_t in_flight_at_grant) {
  if (!limiter_) return;
  with_limiter([&](Limiter& l, TimePoint now) { l.on_sample(now, rtt, in_flight_at_grant); });
}

void AdmissionController::on_drop(Duration in_flight_for) {
  if (!limiter_) return;
  with_limiter([&](Limiter& l, TimePoint now) { l.on_drop(now, in_flight_for); });
}

void AdmissionController::with_limiter(const std::function<void(Limiter&, TimePoint)>& call) {
  std::lock_guard lock(mu_);
  const TimePoint now = clock_.now();
  const uint32_t before = limiter_->limit();
  call(*limiter_, now);
  const uint32_t after = limiter_->limit();
  publish_state_locked();
  if (after == before) return;
  // Under the lock, so that concurrent changes reach the gate in the order they were decided.
  gate_->set_limit(after);
  limit_changes_->inc();
  decisions_.add(LimitDecision{now, before, after, limiter_->last_reason()});
}

void AdmissionController::publish_state_locked() {
  state_ = limiter_->state();
  for (const auto& [gauge, field] : algorithm_gauges_) {
    if (const std::optional<double>& v = state_.*field) gauge->set(*v);
  }
}

LocalReply AdmissionController::queue_full_reply() const {
  LocalReply reply;
  reply.grpc_status = GrpcStatus::ResourceExhausted;
  reply.http_status = 503;
  reply.message =
      options_.filter + ": queue full (" + std::to_string(gate_->max_queue()) + " waiting)";
  reply.retry_pushback = options_.retry_pushback;
  reply.reason = "queue_full";
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
  if (limiter_) {
    std::lock_guard lock(mu_);
    s->rtt_noload_ms = state_.rtt_noload_ms;
    s->rtt_smoothed_ms = state_.rtt_smoothed_ms;
    s->gradient = state_.gradient;
    s->p99_ms = state_.p99_ms;
  }
  s->recent_decisions = decisions_.recent();
  return s;
}

}  // namespace sluice
