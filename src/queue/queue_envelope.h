// What a frontend puts in a stream entry for one unary call, and what a consumer reads back.
//
// Layout: one stream field per item, so `redis-cli XRANGE sluice:work - +` shows the call:
//   v            "1" (the layout version; a consumer refuses a version it does not know)
//   method       "/pkg.Service/Method"
//   call_id      the frontend's id for the call (matches the reply to its caller)
//   reply_to     the list key the reply is pushed to (redis_streams.h: one list per frontend)
//   frontend     the frontend instance's id, for logs
//   deadline_ms  absolute deadline, Unix time in ms (wall clock: the entry crosses machines;
//                the consumer turns it back into a grpc-timeout); "0": the caller set none
//   enqueued_ms  Unix time in ms when the frontend enqueued it (queue wait, lag)
//   attempt      the frontend's attempt number (1; a re-enqueued call says 2, ...). Redis's own
//                delivery count (XPENDING) is separate and covers consumer crashes
//   meta         request metadata as netstrings (metadata_codec.h), byte-exact, `-bin` included
//   body         the request body as received (gRPC length-prefixed messages), any bytes
// Unknown fields are ignored, so a newer frontend can add fields without a version bump.
// Wall-clock skew between machines shifts deadlines by the skew: keep clocks synced (NTP).
#pragma once

#include <cstdint>
#include <string>

#include "src/queue/metadata_codec.h"
#include "src/queue/redis_replies.h"
#include "src/queue/result.h"

namespace sluice::queue {

// Why a stream entry or reply could not be decoded.
struct DecodeError {
  std::string message;
};

struct QueueEnvelope {
  static constexpr int kVersion = 1;

  std::string method;
  std::string call_id;
  std::string reply_to;
  std::string frontend;
  int64_t deadline_unix_ms = 0;  // 0: no deadline
  int64_t enqueued_unix_ms = 0;
  uint32_t attempt = 1;
  Metadata metadata;
  std::string body;

  StreamFields encode() const;
  // Garbage gives a DecodeError naming the field, never a crash.
  static Result<QueueEnvelope, DecodeError> decode(const StreamFields& fields);

  // The time the call has left at `now_unix_ms` (negative: passed); nullopt without a deadline.
  std::optional<int64_t> remaining_ms(int64_t now_unix_ms) const;

  friend bool operator==(const QueueEnvelope&, const QueueEnvelope&) = default;
};

// Wall-clock Unix time in milliseconds (system_clock; not the steady clock used for timers).
int64_t unix_ms_now();

}  // namespace sluice::queue
