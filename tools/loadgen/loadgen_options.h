// sluice-loadgen's command line, validated into plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "src/core/time.h"
#include "tools/loadgen/arrival_schedule.h"
#include "tools/loadgen/phase.h"

namespace sluice::loadgen {

// kFail: the test service's Fail RPC with status_code 0, i.e. a second unary method (its own
// :path) that answers OK after its service time, for workloads that mix methods.
enum class CallMethod { kUnary, kClientStream, kFail };

struct LoadgenOptions {
  std::string target;
  std::string phases_text;
  std::vector<Phase> phases;
  ArrivalProcess arrivals = ArrivalProcess::kFixed;
  uint64_t seed = 1;
  uint64_t max_outstanding = 1000;  // open loop; 0 = no cap
  Duration max_lateness = std::chrono::milliseconds(100);
  Duration think_time{0};  // closed loop
  std::optional<Duration> deadline;
  std::optional<Duration> drain_timeout;  // after the plan: cancel calls still running after this
  CallMethod method = CallMethod::kUnary;
  uint32_t size = 0;                     // request payload bytes (per message when streaming)
  uint32_t response_size = 0;            // response payload bytes
  std::optional<Duration> service_time;  // asks the test upstream for this service time
  uint64_t stream_messages = 1;          // client_stream: messages per call
  double stream_rate = 0;  // client_stream: messages/s within a call; 0 = back to back
  uint32_t channels = 4;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string csv_path;
  std::string summary_path;
  std::string sends_csv_path;
  bool quiet = false;
};

// Either options, or the exit code the process should return (help: 0, usage error: 2) after the
// message was printed.
std::variant<LoadgenOptions, int> parse_loadgen_options(int argc, char** argv);

}  // namespace sluice::loadgen
