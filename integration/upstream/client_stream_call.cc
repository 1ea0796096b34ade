#include "integration/upstream/client_stream_call.h"

namespace sluice::itest {

ClientStreamCall::ClientStreamCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx,
                                   sluice::test::Response* response)
    : scope_(deps, Method::kClientStream, ctx), response_(response) {
  StartRead(&request_);
}

void ClientStreamCall::OnReadDone(bool ok) {
  if (!ok) {
    // The client half-closed (or the call died: then the status is never seen).
    if (scope_.cancelled()) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      return;
    }
    response_->set_messages_processed(messages_);
    response_->set_bytes_processed(bytes_);
    scope_.add_initial_metadata(first_);
    Finish(scope_.add_trailing_metadata(first_));
    return;
  }
  if (messages_ == 0) {
    first_ = request_;
    first_.clear_payload();
  }
  scope_.run_job(request_, [this](bool served) { on_served(served); });
}

void ClientStreamCall::on_served(bool served) {
  if (!served || scope_.cancelled()) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while being served"));
    return;
  }
  ++messages_;
  bytes_ += request_.payload().size();
  scope_.processed(request_.payload().size());
  StartRead(&request_);
}

void ClientStreamCall::OnCancel() { scope_.on_cancel(); }

void ClientStreamCall::OnDone() { delete this; }

}  // namespace sluice::itest
