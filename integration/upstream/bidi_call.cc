#include "integration/upstream/bidi_call.h"

namespace sluice::itest {

BidiCall::BidiCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx)
    : scope_(deps, Method::kBidi, ctx) {
  StartRead(&request_);
}

void BidiCall::OnReadDone(bool ok) {
  if (!ok) {
    if (scope_.cancelled()) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      return;
    }
    scope_.add_initial_metadata(first_);
    Finish(scope_.add_trailing_metadata(first_));
    return;
  }
  if (sequence_ == 0) {
    first_ = request_;
    first_.clear_payload();
  }
  scope_.run_job(request_, [this](bool served) { on_served(served); });
}

void BidiCall::on_served(bool served) {
  if (!served || scope_.cancelled()) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while being served"));
    return;
  }
  scope_.processed(request_.payload().size());
  scope_.add_initial_metadata(first_);
  response_.set_sequence(sequence_++);
  if (request_.response_size() > 0) {
    response_.set_payload(CallScope::payload(request_.response_size()));
  } else {
    response_.set_payload(request_.payload());
  }
  StartWrite(&response_);
}

void BidiCall::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
    return;
  }
  StartRead(&request_);
}

void BidiCall::OnCancel() { scope_.on_cancel(); }

void BidiCall::OnDone() { delete this; }

}  // namespace sluice::itest
