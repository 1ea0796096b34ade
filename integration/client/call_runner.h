// Runs the one call sluice-test-client was asked for, on the grpc++ synchronous API: a blocking
// Write returns only when gRPC's HTTP/2 layer takes the message, so its timing shows backpressure.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "integration/client/call_result.h"
#include "integration/client/client_options.h"
#include "integration/client/send_log.h"
#include "sluice_test.grpc.pb.h"

namespace sluice::itest {

class CallRunner {
 public:
  CallRunner(ClientOptions options, std::shared_ptr<grpc::Channel> channel);

  CallResult run();

 private:
  sluice::test::Request request() const;
  void prepare(grpc::ClientContext& ctx) const;

  grpc::Status unary(grpc::ClientContext& ctx, CallResult& result);
  grpc::Status server_stream(grpc::ClientContext& ctx, CallResult& result);
  grpc::Status client_stream(grpc::ClientContext& ctx, CallResult& result, SendLog& log);
  grpc::Status bidi(grpc::ClientContext& ctx, CallResult& result, SendLog& log);

  // Writes request messages at the offered rate until --count or --duration runs out, or a
  // write fails (the call is over). A write that blocks delays the next one: missed slots are
  // not made up with a burst.
  template <typename Stream>
  void send_all(Stream& stream, CallResult& result, SendLog& log);

  ClientOptions options_;
  std::unique_ptr<sluice::test::TestService::Stub> stub_;
  TimePoint start_;
};

}  // namespace sluice::itest
