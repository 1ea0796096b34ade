// ClientStream: reads one message, serves it, and only then reads the next, so a slow worker
// leaves unread bytes in HTTP/2 flow control instead of in an application queue.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "integration/upstream/call_scope.h"
#include "sluice_test.pb.h"

namespace sluice::itest {

class ClientStreamCall final : public grpc::ServerReadReactor<sluice::test::Request> {
 public:
  // Starts the first read; deletes itself in OnDone.
  ClientStreamCall(ServiceDeps& deps, grpc::CallbackServerContext* ctx,
                   sluice::test::Response* response);

  // grpc::ServerReadReactor
  void OnReadDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void on_served(bool served);

  CallScope scope_;
  sluice::test::Response* response_;
  sluice::test::Request request_;  // the message being read / served
  sluice::test::Request first_;    // its flags decide the response metadata
  uint64_t messages_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace sluice::itest
