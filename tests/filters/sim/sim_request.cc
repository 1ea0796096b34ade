#include "tests/filters/sim/sim_request.h"

namespace sluice {

SimRequest::SimRequest(SimRun& run, size_t id, FakeDispatcher& dispatcher, FilterChain& chain)
    : run_(run), id_(id), dispatcher_(dispatcher), chain_(chain, *this) {
  method_ = run_.pick_method();
  info_.method = "POST";
  info_.path = run_.config().methods[method_].path;
  info_.authority = "sim";
  info_.is_grpc = true;
  info_.headers_complete = dispatcher_.now();
  info_.criticality = run_.pick_class();
  record_.arrival = run_.since_start();
  record_.method = method_;
  record_.criticality = info_.criticality;
  service_ = run_.draw_service(method_);
}

void SimRequest::start() { chain_.start(); }

void SimRequest::admit() {
  admitted_at_ = dispatcher_.now();
  record_.admitted = true;
  record_.queue_wait = admitted_at_ - info_.headers_complete;
  // Zero network delay: the request reaches the upstream now, the response comes back to this
  // request's own worker as soon as the upstream is done.
  const Duration tail = run_.config().methods[method_].stream_tail;
  run_.upstream().submit(
      [this, alive = alive_, tail] {
        dispatcher_.post([this, alive, tail] {
          if (!*alive) return;
          const Duration rtt = dispatcher_.now() - admitted_at_;
          record_.rtt = rtt;
          chain_.on_response(ResponseStart{rtt, true, -1});  // the first (or only) message
          if (tail == Duration::zero()) {
            finish_ok(rtt);
            return;
          }
          // A stream: open for `tail` more without holding an upstream worker.
          tail_timer_ = dispatcher_.create_timer([this, rtt] { finish_ok(rtt); });
          tail_timer_->arm(tail);
        });
      },
      service_);
}

void SimRequest::finish_ok(Duration rtt) {
  RequestOutcome o;
  o.admitted = true;
  o.reason = EndReason::Completed;
  o.queue_wait = record_.queue_wait;
  o.rtt = rtt;
  o.total = dispatcher_.now() - info_.headers_complete;
  o.grpc_status = 0;
  end(o);
}

void SimRequest::shed(const LocalReply& reply, int filter_index) {
  record_.queue_wait = dispatcher_.now() - info_.headers_complete;
  record_.grpc_status = to_int(reply.grpc_status);
  record_.shed_reason = reply.reason;
  RequestOutcome o;
  o.admitted = false;
  o.reason = EndReason::Shed;
  o.queue_wait = record_.queue_wait;
  o.total = record_.queue_wait;
  o.grpc_status = to_int(reply.grpc_status);
  o.shed_by = filter_index;
  // The proxy writes the local reply and ends the stream on its next turn.
  dispatcher_.post([this, alive = alive_, o] {
    if (*alive) end(o);
  });
}

void SimRequest::end(const RequestOutcome& outcome) {
  if (outcome.admitted) record_.grpc_status = outcome.grpc_status;
  record_.ended = true;
  chain_.complete(outcome);
  *alive_ = false;
  run_.on_request_end(this, record_, id_);
}

}  // namespace sluice
