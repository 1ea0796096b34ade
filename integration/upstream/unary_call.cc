#include "integration/upstream/unary_call.h"

namespace sluice::itest {

UnaryCall::UnaryCall(ServiceDeps& deps, Method method, grpc::CallbackServerContext* ctx,
                     const sluice::test::Request* request, sluice::test::Response* response)
    : scope_(deps, method, ctx), method_(method), request_(request), response_(response) {
  scope_.run_job(*request_, [this](bool served) { on_served(served); });
}

void UnaryCall::OnCancel() { scope_.on_cancel(); }

void UnaryCall::OnDone() { delete this; }

void UnaryCall::on_served(bool served) {
  if (!served || scope_.cancelled()) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while being served"));
    return;
  }
  scope_.processed(request_->payload().size());
  scope_.add_initial_metadata(*request_);
  if (grpc::Status metadata = scope_.add_trailing_metadata(*request_); !metadata.ok()) {
    Finish(metadata);
    return;
  }
  if (method_ == Method::kFail) {
    int code = request_->status_code();
    if (code < 0 || code > grpc::StatusCode::UNAUTHENTICATED) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "status_code out of range"));
      return;
    }
    Finish(grpc::Status(static_cast<grpc::StatusCode>(code), request_->status_message()));
    return;
  }
  response_->set_payload(CallScope::payload(request_->response_size()));
  Finish(grpc::Status::OK);
}

}  // namespace sluice::itest
