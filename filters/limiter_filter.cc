#include "filters/limiter_filter.h"

#include <utility>

namespace sluice {

LimiterFilter::LimiterFilter(std::shared_ptr<AdmissionController> controller)
    : controller_(std::move(controller)) {}

FilterStatus LimiterFilter::on_request(FilterCallbacks& callbacks) {
  callbacks_ = &callbacks;
  entered_ = controller_->clock().now();
  // `this` outlives the grant: on_complete() or the destructor cancels wait_, and a cancelled
  // wait never calls back.
  PermitGate::Acquisition got = controller_->acquire(
      callbacks.dispatcher(), [this](Permit permit) { on_granted(std::move(permit)); });
  switch (got.status) {
    case PermitGate::Status::Admitted:
      permit_ = std::move(got.permit);
      controller_->stats().queue_wait(Duration::zero());
      return FilterStatus::Continue;
    case PermitGate::Status::Queued:
      wait_ = std::move(got.wait);
      return FilterStatus::Stop;
    case PermitGate::Status::Rejected:
      break;
  }
  controller_->stats().queue_wait(Duration::zero());
  LocalReply reply = controller_->queue_full_reply();
  controller_->stats().shed(reply.reason);
  callbacks.reject(std::move(reply));
  return FilterStatus::Stop;
}

void LimiterFilter::on_granted(Permit permit) {
  permit_ = std::move(permit);
  controller_->stats().queue_wait(controller_->clock().now() - entered_);
  callbacks_->resume();  // last: the chain may go on to end the request
}

void LimiterFilter::on_admitted() { controller_->stats().admitted(); }

void LimiterFilter::on_complete(const RequestOutcome& outcome) {
  if (wait_.waiting()) {
    // Ended while queued (shed by another filter, client reset, deadline, drain): leave the
    // queue. A grant already on its way bounces back to the gate.
    wait_.cancel();
    controller_->stats().queue_wait(controller_->clock().now() - entered_);
  }
  if (!permit_.held()) return;
  if (outcome.admitted && outcome.rtt) {
    controller_->stats().rtt(*outcome.rtt);
    controller_->on_sample(*outcome.rtt, permit_.in_flight_at_grant());
  } else if (outcome.admitted && callbacks_ != nullptr &&
             is_overload_drop(outcome, callbacks_->request(), controller_->clock().now())) {
    controller_->on_drop(outcome.total - outcome.queue_wait);
  }
  // Released after the sample, so the algorithm saw the request as in flight.
  permit_.release();
}

bool LimiterFilter::is_overload_drop(const RequestOutcome& outcome, const RequestInfo& request,
                                     TimePoint now) {
  switch (outcome.reason) {
    case EndReason::DeadlineExceeded:
    case EndReason::UpstreamReset:
      return true;
    case EndReason::ClientReset:
      return request.deadline.has_value() && now >= *request.deadline;
    case EndReason::Completed:
    case EndReason::Shed:
    case EndReason::UpstreamUnavailable:  // could not connect: says nothing about load
    case EndReason::Drained:
    case EndReason::Internal:
      return false;
  }
  return false;
}

}  // namespace sluice
