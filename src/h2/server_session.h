// The downstream (client-facing) HTTP/2 session: accepts requests, sends responses.
#pragma once

#include <functional>

#include "src/h2/session.h"

namespace sluice::h2 {

class ServerSession final : public Session {
 public:
  // Told about new streams and connection-level events; implemented by the connection.
  class Owner {
   public:
    virtual ~Owner() = default;
    // A request stream opened. Return nullptr to refuse it (REFUSED_STREAM).
    virtual StreamEvents* on_new_stream(int32_t stream_id) = 0;
    virtual void on_stream_count_changed() {}
    // A stream beyond SETTINGS_MAX_CONCURRENT_STREAMS was refused (REFUSED_STREAM).
    virtual void on_stream_refused() {}
    // A SETTINGS frame from the client arrived (the first one completes the preface).
    virtual void on_client_settings() {}
  };

  ServerSession(Owner& owner, const Settings& settings, const FloodLimits& flood = {});

  // Response headers; `with_body` false sends them with END_STREAM (trailers-only).
  bool submit_response(int32_t stream_id, const HeaderBlock& headers, bool with_body);
  // Two-phase graceful shutdown (RFC 9113 6.8): first a GOAWAY with the maximum stream id...
  void submit_shutdown_notice();
  // ...then, about one RTT later, the real one with the last stream id we will process.
  void submit_goaway(uint32_t error_code = NGHTTP2_NO_ERROR);
  int32_t last_stream_id() const;

 private:
  // Session
  StreamEvents* on_new_stream(int32_t stream_id) override {
    return owner_.on_new_stream(stream_id);
  }
  void on_goaway(int32_t, uint32_t) override {}
  void on_remote_settings() override { owner_.on_client_settings(); }
  void on_stream_opened() override { owner_.on_stream_count_changed(); }
  void on_stream_closed() override { owner_.on_stream_count_changed(); }
  void on_stream_refused() override { owner_.on_stream_refused(); }

  Owner& owner_;
};

}  // namespace sluice::h2
