// The two messages of grpc.health.v1.Health/Check on the wire, encoded and decoded by hand
// (two fields; not worth linking protobuf into sluice):
//   message HealthCheckRequest { string service = 1; }
//   message HealthCheckResponse { ServingStatus status = 1; }
//   enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice {

inline constexpr std::string_view kHealthCheckPath = "/grpc.health.v1.Health/Check";
inline constexpr int kServingStatusServing = 1;

// The request body: one uncompressed gRPC length-prefixed message holding HealthCheckRequest.
std::string health_check_request_frame(std::string_view service);

// What a response body says. `status` is the ServingStatus of the one HealthCheckResponse it
// holds; `error` says what was wrong with the body when it holds none (empty, truncated,
// compressed, several messages, not protobuf).
struct HealthCheckBody {
  std::optional<int> status;
  std::string error;
};
HealthCheckBody parse_health_check_body(std::string_view body);

// "SERVING", "NOT_SERVING", ...; "status 7" for a value the enum does not name.
std::string serving_status_name(int status);

}  // namespace sluice
