// One gRPC call made by the load generator. Calls run on grpc++'s callback API; every reaction is
// posted to the generator's io_context, so all bookkeeping happens on one thread without locks.
#pragma once

#include <grpcpp/grpcpp.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice_test.grpc.pb.h"
#include "src/core/time.h"
#include "tools/loadgen/send_csv_writer.h"

namespace sluice::loadgen {

// What every call of a run shares. Outlives all calls.
struct CallSetup {
  boost::asio::io_context& io;
  TimePoint run_start;
  sluice::test::Request request;  // prototype; each call copies it
  std::optional<Duration> deadline;
  std::vector<std::pair<std::string, std::string>> metadata;
  // Client streaming: messages per call, and offered messages/s within a call (0: back to back).
  uint64_t stream_messages = 1;
  double stream_rate = 0;
  Duration max_lateness{0};
};

struct CallResult {
  int status = -1;
  std::string message;
  std::optional<int64_t> queue_us;
  TimePoint start;
  TimePoint end;
  uint64_t messages_sent = 0;
  uint64_t send_slots_skipped = 0;
  std::vector<SendRecord> sends;
};

// Runs on the io_context thread, once, after the call is over.
using CallDone = std::function<void(CallResult)>;

class Call {
 public:
  virtual ~Call() = default;
  // Starts the call; `done` runs exactly once when it is over.
  virtual void start() = 0;
  // Asks gRPC to cancel; `done` still runs, with CANCELLED.
  virtual void cancel() = 0;

 protected:
  // Deadline and metadata of the run applied to a fresh context.
  static void prepare(const CallSetup& setup, grpc::ClientContext& ctx);
  // What every call shape reports: status, message, queue wait, start and end.
  static CallResult result_of(const grpc::Status& status, const grpc::ClientContext& ctx,
                              TimePoint start, TimePoint end);

 private:
  // x-sluice-queue-us from initial metadata, else trailing metadata (trailers-only answers carry
  // it there); nullopt when absent or not a number.
  static std::optional<int64_t> queue_us(const grpc::ClientContext& ctx);
};

}  // namespace sluice::loadgen
