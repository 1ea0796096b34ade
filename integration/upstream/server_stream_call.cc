#include "integration/upstream/server_stream_call.h"

namespace sluice::itest {

ServerStreamCall::ServerStreamCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx,
                                   const sluice::test::Request* request)
    : scope_(deps, Method::kServerStream, ctx), request_(request) {
  next();
}

void ServerStreamCall::next() {
  if (sent_ >= request_->response_count()) {
    finish_ok();
    return;
  }
  scope_.run_job(*request_, [this](bool served) { on_served(served); });
}

void ServerStreamCall::on_served(bool served) {
  if (!served || scope_.cancelled()) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while being served"));
    return;
  }
  scope_.processed(sent_ == 0 ? request_->payload().size() : 0);
  scope_.add_initial_metadata(*request_);
  response_.set_sequence(sent_);
  response_.set_payload(CallScope::payload(request_->response_size()));
  StartWrite(&response_);
}

void ServerStreamCall::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    return;
  }
  ++sent_;
  next();
}

void ServerStreamCall::finish_ok() {
  scope_.add_initial_metadata(*request_);
  Finish(scope_.add_trailing_metadata(*request_));
}

void ServerStreamCall::OnCancel() { scope_.on_cancel(); }

void ServerStreamCall::OnDone() { delete this; }

}  // namespace sluice::itest
