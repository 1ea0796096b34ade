#include "src/queue/redis_error.h"

namespace sluice::queue {

const char* redis_error_kind_name(RedisErrorKind kind) {
  switch (kind) {
    case RedisErrorKind::NotConnected:
      return "not connected";
    case RedisErrorKind::Overloaded:
      return "overloaded";
    case RedisErrorKind::ConnectionLost:
      return "connection lost";
    case RedisErrorKind::Timeout:
      return "timeout";
    case RedisErrorKind::Server:
      return "redis error";
    case RedisErrorKind::BadReply:
      return "unexpected reply";
    case RedisErrorKind::BadArgument:
      return "bad argument";
  }
  return "?";
}

std::string_view RedisError::code() const {
  if (kind != RedisErrorKind::Server) return {};
  const std::string_view m(message);
  return m.substr(0, m.find(' '));
}

std::string RedisError::to_string() const {
  if (kind == RedisErrorKind::Server) return message;
  std::string s = redis_error_kind_name(kind);
  if (!message.empty()) {
    s += ": ";
    s += message;
  }
  return s;
}

}  // namespace sluice::queue
