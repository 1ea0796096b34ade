// Bidi: each message is served by one work item and then echoed; the next message is read only
// after the echo is written.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "integration/upstream/call_scope.h"
#include "sluice_test.pb.h"

namespace sluice::itest {

class BidiCall final
    : public grpc::ServerBidiReactor<sluice::test::Request, sluice::test::Response> {
 public:
  // Starts the first read; deletes itself in OnDone.
  BidiCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx);

  // grpc::ServerBidiReactor
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void on_served(bool served);

  CallScope scope_;
  sluice::test::Request request_;
  sluice::test::Request first_;
  sluice::test::Response response_;
  uint32_t sequence_ = 0;
};

}  // namespace sluice::itest
