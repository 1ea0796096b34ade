// Everything sluice-test-client observed about one call, and its JSON form.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::itest {

struct CallResult {
  std::string method;
  std::string target;
  int status_code = 0;
  std::string status_message;
  // Keys in order received; -bin values are raw bytes here and base64 in JSON.
  std::vector<std::pair<std::string, std::string>> initial_metadata;
  std::vector<std::pair<std::string, std::string>> trailing_metadata;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bytes_sent = 0;      // request payload bytes
  uint64_t bytes_received = 0;  // response payload bytes
  // client_stream: what the upstream reported processing.
  std::optional<std::pair<uint64_t, uint64_t>> processed;  // messages, bytes
  boost::json::object send;                                // SendLog::summary()
  double elapsed_ms = 0;
};

// gRPC's canonical name for a status code ("DEADLINE_EXCEEDED"), "UNKNOWN_CODE_n" otherwise.
std::string status_name(int code);

// {method, target, status_code, status_name, status_message, initial_metadata: {k: [v, ...]},
//  trailing_metadata, messages_sent, messages_received, bytes_sent, bytes_received,
//  [response: {messages_processed, bytes_processed}], send, elapsed_ms}
boost::json::object to_json(const CallResult& result);

}  // namespace sluice::itest
