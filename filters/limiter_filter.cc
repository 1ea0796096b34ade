#include "filters/limiter_filter.h"

#include <algorithm>
#include <utility>

namespace sluice {

LimiterFilter::LimiterFilter(std::shared_ptr<AdmissionController> controller,
                             const LimiterGateConfig& rules)
    : controller_(std::move(controller)), rules_(rules) {}

LimiterFilter::~LimiterFilter() { end_ticket(); }

void LimiterFilter::admitted() {
  ticket_worker_ = &callbacks_->dispatcher();
  ticket_ = controller_->on_admitted(*ticket_worker_, callbacks_->request().path);
}

void LimiterFilter::end_ticket() {
  // The worker kept at admission: from the destructor, the callbacks may be going away too.
  if (ticket_ == 0 || ticket_worker_ == nullptr) return;
  controller_->on_unanswered_end(*ticket_worker_, ticket_);
  ticket_ = 0;
}

FilterStatus LimiterFilter::on_request(FilterCallbacks& callbacks) {
  callbacks_ = &callbacks;
  hold_ = rules_.hold_for(callbacks.request().path);
  if (hold_ == PermitHold::None) return FilterStatus::Continue;  // not limited by this filter
  entered_ = controller_->clock().now();
  const Criticality criticality = callbacks.request().criticality;
  // `this` outlives the grant: on_complete() or the destructor cancels wait_, and a cancelled
  // wait never calls back.
  PermitGate::Acquisition got =
      controller_->acquire(callbacks.dispatcher(), criticality,
                           [this](Permit permit) { on_granted(std::move(permit)); });
  switch (got.status) {
    case PermitGate::Status::Admitted:
      permit_ = std::move(got.permit);
      admitted();
      controller_->stats().queue_wait(criticality, Duration::zero());
      return FilterStatus::Continue;
    case PermitGate::Status::Queued:
      wait_ = std::move(got.wait);
      return FilterStatus::Stop;
    case PermitGate::Status::Rejected:
      break;
  }
  controller_->stats().queue_wait(criticality, Duration::zero());
  reject(/*evicted=*/false);
  return FilterStatus::Stop;
}

void LimiterFilter::reject(bool evicted) {
  LocalReply reply = controller_->queue_full_reply(evicted, rules_.retry_pushback);
  controller_->stats().shed(callbacks_->request().criticality, reply.reason);
  callbacks_->reject(std::move(reply));
}

void LimiterFilter::on_granted(Permit permit) {
  const Criticality criticality = callbacks_->request().criticality;
  controller_->stats().queue_wait(criticality, controller_->clock().now() - entered_);
  if (!permit.held()) {
    reject(/*evicted=*/true);  // a more critical request took this one's place in the queue
    return;
  }
  permit_ = std::move(permit);
  waited_ = true;
  admitted();
  callbacks_->resume();  // last: the chain may go on to end the request
}

void LimiterFilter::on_admitted() {
  if (hold_ != PermitHold::None) controller_->stats().admitted(callbacks_->request().criticality);
}

void LimiterFilter::on_response(const ResponseStart& response) {
  if (!permit_.held()) return;
  answered_ = true;
  if (!response.ok) {
    // An error answer (typically trailers-only, often fast) is no latency sample: it would drag
    // the method's baseline down. Counted apart.
    controller_->on_error_answer();
    end_ticket();
    return;
  }
  controller_->stats().rtt(response.rtt);
  // The concurrency the request ran at: held permits at admission, or now if more came since.
  const uint32_t concurrency =
      std::max(permit_.in_flight_at_grant(), controller_->gate().in_flight());
  controller_->on_sample(callbacks_->dispatcher(), ticket_, callbacks_->request().path,
                         response.rtt, concurrency, permit_.in_flight_at_grant(), waited_);
  ticket_ = 0;
  // A stream whose method is configured to count only until its first message lets go now.
  if (hold_ == PermitHold::FirstMessage) permit_.release();
}

void LimiterFilter::leave_queue() {
  if (!wait_.waiting()) return;
  // Ended while queued (shed by another filter, client reset, deadline, drain): leave the
  // queue. A grant already on its way bounces back to the gate.
  wait_.cancel();
  controller_->stats().queue_wait(callbacks_->request().criticality,
                                  controller_->clock().now() - entered_);
}

void LimiterFilter::on_abandoned() { leave_queue(); }

void LimiterFilter::on_complete(const RequestOutcome& outcome) {
  leave_queue();
  if (!permit_.held()) return;
  if (outcome.admitted && !answered_ && callbacks_ != nullptr) {
    if (is_overload_drop(outcome, callbacks_->request(), controller_->clock().now())) {
      controller_->on_drop(callbacks_->dispatcher(), ticket_, callbacks_->request().path,
                           outcome.total - outcome.queue_wait, permit_.in_flight_at_grant());
      ticket_ = 0;
    } else if (outcome.reason == EndReason::UpstreamUnavailable) {
      controller_->on_local_answer();
    }
  }
  end_ticket();
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
