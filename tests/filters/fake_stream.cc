#include "tests/filters/fake_stream.h"

namespace sluice {

FakeStream::FakeStream(FilterChain& chain, FakeDispatcher& dispatcher)
    : dispatcher_(dispatcher), chain_(chain, *this) {
  info_.method = "POST";
  info_.path = "/test.Service/Call";
  info_.authority = "test";
  info_.is_grpc = true;
}

void FakeStream::start() {
  if (info_.headers_complete == TimePoint{}) info_.headers_complete = dispatcher_.now();
  chain_.start();
}

void FakeStream::admit() {
  ++admit_calls_;
  admitted_at_ = dispatcher_.now();
}

void FakeStream::shed(const LocalReply& reply, int filter_index) {
  ++shed_calls_;
  shed_reply_ = reply;
  shed_index_ = filter_index;
}

void FakeStream::finish(EndReason reason, int grpc_status) {
  const TimePoint now = dispatcher_.now();
  RequestOutcome o;
  o.admitted = admitted();
  o.reason = reason;
  o.queue_wait = admitted_at_.value_or(now) - info_.headers_complete;
  if (o.admitted && reason == EndReason::Completed) {
    // The answer began now, as a proxy stream reports it (a message, or a trailers-only status).
    o.rtt = now - *admitted_at_;
    chain_.on_response(
        ResponseStart{*o.rtt, grpc_status == 0, grpc_status == 0 ? -1 : grpc_status});
  }
  o.total = now - info_.headers_complete;
  o.grpc_status = shed_reply_ ? to_int(shed_reply_->grpc_status) : grpc_status;
  chain_.complete(o);
}

}  // namespace sluice
