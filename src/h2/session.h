// An nghttp2 session that never touches a socket: bytes read are fed with receive(), bytes to
// write are pulled into an OutputQueue with send(). Both sides run with automatic WINDOW_UPDATE
// off: the connection window is consumed on arrival, a stream window only when the proxy says
// the bytes were handed on (consume_stream). Base of ServerSession and ClientSession.
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/h2/body_buffer.h"
#include "src/h2/closed_streams.h"
#include "src/h2/flood_guard.h"
#include "src/h2/header_block.h"
#include "src/h2/output_queue.h"
#include "src/h2/settings.h"
#include "src/h2/stream_events.h"
#include "src/stats/counter.h"

namespace sluice::h2 {

class Session {
 public:
  enum class Role { Server, Client };

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  virtual ~Session();

  // Feeds bytes read from the socket. Returns false on a connection-fatal error (the session
  // has queued a GOAWAY where possible; send() it, then close; unless flooded()).
  bool receive(const uint8_t* data, std::size_t length);
  // The fatal error was a flood by a peer that does not read what we send (nghttp2's ACK limit,
  // or too many frames queued for it): writing a GOAWAY would only queue behind them; close now.
  bool flooded() const { return flooded_; }
  // Pulls frames into `out` until it holds `high_water` bytes or nothing is left. Returns false
  // on a fatal error.
  bool send(OutputQueue& out, std::size_t high_water);

  bool want_read() const;
  bool want_write() const;
  // Nothing left to do: peer and we are both done (after GOAWAY, all streams closed).
  bool finished() const { return !want_read() && !want_write(); }

  // Stream-level credit: `n` bytes of `stream_id`'s received DATA were handed to the other side.
  void consume_stream(int32_t stream_id, std::size_t n);
  // The body of a stream got bytes, finished or trailers: make nghttp2 ask for DATA again.
  void resume_data(int32_t stream_id);
  void reset_stream(int32_t stream_id, uint32_t error_code);
  // Detaches the StreamEvents of a stream: later events for it are dropped and its DATA
  // provider ends the stream with a reset.
  void detach_stream(int32_t stream_id);
  StreamEvents* stream_events(int32_t stream_id) const;

  // GOAWAY with the last stream id the peer may rely on; the session finishes open streams.
  void terminate(uint32_t error_code);
  const std::string& last_error() const { return last_error_; }

  uint32_t remote_max_concurrent_streams() const;
  std::size_t open_streams() const { return open_streams_; }
  nghttp2_session* raw() const { return session_; }

  // Frames and bytes received/sent, for stats and tests.
  struct Counters {
    uint64_t bytes_received = 0;
    uint64_t data_bytes_received = 0;
    uint64_t data_bytes_sent = 0;
    uint64_t resets_received = 0;
    uint64_t resets_sent = 0;
    uint64_t goaways_received = 0;
    uint64_t frames_received = 0;         // complete frames (a byte dribble does not count)
    uint64_t stream_frames_received = 0;  // HEADERS and DATA (what resets gRPC's ping strikes)
  };
  const Counters& counters() const { return counters_; }
  // Also counts RST_STREAM frames received/sent into these (live stats); either may be null.
  void set_reset_stats(Counter* received, Counter* sent) {
    reset_rx_stat_ = received;
    reset_tx_stat_ = sent;
  }

 protected:
  // `flood` applies to the server role only: the upstream is trusted, clients are not.
  Session(Role role, const Settings& settings, const FloodLimits& flood = {});
  // Submits the initial SETTINGS and connection window; called by the derived constructor.
  void start();

  // Hooks for the derived class.
  virtual StreamEvents* on_new_stream(int32_t stream_id) = 0;  // server: request HEADERS
  virtual void on_goaway(int32_t last_stream_id, uint32_t error_code) = 0;
  virtual void on_remote_settings() = 0;
  virtual void on_stream_opened() {}
  // A request stream was refused (REFUSED_STREAM) before it reached on_new_stream().
  virtual void on_stream_refused() {}
  virtual void on_stream_closed() {}

  nghttp2_session* session_ = nullptr;
  Role role_;
  Settings settings_;
  std::string last_error_;
  Counters counters_;
  std::size_t open_streams_ = 0;
  // Stream id -> its events. Streams are registered here (not as nghttp2 stream user data) so
  // that detaching works even before nghttp2 has opened the stream.
  boost::unordered_flat_map<int32_t, StreamEvents*> streams_;
  mutable int32_t cached_id_ = 0;  // last stream looked up (0: none)
  mutable StreamEvents* cached_events_ = nullptr;

  void add_stream(int32_t stream_id, StreamEvents* events);
  // Returns whether the stream was registered.
  bool remove_stream(int32_t stream_id);

 private:
  // Adds SETTINGS_MAX_CONCURRENT_STREAMS to the first SETTINGS frame (server role, see start()).
  void append_initial_settings(OutputQueue& out, const uint8_t* frame, std::size_t n);
  // nghttp2_session_mem_recv() with the error handling of receive().
  bool feed(const uint8_t* data, std::size_t length);
  // RFC 9113 5.1: the connection error for a DATA or HEADERS frame on client stream `id` if it
  // is closed and the frame cannot be a race with our RST_STREAM; 0 to let nghttp2 decide.
  uint32_t closed_stream_error(int32_t id, bool headers);
  // RFC 9113 5.3.1: a PRIORITY frame making a stream depend on itself is a stream error
  // PROTOCOL_ERROR (nghttp2 does not look at PRIORITY frames once priorities are off).
  void reset_self_dependent_streams();

  bool advertise_max_streams_ = false;  // the next frame out is the initial SETTINGS
  FloodLimits flood_limits_;
  std::optional<FloodGuard> flood_guard_;  // server role only
  bool flooded_ = false;
  // Server role: the client's closed streams, for frames nghttp2 would ignore (RFC 9113 5.1).
  std::optional<ClosedStreams> closed_streams_;
  int32_t last_reset_sent_ = 0;      // stream of the last RST_STREAM we sent...
  int32_t last_reset_received_ = 0;  // ...and received (nghttp2 closes the stream right after)
  // Frames written by us, not nghttp2, sent before its next ones: RST_STREAM for an idle
  // stream, which nghttp2_submit_rst_stream() silently drops.
  std::vector<uint8_t> own_frames_;

  friend struct SessionCallbacks;
  OutputQueue* output_ = nullptr;  // set while send() runs (for the send_data callback)
  Counter* reset_rx_stat_ = nullptr;
  Counter* reset_tx_stat_ = nullptr;
};

// nghttp2_data_source_read_callback shared by both roles: reads from StreamEvents::outgoing().
nghttp2_data_provider body_provider();

// A per-thread scratch array for building name/value lists without allocating per call.
std::vector<nghttp2_nv>& nv_scratch();

}  // namespace sluice::h2
