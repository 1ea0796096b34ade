// A blocking HTTP/1.1 client for sluice's own admin server, for `sluice admin`: container
// health checks and Kubernetes preStop hooks run it, in an image that has no curl, and
// Kubernetes httpGet hooks cannot POST.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/config/config.h"
#include "src/core/time.h"

namespace sluice {

// What one admin request came to. A probe must tell "answered 503" (sluice is draining) from
// "did not answer" (sluice is gone or stuck), so every way it can end is its own outcome.
struct AdminReply {
  enum class Outcome {
    kAnswered,     // an HTTP response arrived: see status and body
    kUnreachable,  // resolving or connecting failed (nothing listens, no such host)
    kTimedOut,     // no complete response within the timeout
    kBadResponse,  // the peer closed early or sent something that is not HTTP/1.1
  };
  Outcome outcome = Outcome::kUnreachable;
  unsigned status = 0;  // HTTP status when answered
  std::string reason;   // HTTP reason phrase when answered
  std::string body;     // response body when answered
  std::string error;    // what went wrong, for people, when not answered

  // Exit status 0 of `sluice admin`: only a 2xx answer counts as success.
  bool ok() const { return outcome == Outcome::kAnswered && status / 100 == 2; }
};

class AdminClient {
 public:
  // `timeout` bounds the whole exchange: resolve, connect, write, read.
  AdminClient(SocketAddress address, Duration timeout);

  // One request on a fresh connection (Connection: close). `method` is "GET" or "POST"; `target`
  // is the path with an optional query ("/stats?format=json"). Never throws for network errors.
  AdminReply request(std::string_view method, std::string_view target) const;

  // "host:port" or "[v6]:port", as in the config's admin.address; nullopt when malformed.
  static std::optional<SocketAddress> parse_address(std::string_view text);

 private:
  SocketAddress address_;
  Duration timeout_;
};

}  // namespace sluice
