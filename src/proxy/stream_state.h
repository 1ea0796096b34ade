// The lifecycle of one proxied request (ProxyStream), as an explicit state machine:
//
//   ReceivingHeaders --headers complete--> Filtering --admitted--> Connecting --submitted-->
//   Forwarding --response headers--> Responding
//
//   Filtering, Connecting, Forwarding, Responding --answered locally or reset--> Local
//   ReceivingHeaders --header list too large--> Local
//   Forwarding --upstream never saw it, sent again--> Connecting
//   any state but Closed --downstream stream closed--> Closed
//
// Closed is final. Every other move is a bug: ProxyStream::transition() refuses it, loudly in a
// debug build (abort) and with an error log plus a counter in a release build.
#pragma once

#include <cstdint>

namespace sluice {

enum class StreamState : uint8_t {
  ReceivingHeaders,  // the request's header block is arriving
  Filtering,         // headers complete: in the filter chain (possibly queued)
  Connecting,        // admitted: waiting for an upstream link to be ready
  Forwarding,        // the request stream is open upstream; no response headers yet
  Responding,        // response headers went to the client; body and trailers follow
  Local,             // answered locally or reset: nothing more goes to or comes from upstream
  Closed,            // the downstream stream closed and the outcome was reported
};

inline constexpr int kStreamStateCount = 7;

const char* to_string(StreamState state);
// Whether `from` -> `to` is a move of the diagram above. A move to the same state is not.
bool is_legal_transition(StreamState from, StreamState to);

}  // namespace sluice
