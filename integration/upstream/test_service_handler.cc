#include "integration/upstream/test_service_handler.h"

#include <chrono>

#include "integration/upstream/bidi_call.h"
#include "integration/upstream/client_stream_call.h"
#include "integration/upstream/server_stream_call.h"
#include "integration/upstream/unary_call.h"

namespace sluice::itest {

TestServiceHandler::TestServiceHandler(ServiceDeps deps, TimePoint process_start)
    : deps_(deps), process_start_(process_start) {}

sluice::test::StatsResponse TestServiceHandler::stats() const {
  sluice::test::StatsResponse out;
  deps_.stats.fill(out);
  WorkerPool::Snapshot pool = deps_.pool.snapshot();
  out.set_queue_length(pool.queue_length);
  out.set_max_queue_length(pool.max_queue_length);
  out.set_workers(pool.workers);
  out.set_busy_workers(pool.busy);
  out.set_max_in_service(pool.max_in_service);
  out.set_jobs_dropped(pool.dropped);
  TimePoint now = deps_.clock.now();
  out.set_current_service_time_us(to_us(deps_.schedule.peek(now)));
  out.set_uptime_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - process_start_).count());
  return out;
}

grpc::ServerUnaryReactor* TestServiceHandler::Unary(grpc::CallbackServerContext* ctx,
                                                    const sluice::test::Request* request,
                                                    sluice::test::Response* response) {
  return new UnaryCall(deps_, Method::kUnary, ctx, request, response);
}

grpc::ServerWriteReactor<sluice::test::Response>* TestServiceHandler::ServerStream(
    grpc::CallbackServerContext* ctx, const sluice::test::Request* request) {
  return new ServerStreamCall(deps_, ctx, request);
}

grpc::ServerReadReactor<sluice::test::Request>* TestServiceHandler::ClientStream(
    grpc::CallbackServerContext* ctx, sluice::test::Response* response) {
  return new ClientStreamCall(deps_, ctx, response);
}

grpc::ServerBidiReactor<sluice::test::Request, sluice::test::Response>* TestServiceHandler::Bidi(
    grpc::CallbackServerContext* ctx) {
  return new BidiCall(deps_, ctx);
}

grpc::ServerUnaryReactor* TestServiceHandler::Fail(grpc::CallbackServerContext* ctx,
                                                   const sluice::test::Request* request,
                                                   sluice::test::Response* response) {
  return new UnaryCall(deps_, Method::kFail, ctx, request, response);
}

grpc::ServerUnaryReactor* TestServiceHandler::Stats(grpc::CallbackServerContext* ctx,
                                                    const sluice::test::StatsRequest* /*request*/,
                                                    sluice::test::StatsResponse* response) {
  *response = stats();
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TestServiceHandler::ResetStats(
    grpc::CallbackServerContext* ctx, const sluice::test::ResetStatsRequest* request,
    sluice::test::StatsResponse* response) {
  deps_.stats.reset();
  deps_.pool.reset_counters();
  if (request->restart_schedule()) deps_.schedule.restart(deps_.clock.now());
  *response = stats();
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TestServiceHandler::SetHealth(
    grpc::CallbackServerContext* ctx, const sluice::test::SetHealthRequest* request,
    sluice::test::SetHealthResponse* /*response*/) {
  auto* reactor = ctx->DefaultReactor();
  grpc::HealthCheckServiceInterface* health = health_.load();
  if (health == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "no health service yet"));
    return reactor;
  }
  health->SetServingStatus(request->service(), request->serving());
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace sluice::itest
