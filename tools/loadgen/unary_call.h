// A unary call on the callback API; its end time is taken on gRPC's thread, before the hop to
// the io_context, so the queueing of that hop does not count as latency. `fail` calls the Fail
// RPC instead of Unary (same request; status_code 0 answers OK).
#pragma once

#include <memory>

#include "tools/loadgen/call.h"

namespace sluice::loadgen {

class UnaryCall final : public Call, public std::enable_shared_from_this<UnaryCall> {
 public:
  UnaryCall(const CallSetup& setup, sluice::test::TestService::Stub& stub, bool fail,
            CallDone done);

  // Call
  void start() override;
  void cancel() override { ctx_.TryCancel(); }

 private:
  void finish(const grpc::Status& status, TimePoint end);

  const CallSetup& setup_;
  sluice::test::TestService::Stub& stub_;
  bool fail_;
  CallDone done_;
  grpc::ClientContext ctx_;
  sluice::test::Request request_;
  sluice::test::Response response_;
  TimePoint start_;
};

}  // namespace sluice::loadgen
