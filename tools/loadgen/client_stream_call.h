// A client-streaming call that offers messages at a rate within the call. Only one write is in
// flight at a time (gRPC's rule); a send slot that comes while a write is still in flight is
// skipped and logged, not queued, so write blocking shows up as a lower send rate, exactly like a
// real sender blocked by HTTP/2 flow control.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "tools/loadgen/call.h"
#include "tools/loadgen/open_loop_scheduler.h"

namespace sluice::loadgen {

class ClientStreamCall final : public Call,
                               public grpc::ClientWriteReactor<sluice::test::Request>,
                               public std::enable_shared_from_this<ClientStreamCall> {
 public:
  ClientStreamCall(const CallSetup& setup, sluice::test::TestService::Stub& stub, uint64_t id,
                   CallDone done);

  // Call
  void start() override;
  void cancel() override { ctx_.TryCancel(); }

  // grpc::ClientWriteReactor (gRPC threads: each posts to the io_context)
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  void tick();
  void write(uint64_t seq, TimePoint scheduled);
  void on_write_done(bool ok, TimePoint at);
  // No more writes will be started: close the sending side and let OnDone come.
  void stop_writing(bool half_close);
  void finish(const grpc::Status& status, TimePoint end);
  Duration since_run_start(TimePoint t) const { return t - setup_.run_start; }

  const CallSetup& setup_;
  sluice::test::TestService::Stub& stub_;
  uint64_t id_;
  CallDone done_;
  grpc::ClientContext ctx_;
  sluice::test::Request request_;
  sluice::test::Response response_;
  boost::asio::steady_timer timer_;
  // Paced mode: the send slots of this call; one write in flight is the cap.
  std::optional<OpenLoopScheduler> pacer_;
  TimePoint start_;
  bool write_in_flight_ = false;
  bool writing_over_ = false;
  uint64_t next_seq_ = 0;
  std::vector<SendRecord> sends_;
  uint64_t skipped_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace sluice::loadgen
