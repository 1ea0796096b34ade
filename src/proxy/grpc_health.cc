#include "src/proxy/grpc_health.h"

#include <cstdint>

namespace sluice {

namespace {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads a varint at `pos`; nullopt when it runs past the end or over 10 bytes.
std::optional<uint64_t> get_varint(std::string_view in, std::size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && pos < in.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in[pos++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return v;
  }
  return std::nullopt;
}

// The status field of a HealthCheckResponse; unknown fields are skipped as protobuf says.
// Absent means the default, UNKNOWN (0).
std::optional<int> parse_response_message(std::string_view m, std::string& error) {
  int status = 0;
  std::size_t pos = 0;
  bool truncated = false;
  while (pos < m.size() && !truncated) {
    truncated = true;  // until this field is read whole
    const auto key = get_varint(m, pos);
    if (!key) break;
    const uint64_t field = *key >> 3;
    const uint64_t wire_type = *key & 7;
    std::optional<uint64_t> skip;  // bytes to skip after the key
    if (wire_type == 0) {
      const auto v = get_varint(m, pos);
      if (!v) break;
      if (field == 1) status = static_cast<int32_t>(*v);
      truncated = false;
      continue;
    }
    if (wire_type == 1) skip = 8;
    if (wire_type == 5) skip = 4;
    if (wire_type == 2) skip = get_varint(m, pos);
    if (wire_type != 1 && wire_type != 2 && wire_type != 5) {
      error = "HealthCheckResponse: unsupported protobuf wire type " + std::to_string(wire_type);
      return std::nullopt;
    }
    if (!skip || *skip > m.size() - pos) break;
    pos += *skip;
    truncated = false;
  }
  if (truncated) {
    error = "HealthCheckResponse: truncated protobuf";
    return std::nullopt;
  }
  return status;
}

}  // namespace

std::string health_check_request_frame(std::string_view service) {
  std::string message;
  if (!service.empty()) {  // proto3: a default value is not sent
    message.push_back(static_cast<char>((1 << 3) | 2));
    put_varint(message, service.size());
    message.append(service);
  }
  std::string frame;
  frame.push_back('\0');  // not compressed
  const auto n = static_cast<uint32_t>(message.size());
  for (int shift = 24; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(n >> shift));
  frame += message;
  return frame;
}

HealthCheckBody parse_health_check_body(std::string_view body) {
  HealthCheckBody out;
  if (body.size() < 5) {
    out.error = body.empty() ? "no HealthCheckResponse in the response" : "truncated gRPC message";
    return out;
  }
  if (body[0] != '\0') {
    // We send no grpc-accept-encoding, so a compressed message breaks the protocol.
    out.error = "compressed gRPC message (none was accepted)";
    return out;
  }
  uint32_t length = 0;
  for (int i = 1; i <= 4; ++i) length = (length << 8) | static_cast<uint8_t>(body[i]);
  if (body.size() - 5 < length) {
    out.error = "truncated gRPC message";
    return out;
  }
  if (body.size() - 5 > length) {
    out.error = "more than one message in a unary response";
    return out;
  }
  out.status = parse_response_message(body.substr(5), out.error);
  return out;
}

std::string serving_status_name(int status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "status " + std::to_string(status);
  }
}

}  // namespace sluice
