// gRPC-over-HTTP/2 helpers: grpc-timeout, grpc-message encoding, content types, and which
// headers a proxy must not forward.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/core/grpc_status.h"
#include "src/core/time.h"
#include "src/h2/header_block.h"

namespace sluice {

// The longest grpc-timeout sluice keeps (100 years): larger values (up to 99999999H) mean "no
// deadline" in practice and do not fit in Duration.
inline constexpr Duration kMaxGrpcTimeout = std::chrono::hours(24 * 365 * 100);

// "TimeoutValue TimeoutUnit": 1 to 8 ASCII digits then one of H M S m u n. nullopt when
// malformed (the gRPC spec says to treat it as an error; sluice ignores a malformed value).
// Values above kMaxGrpcTimeout are capped to it.
std::optional<Duration> parse_grpc_timeout(std::string_view value);
// The shortest exact-or-smaller encoding with at most 8 digits, never rounding up (the
// upstream must not get more time than the caller has left). Durations <= 0 give "0n".
std::string format_grpc_timeout(Duration d);

// Percent-encodes a grpc-message value: bytes outside 0x20..0x7E and '%' become %XX.
std::string percent_encode_grpc_message(std::string_view message);
std::string percent_decode_grpc_message(std::string_view encoded);

// application/grpc, application/grpc+proto, application/grpc;charset=... are gRPC.
bool is_grpc_content_type(std::string_view content_type);

// Connection-specific headers that HTTP/2 forbids or a proxy must drop (RFC 9113 8.2.2), plus
// `te` unless it is exactly "trailers".
bool is_hop_by_hop_header(std::string_view name, std::string_view value);

// Parses a grpc-status value ("0".."16"); nullopt when not a small non-negative integer.
std::optional<int> parse_grpc_status(std::string_view value);

// A reply sluice makes itself (shed, unavailable, deadline). A gRPC request gets a
// trailers-only response: one HEADERS frame with END_STREAM carrying :status 200,
// content-type application/grpc, grpc-status, the percent-encoded grpc-message and, when set,
// grpc-retry-pushback-ms. Any other request gets `http_status` with a one-line text body and
// retry-after (the pushback in whole seconds, rounded up; 1 for a 503 without one).
struct LocalResponse {
  h2::HeaderBlock headers;
  std::string body;            // empty for gRPC
  bool trailers_only = false;  // send the headers with END_STREAM
};
LocalResponse make_local_response(bool is_grpc, GrpcStatus status, int http_status,
                                  std::string_view message, std::optional<Duration> retry_pushback);

// HTTP/2 error code name ("CANCEL", "REFUSED_STREAM", ...).
const char* h2_error_name(uint32_t code);
// The gRPC status a client library reports for a stream reset with `code` (PROTOCOL-HTTP2.md,
// "Errors"): CANCEL -> CANCELLED, REFUSED_STREAM -> UNAVAILABLE, ENHANCE_YOUR_CALM ->
// RESOURCE_EXHAUSTED, INADEQUATE_SECURITY -> PERMISSION_DENIED, every other code -> INTERNAL.
GrpcStatus grpc_status_for_reset(uint32_t code);

}  // namespace sluice
