// Unary and Fail: one work item on the pool, then the response (or the requested error status).
#pragma once

#include <grpcpp/grpcpp.h>

#include "integration/upstream/call_scope.h"
#include "sluice_test.pb.h"

namespace sluice::itest {

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  // Method::kUnary or Method::kFail. Starts the work item; deletes itself in OnDone.
  UnaryCall(ServiceDeps& deps, Method method, grpc::CallbackServerContext* ctx,
            const sluice::test::Request* request, sluice::test::Response* response);

  // grpc::ServerUnaryReactor
  void OnCancel() override;
  void OnDone() override;

 private:
  void on_served(bool served);

  CallScope scope_;
  Method method_;
  const sluice::test::Request* request_;
  sluice::test::Response* response_;
};

}  // namespace sluice::itest
