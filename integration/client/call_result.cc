#include "integration/client/call_result.h"

#include <array>
#include <string_view>

#include "integration/common/base64.h"
#include "integration/common/grpc_status_name.h"

namespace sluice::itest {
namespace {

boost::json::object metadata_json(const std::vector<std::pair<std::string, std::string>>& md) {
  boost::json::object out;
  for (const auto& [key, value] : md) {
    boost::json::value& slot = out[key];
    if (!slot.is_array()) slot = boost::json::array();
    slot.as_array().emplace_back(key.ends_with("-bin") ? base64_encode(value) : value);
  }
  return out;
}

}  // namespace

std::string status_name(int code) { return grpc_status_name(code); }

boost::json::object to_json(const CallResult& result) {
  boost::json::object out;
  out["method"] = result.method;
  out["target"] = result.target;
  out["status_code"] = result.status_code;
  out["status_name"] = status_name(result.status_code);
  out["status_message"] = result.status_message;
  out["initial_metadata"] = metadata_json(result.initial_metadata);
  out["trailing_metadata"] = metadata_json(result.trailing_metadata);
  out["messages_sent"] = result.messages_sent;
  out["messages_received"] = result.messages_received;
  out["bytes_sent"] = result.bytes_sent;
  out["bytes_received"] = result.bytes_received;
  if (result.processed) {
    out["response"] = boost::json::object{{"messages_processed", result.processed->first},
                                          {"bytes_processed", result.processed->second}};
  }
  out["send"] = result.send;
  out["elapsed_ms"] = result.elapsed_ms;
  return out;
}

}  // namespace sluice::itest
