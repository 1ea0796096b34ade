#include "src/queue/queue_reply.h"

namespace sluice::queue {

namespace {

void append_field(std::string& out, std::string_view name, std::string_view value) {
  append_netstring(out, name);
  append_netstring(out, value);
}

}  // namespace

std::string QueueReply::encode() const {
  std::string out;
  out.reserve(body.size() + 128);
  append_field(out, "v", std::to_string(kVersion));
  append_field(out, "call_id", call_id);
  append_field(out, "consumer", consumer);
  append_field(out, "attempt", std::to_string(attempt));
  append_field(out, "status", std::to_string(grpc_status));
  append_field(out, "message", grpc_message);
  append_field(out, "headers", encode_metadata(headers));
  append_field(out, "trailers", encode_metadata(trailers));
  append_field(out, "body", body);
  return out;
}

Result<QueueReply, DecodeError> QueueReply::decode(std::string_view bytes) {
  enum Bit : unsigned {
    kV = 1,
    kCallId = 2,
    kConsumer = 4,
    kAttempt = 8,
    kStatus = 16,
    kMessage = 32,
    kHeaders = 64,
    kTrailers = 128,
    kBody = 256,
  };
  constexpr unsigned kRequired = kV | kCallId | kStatus;
  // Split first: the version is checked before any other field is interpreted.
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  while (!bytes.empty()) {
    const auto name = read_netstring(bytes);
    if (!name) return DecodeError{"not a netstring list"};
    const auto value = read_netstring(bytes);
    if (!value) return DecodeError{"not a netstring list"};
    fields.emplace_back(*name, *value);
  }
  for (const auto& [name, value] : fields) {
    if (name != "v") continue;
    int version = 0;
    if (!parse_decimal(value, version)) return DecodeError{"v: not a number"};
    if (version != kVersion) return DecodeError{"v: unsupported reply version"};
    break;
  }
  QueueReply r;
  unsigned seen = 0;
  for (const auto& [name, value] : fields) {
    unsigned bit = 0;
    bool ok = true;
    if (name == "v") {
      bit = kV;
    } else if (name == "call_id") {
      bit = kCallId;
      r.call_id = value;
      ok = !value.empty();
    } else if (name == "consumer") {
      bit = kConsumer;
      r.consumer = value;
    } else if (name == "attempt") {
      bit = kAttempt;
      ok = parse_decimal(value, r.attempt) && r.attempt >= 1;
    } else if (name == "status") {
      bit = kStatus;
      // gRPC codes are 0..16; a larger one from a newer peer is passed on, not invented.
      ok = parse_decimal(value, r.grpc_status) && r.grpc_status >= 0 && r.grpc_status <= 999;
    } else if (name == "message") {
      bit = kMessage;
      r.grpc_message = value;
    } else if (name == "headers" || name == "trailers") {
      bit = name == "headers" ? kHeaders : kTrailers;
      auto meta = decode_metadata(value);
      ok = meta.has_value();
      if (ok) (name == "headers" ? r.headers : r.trailers) = std::move(*meta);
    } else if (name == "body") {
      bit = kBody;
      r.body = value;
    } else {
      continue;
    }
    if (!ok) return DecodeError{std::string(name) + ": malformed"};
    if ((seen & bit) != 0) return DecodeError{std::string(name) + ": repeated"};
    seen |= bit;
  }
  if ((seen & kV) == 0) return DecodeError{"v: missing"};
  if ((seen & kCallId) == 0) return DecodeError{"call_id: missing"};
  if ((seen & kRequired) != kRequired) return DecodeError{"status: missing"};
  return r;
}

}  // namespace sluice::queue
