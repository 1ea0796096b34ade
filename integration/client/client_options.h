// sluice-test-client's command line, validated into plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "src/core/time.h"

namespace sluice::itest {

enum class CallMethod { kUnary, kServerStream, kClientStream, kBidi, kFail };

struct ClientOptions {
  std::string target;
  CallMethod method = CallMethod::kUnary;
  std::string method_name = "unary";
  // Streaming: messages to send (client_stream, bidi) or ask for (server_stream). nullopt with
  // --duration means "until the duration is over".
  std::optional<uint64_t> count;
  uint32_t size = 0;                 // request payload bytes
  uint32_t response_size = 0;        // response payload bytes
  double rate = 0;                   // messages per second offered; 0 = as fast as writes complete
  std::optional<Duration> duration;  // stop sending after this long
  std::optional<Duration> deadline;  // per call
  std::optional<Duration> service_time;  // request override of the upstream's service time
  std::optional<Duration> cancel_after;  // TryCancel after this long
  std::vector<std::pair<std::string, std::string>> metadata;           // -bin values decoded
  std::vector<std::pair<std::string, std::string>> trailing_metadata;  // asked of the upstream
  bool echo_metadata = false;
  int32_t status_code = 0;  // for fail
  std::string status_message;
  std::optional<int> expect_status;
  // TLS (hardening tests): a PEM CA file turns TLS on; the name to verify instead of the
  // target's host (e.g. "localhost" when the target is 127.0.0.1).
  std::string tls_ca;
  std::string tls_server_name;
};

// Either options, or the exit code the process should return (help: 0, usage error: 2) after
// CLI11 printed its message.
std::variant<ClientOptions, int> parse_client_options(int argc, char** argv);

}  // namespace sluice::itest
