// Why a Redis command did not give a value. The kind tells the caller what it may assume about
// the command's effect, which is what matters for XADD (not idempotent).
#pragma once

#include <string>
#include <string_view>

#include "src/queue/result.h"

namespace sluice::queue {

enum class RedisErrorKind {
  NotConnected,    // never sent (no connection, or the connection was closed): no effect
  Overloaded,      // never sent: too many commands in flight on the connection: no effect
  ConnectionLost,  // sent, then the connection dropped before the reply: it may have run
  Timeout,         // sent, no reply within its timeout (the connection is reset): it may have run
  Server,          // Redis answered with an error reply (-ERR, -NOGROUP, -BUSYGROUP ...)
  BadReply,        // Redis answered with a reply of an unexpected shape for the command
  BadArgument,     // refused before sending: the command's arguments are invalid
};

const char* redis_error_kind_name(RedisErrorKind kind);

struct RedisError {
  RedisErrorKind kind;
  std::string message;  // for Server: Redis's text, e.g. "NOGROUP No such key 's' ..."

  // The error code Redis put first in its message ("NOGROUP", "BUSYGROUP", "ERR"), or empty
  // when the error is not a Server error.
  std::string_view code() const;
  bool is_server(std::string_view redis_code) const {
    return kind == RedisErrorKind::Server && code() == redis_code;
  }
  // True when the command certainly had no effect in Redis (safe to retry or to answer the
  // caller "not enqueued").
  bool never_sent() const {
    return kind == RedisErrorKind::NotConnected || kind == RedisErrorKind::Overloaded ||
           kind == RedisErrorKind::BadArgument;
  }
  // "connection lost: EOF" / "NOGROUP No such key ...": for logs and gRPC messages.
  std::string to_string() const;
};

template <typename T>
using RedisResult = Result<T, RedisError>;

}  // namespace sluice::queue
