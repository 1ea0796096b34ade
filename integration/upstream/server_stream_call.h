// ServerStream: response_count messages, each after one work item on the pool.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "integration/upstream/call_scope.h"
#include "sluice_test.pb.h"

namespace sluice::itest {

class ServerStreamCall final : public grpc::ServerWriteReactor<sluice::test::Response> {
 public:
  // Starts the first work item; deletes itself in OnDone.
  ServerStreamCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx,
                   const sluice::test::Request* request);

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void next();
  void on_served(bool served);
  void finish_ok();

  CallScope scope_;
  const sluice::test::Request* request_;
  sluice::test::Response response_;  // the message being written: must outlive StartWrite
  uint32_t sent_ = 0;
};

}  // namespace sluice::itest
