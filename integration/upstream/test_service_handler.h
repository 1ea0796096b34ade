// sluice.test.TestService on the grpc++ callback API: each call becomes a reactor that runs its
// work items on the shared WorkerPool.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>

#include "integration/upstream/call_scope.h"
#include "sluice_test.grpc.pb.h"

namespace sluice::itest {

class TestServiceHandler final : public sluice::test::TestService::CallbackService {
 public:
  TestServiceHandler(ServiceDeps deps, TimePoint process_start);

  // Counters, pool and schedule state, as returned by the Stats RPC and printed at exit.
  sluice::test::StatsResponse stats() const;
  // The server's default health service, which SetHealth flips (known once the server runs).
  void set_health_service(grpc::HealthCheckServiceInterface* health) { health_.store(health); }

  // sluice::test::TestService::CallbackService
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx,
                                  const sluice::test::Request* request,
                                  sluice::test::Response* response) override;
  grpc::ServerWriteReactor<sluice::test::Response>* ServerStream(
      grpc::CallbackServerContext* ctx, const sluice::test::Request* request) override;
  grpc::ServerReadReactor<sluice::test::Request>* ClientStream(
      grpc::CallbackServerContext* ctx, sluice::test::Response* response) override;
  grpc::ServerBidiReactor<sluice::test::Request, sluice::test::Response>* Bidi(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* ctx,
                                 const sluice::test::Request* request,
                                 sluice::test::Response* response) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* ctx,
                                  const sluice::test::StatsRequest* request,
                                  sluice::test::StatsResponse* response) override;
  grpc::ServerUnaryReactor* ResetStats(grpc::CallbackServerContext* ctx,
                                       const sluice::test::ResetStatsRequest* request,
                                       sluice::test::StatsResponse* response) override;
  grpc::ServerUnaryReactor* SetHealth(grpc::CallbackServerContext* ctx,
                                      const sluice::test::SetHealthRequest* request,
                                      sluice::test::SetHealthResponse* response) override;

 private:
  ServiceDeps deps_;  // refers to state owned by main, which outlives the server
  TimePoint process_start_;
  std::atomic<grpc::HealthCheckServiceInterface*> health_{nullptr};
};

}  // namespace sluice::itest
