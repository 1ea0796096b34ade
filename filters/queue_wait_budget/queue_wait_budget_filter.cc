#include "filters/queue_wait_budget/queue_wait_budget_filter.h"

#include <chrono>
#include <cstdio>
#include <utility>

namespace sluice {

QueueWaitBudgetFilter::QueueWaitBudgetFilter(std::shared_ptr<QueueWaitBudgetShared> shared)
    : shared_(std::move(shared)) {}

std::string QueueWaitBudgetFilter::format_duration(Duration d) {
  using std::chrono::duration_cast;
  char buf[48];
  const auto ns = d.count();
  if (ns % 1'000'000'000 == 0 && ns != 0) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(ns / 1'000'000'000));
  } else if (ns % 1'000'000 == 0) {
    std::snprintf(buf, sizeof(buf), "%lldms", static_cast<long long>(ns / 1'000'000));
  } else if (ns >= 1'000'000) {
    std::snprintf(buf, sizeof(buf), "%.1fms", to_ms(d));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldus", static_cast<long long>(to_us(d)));
  }
  return buf;
}

FilterStatus QueueWaitBudgetFilter::on_request(FilterCallbacks& callbacks) {
  callbacks_ = &callbacks;
  const RequestInfo& request = callbacks.request();
  const TimePoint now = shared_->clock->now();
  // Queue wait counts from headers-complete, wherever this filter sits in the chain.
  start_ = request.headers_complete == TimePoint{} ? now : request.headers_complete;
  budget_ = shared_->budgets[index_of(request.criticality)];
  if (request.deadline && *request.deadline - start_ < budget_) {
    budget_ = *request.deadline - start_;
    deadline_bound_ = true;
  }
  const Duration left = start_ + budget_ - now;
  if (left <= Duration::zero()) {
    // Already out of budget (a deadline that has passed, or time spent in earlier filters).
    shared_->stats->queue_wait(criticality(), now - start_);
    LocalReply reply = make_reply();
    shared_->stats->shed(criticality(), reply.reason);
    callbacks.reject(std::move(reply));
    return FilterStatus::Stop;
  }
  // No timer yet: most requests are admitted by the later filters at once (on_admitted() comes
  // before this chain run ends), and for them a timer would be pure cost. on_waiting() arms it.
  watching_ = true;
  return FilterStatus::Continue;
}

void QueueWaitBudgetFilter::on_waiting() {
  if (!watching_ || waiting_) return;
  waiting_ = true;
  shared_->queued->add(1);
  const Duration left = start_ + budget_ - shared_->clock->now();
  if (left <= Duration::zero()) {
    on_expired();  // the later filters took the whole budget before stopping
    return;
  }
  // The timer dies with this filter (or is cancelled on admission), so `this` is valid when it
  // fires.
  timer_ = callbacks_->dispatcher().create_timer([this] { on_expired(); });
  timer_->arm(left);
}

void QueueWaitBudgetFilter::stop_watching() {
  if (!watching_) return;
  watching_ = false;
  if (waiting_) {
    waiting_ = false;
    shared_->queued->sub(1);
  }
  if (timer_) timer_->cancel();
}

void QueueWaitBudgetFilter::on_admitted() {
  if (watching_) shared_->stats->queue_wait(criticality(), shared_->clock->now() - start_);
  stop_watching();
  shared_->stats->admitted(criticality());
  shared_->in_flight->add(1);
  in_flight_ = true;
}

void QueueWaitBudgetFilter::on_expired() {
  if (!watching_) return;
  stop_watching();
  shared_->stats->queue_wait(criticality(), shared_->clock->now() - start_);
  LocalReply reply = make_reply();
  shared_->stats->shed(criticality(), reply.reason);
  callbacks_->reject(std::move(reply));  // last: the chain may end the request right here
}

void QueueWaitBudgetFilter::on_complete(const RequestOutcome& outcome) {
  if (watching_) {
    // Ended while waiting for admission, for another reason (shed elsewhere, reset, drain).
    shared_->stats->queue_wait(criticality(), shared_->clock->now() - start_);
    stop_watching();
  }
  timer_.reset();
  if (in_flight_) {
    shared_->in_flight->sub(1);
    in_flight_ = false;
  }
  if (outcome.admitted && outcome.rtt) shared_->stats->rtt(*outcome.rtt);
}

LocalReply QueueWaitBudgetFilter::make_reply() const {
  LocalReply reply;
  reply.http_status = 503;
  if (deadline_bound_) {
    // The caller's deadline has passed: the gRPC status for that, and no pushback, since a retry
    // of an expired call is pointless.
    reply.grpc_status = GrpcStatus::DeadlineExceeded;
    reply.message = "queue wait budget " + format_duration(budget_) +
                    " (the caller's remaining deadline, less than the configured " +
                    format_duration(shared_->budgets[index_of(callbacks_->request().criticality)]) +
                    ") exceeded";
    reply.reason = "deadline";
  } else {
    reply.grpc_status = GrpcStatus::ResourceExhausted;
    reply.message = "queue wait budget " + format_duration(budget_) + " exceeded";
    reply.retry_pushback = shared_->retry_pushback;
    reply.reason = "budget";
  }
  return reply;
}

}  // namespace sluice
