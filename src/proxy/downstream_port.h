// What a ProxyStream needs from the client connection it lives on: the HTTP/2 session its
// downstream stream belongs to, a way to get what it queued there written, and a way to say it
// is done. Implemented by DownstreamConnection; by an in-memory session pair in tests.
#pragma once

#include <cstdint>

namespace sluice {

namespace h2 {
class ServerSession;
}

class DownstreamPort {
 public:
  virtual ~DownstreamPort() = default;
  virtual h2::ServerSession& session() = 0;
  // Asks for the session's pending frames to be written soon (coalesced per event-loop turn).
  virtual void schedule_flush() = 0;
  // The stream closed and reported its outcome; the port destroys it after the current
  // callback returns. `premature`: the client reset it before any response (rapid reset).
  virtual void stream_finished(int32_t stream_id, bool premature) = 0;
};

}  // namespace sluice
