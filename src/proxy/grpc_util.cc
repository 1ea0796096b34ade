#include "src/proxy/grpc_util.h"

#include <nghttp2/nghttp2.h>

#include <array>
#include <cstdint>

namespace sluice {

std::optional<Duration> parse_grpc_timeout(std::string_view v) {
  if (v.size() < 2 || v.size() > 9) return std::nullopt;
  const char unit = v.back();
  const std::string_view digits = v.substr(0, v.size() - 1);
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  using namespace std::chrono;
  int64_t unit_ns = 0;
  switch (unit) {
    case 'H':
      unit_ns = duration_cast<nanoseconds>(hours(1)).count();
      break;
    case 'M':
      unit_ns = duration_cast<nanoseconds>(minutes(1)).count();
      break;
    case 'S':
      unit_ns = duration_cast<nanoseconds>(seconds(1)).count();
      break;
    case 'm':
      unit_ns = duration_cast<nanoseconds>(milliseconds(1)).count();
      break;
    case 'u':
      unit_ns = duration_cast<nanoseconds>(microseconds(1)).count();
      break;
    case 'n':
      unit_ns = 1;
      break;
    default:
      return std::nullopt;
  }
  // 99999999H does not fit in int64 nanoseconds (found by fuzz/grpc_timeout_fuzzer): cap at a
  // time no caller can wait for, which also keeps `now + timeout` from overflowing.
  if (n > kMaxGrpcTimeout.count() / unit_ns) return kMaxGrpcTimeout;
  return Duration(n * unit_ns);
}

std::string format_grpc_timeout(Duration d) {
  if (d.count() <= 0) return "0n";
  constexpr int64_t kMax = 99'999'999;
  struct Unit {
    int64_t ns;
    char c;
  };
  static constexpr std::array<Unit, 6> kUnits = {{{1, 'n'},
                                                  {1'000, 'u'},
                                                  {1'000'000, 'm'},
                                                  {1'000'000'000, 'S'},
                                                  {60'000'000'000, 'M'},
                                                  {3'600'000'000'000, 'H'}}};
  for (const Unit& u : kUnits) {
    const int64_t value = d.count() / u.ns;  // truncates: never more time than is left
    if (value <= kMax) return std::to_string(value) + u.c;
  }
  return std::to_string(kMax) + 'H';
}

std::string percent_encode_grpc_message(std::string_view message) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c >= 0x20 && c <= 0x7E && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::string percent_decode_grpc_message(std::string_view encoded) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(encoded.size());
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size()) {
      const int hi = hex(encoded[i + 1]);
      const int lo = hex(encoded[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(encoded[i]);
  }
  return out;
}

bool is_grpc_content_type(std::string_view ct) {
  constexpr std::string_view kGrpc = "application/grpc";
  if (ct.substr(0, kGrpc.size()) != kGrpc) return false;
  return ct.size() == kGrpc.size() || ct[kGrpc.size()] == '+' || ct[kGrpc.size()] == ';';
}

bool is_hop_by_hop_header(std::string_view name, std::string_view value) {
  if (name == "te") return value != "trailers";
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade" || name == "http2-settings";
}

std::optional<int> parse_grpc_status(std::string_view v) {
  if (v.empty() || v.size() > 3) return std::nullopt;
  int n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

LocalResponse make_local_response(bool is_grpc, GrpcStatus status, int http_status,
                                  std::string_view message,
                                  std::optional<Duration> retry_pushback) {
  LocalResponse r;
  h2::HeaderBlock& h = r.headers;
  if (is_grpc) {
    h.add(":status", "200");
    h.add("content-type", "application/grpc");
    h.add("grpc-status", std::to_string(to_int(status)));
    h.add("grpc-message", percent_encode_grpc_message(message));
    if (retry_pushback) {
      h.add("grpc-retry-pushback-ms", std::to_string(to_us(*retry_pushback) / 1000));
    }
    r.trailers_only = true;
    return r;
  }
  h.add(":status", std::to_string(http_status));
  h.add("content-type", "text/plain; charset=utf-8");
  if (retry_pushback) {
    const int64_t ms = to_us(*retry_pushback) / 1000;
    h.add("retry-after", std::to_string((ms + 999) / 1000));
  } else if (http_status == 503) {
    h.add("retry-after", "1");
  }
  r.body = std::string(message) + "\n";
  return r;
}

GrpcStatus grpc_status_for_reset(uint32_t code) {
  switch (code) {
    case NGHTTP2_REFUSED_STREAM:
      return GrpcStatus::Unavailable;
    case NGHTTP2_CANCEL:
      return GrpcStatus::Cancelled;
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return GrpcStatus::ResourceExhausted;
    case NGHTTP2_INADEQUATE_SECURITY:
      return GrpcStatus::PermissionDenied;
    default:  // NO_ERROR (before the end), PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR,
              // SETTINGS_TIMEOUT, FRAME_SIZE_ERROR, COMPRESSION_ERROR, CONNECT_ERROR, unknown
      return GrpcStatus::Internal;
  }
}

const char* h2_error_name(uint32_t code) {
  switch (code) {
    case NGHTTP2_NO_ERROR:
      return "NO_ERROR";
    case NGHTTP2_PROTOCOL_ERROR:
      return "PROTOCOL_ERROR";
    case NGHTTP2_INTERNAL_ERROR:
      return "INTERNAL_ERROR";
    case NGHTTP2_FLOW_CONTROL_ERROR:
      return "FLOW_CONTROL_ERROR";
    case NGHTTP2_SETTINGS_TIMEOUT:
      return "SETTINGS_TIMEOUT";
    case NGHTTP2_STREAM_CLOSED:
      return "STREAM_CLOSED";
    case NGHTTP2_FRAME_SIZE_ERROR:
      return "FRAME_SIZE_ERROR";
    case NGHTTP2_REFUSED_STREAM:
      return "REFUSED_STREAM";
    case NGHTTP2_CANCEL:
      return "CANCEL";
    case NGHTTP2_COMPRESSION_ERROR:
      return "COMPRESSION_ERROR";
    case NGHTTP2_CONNECT_ERROR:
      return "CONNECT_ERROR";
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return "ENHANCE_YOUR_CALM";
    case NGHTTP2_INADEQUATE_SECURITY:
      return "INADEQUATE_SECURITY";
    case NGHTTP2_HTTP_1_1_REQUIRED:
      return "HTTP_1_1_REQUIRED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace sluice
