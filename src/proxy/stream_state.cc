#include "src/proxy/stream_state.h"

namespace sluice {

const char* to_string(StreamState state) {
  switch (state) {
    case StreamState::ReceivingHeaders:
      return "receiving_headers";
    case StreamState::Filtering:
      return "filtering";
    case StreamState::Connecting:
      return "connecting";
    case StreamState::Forwarding:
      return "forwarding";
    case StreamState::Responding:
      return "responding";
    case StreamState::Local:
      return "local";
    case StreamState::Closed:
      return "closed";
  }
  return "unknown";
}

bool is_legal_transition(StreamState from, StreamState to) {
  using S = StreamState;
  if (from == S::Closed || from == to) return false;
  if (to == S::Closed) return true;
  switch (from) {
    case S::ReceivingHeaders:
      return to == S::Filtering || to == S::Local;
    case S::Filtering:
      return to == S::Connecting || to == S::Local;
    case S::Connecting:
      return to == S::Forwarding || to == S::Local;
    case S::Forwarding:
      return to == S::Responding || to == S::Local || to == S::Connecting;
    case S::Responding:
      return to == S::Local;
    case S::Local:
    case S::Closed:
      return false;
  }
  return false;
}

}  // namespace sluice
