// What a consumer pushes to a reply list for one call, and what the frontend returns to the
// caller: the upstream's response headers, body and trailers unchanged, plus the status in
// plain fields (for the frontend's stats, and for replies the consumer made itself, which have
// no headers: the frontend answers those trailers-only).
//
// A list element is one byte string, so the reply is a sequence of netstrings, name then value
// (metadata_codec.h), readable with `redis-cli LRANGE`:
//   "1:v,1:1,7:call_id,2:42,6:status,1:0,..."
// Fields: v, call_id, consumer (which consumer answered), attempt (Redis's delivery count of
// the entry that produced this reply), status (grpc-status), message (grpc-message, not
// percent-encoded), headers and trailers (netstring metadata), body. Unknown fields are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/queue/metadata_codec.h"
#include "src/queue/queue_envelope.h"
#include "src/queue/result.h"

namespace sluice::queue {

struct QueueReply {
  static constexpr int kVersion = 1;

  std::string call_id;
  std::string consumer;
  uint32_t attempt = 1;
  int grpc_status = 0;
  std::string grpc_message;
  Metadata headers;   // as the upstream sent them (":status" included); empty for local replies
  std::string body;   // response body bytes as received
  Metadata trailers;  // as the upstream sent them (grpc-status among them)

  std::string encode() const;
  static Result<QueueReply, DecodeError> decode(std::string_view bytes);

  friend bool operator==(const QueueReply&, const QueueReply&) = default;
};

}  // namespace sluice::queue
