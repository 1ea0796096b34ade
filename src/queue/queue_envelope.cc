#include "src/queue/queue_envelope.h"

#include <chrono>

namespace sluice::queue {

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

StreamFields QueueEnvelope::encode() const {
  StreamFields f;
  f.reserve(10);
  f.emplace_back("v", std::to_string(kVersion));
  f.emplace_back("method", method);
  f.emplace_back("call_id", call_id);
  f.emplace_back("reply_to", reply_to);
  f.emplace_back("frontend", frontend);
  f.emplace_back("deadline_ms", std::to_string(deadline_unix_ms));
  f.emplace_back("enqueued_ms", std::to_string(enqueued_unix_ms));
  f.emplace_back("attempt", std::to_string(attempt));
  f.emplace_back("meta", encode_metadata(metadata));
  f.emplace_back("body", body);
  return f;
}

Result<QueueEnvelope, DecodeError> QueueEnvelope::decode(const StreamFields& fields) {
  // Each known field once; `seen` catches repeats (a stream entry may hold the same name twice).
  enum Bit : unsigned {
    kV = 1,
    kMethod = 2,
    kCallId = 4,
    kReplyTo = 8,
    kFrontend = 16,
    kDeadline = 32,
    kEnqueued = 64,
    kAttempt = 128,
    kMeta = 256,
    kBody = 512,
  };
  constexpr unsigned kRequired = kV | kMethod | kCallId | kReplyTo | kDeadline | kMeta | kBody;
  // The version first: under another version the other fields may mean something else.
  for (const auto& [name, value] : fields) {
    if (name != "v") continue;
    int version = 0;
    if (!parse_decimal(value, version)) return DecodeError{"v: not a number"};
    if (version != kVersion) return DecodeError{"v: unsupported envelope version"};
    break;
  }
  unsigned seen = 0;
  QueueEnvelope e;
  for (const auto& [name, value] : fields) {
    unsigned bit = 0;
    bool ok = true;
    if (name == "v") {
      bit = kV;
      int version = 0;
      ok = parse_decimal(value, version) && version == kVersion;
    } else if (name == "method") {
      bit = kMethod;
      e.method = value;
      ok = !value.empty() && value[0] == '/';
    } else if (name == "call_id") {
      bit = kCallId;
      e.call_id = value;
      ok = !value.empty();
    } else if (name == "reply_to") {
      bit = kReplyTo;
      e.reply_to = value;
      ok = !value.empty();
    } else if (name == "frontend") {
      bit = kFrontend;
      e.frontend = value;
    } else if (name == "deadline_ms") {
      bit = kDeadline;
      ok = parse_decimal(value, e.deadline_unix_ms) && e.deadline_unix_ms >= 0;
    } else if (name == "enqueued_ms") {
      bit = kEnqueued;
      ok = parse_decimal(value, e.enqueued_unix_ms) && e.enqueued_unix_ms >= 0;
    } else if (name == "attempt") {
      bit = kAttempt;
      ok = parse_decimal(value, e.attempt) && e.attempt >= 1;
    } else if (name == "meta") {
      bit = kMeta;
      auto meta = decode_metadata(value);
      ok = meta.has_value();
      if (ok) e.metadata = std::move(*meta);
    } else if (name == "body") {
      bit = kBody;
      e.body = value;
    } else {
      continue;  // a field of a later layout
    }
    if (!ok) return DecodeError{name + ": malformed"};
    if ((seen & bit) != 0) return DecodeError{name + ": repeated"};
    seen |= bit;
  }
  if ((seen & kRequired) != kRequired) {
    static constexpr std::pair<unsigned, const char*> kNames[] = {{kV, "v"},
                                                                  {kMethod, "method"},
                                                                  {kCallId, "call_id"},
                                                                  {kReplyTo, "reply_to"},
                                                                  {kDeadline, "deadline_ms"},
                                                                  {kMeta, "meta"},
                                                                  {kBody, "body"}};
    for (const auto& [bit, field] : kNames) {
      if ((seen & bit) == 0) return DecodeError{std::string(field) + ": missing"};
    }
  }
  return e;
}

std::optional<int64_t> QueueEnvelope::remaining_ms(int64_t now_unix_ms) const {
  if (deadline_unix_ms == 0) return std::nullopt;
  return deadline_unix_ms - now_unix_ms;
}

}  // namespace sluice::queue
