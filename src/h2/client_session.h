// The upstream (service-facing) HTTP/2 session: sends requests, receives responses.
#pragma once

#include "src/h2/session.h"

namespace sluice::h2 {

class ClientSession final : public Session {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // The peer sent GOAWAY: streams above `last_stream_id` were not processed.
    virtual void on_goaway(int32_t last_stream_id, uint32_t error_code) = 0;
    // The peer's SETTINGS arrived (SETTINGS_MAX_CONCURRENT_STREAMS may have changed).
    virtual void on_remote_settings() = 0;
    virtual void on_stream_count_changed() {}
  };

  ClientSession(Owner& owner, const Settings& settings);

  // Submits a request; `events` receives the response. Returns the stream id or a negative
  // nghttp2 error. `with_body` false sends END_STREAM on HEADERS.
  int32_t submit_request(const HeaderBlock& headers, bool with_body, StreamEvents* events);
  int32_t submit_request(const std::vector<nghttp2_nv>& nv, bool with_body, StreamEvents* events);
  bool remote_settings_received() const { return settings_received_; }
  // Queues a PING (keepalive); the peer's ACK arrives as ordinary input.
  void ping();
  // The request's HEADERS were handed to the output (nghttp2 opened the stream). A request that
  // was submitted but not sent yet (queued behind the peer's stream limit, or not flushed when
  // the connection died) never reached the peer.
  bool request_sent(int32_t stream_id) const;

 private:
  // Session
  StreamEvents* on_new_stream(int32_t) override { return nullptr; }
  void on_goaway(int32_t last_stream_id, uint32_t error_code) override {
    owner_.on_goaway(last_stream_id, error_code);
  }
  void on_remote_settings() override {
    settings_received_ = true;
    owner_.on_remote_settings();
  }
  void on_stream_closed() override { owner_.on_stream_count_changed(); }

  Owner& owner_;
  bool settings_received_ = false;
};

}  // namespace sluice::h2
