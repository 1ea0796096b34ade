// One proxied request: the downstream stream, the filter chain deciding its admission, and the
// upstream stream it is forwarded on. Owns both bodies in flight, so flow-control credit is
// returned to one side only when bytes were handed to the other (read pacing).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "filters/active_chain.h"
#include "filters/filter.h"
#include "filters/filter_chain.h"
#include "src/h2/body_buffer.h"
#include "src/h2/header_block.h"
#include "src/h2/stream_events.h"

namespace sluice {

class DownstreamConnection;
class UpstreamConnection;
struct ClusterStats;

class ProxyStream final : public ChainCallbacks {
 public:
  ProxyStream(DownstreamConnection& downstream, int32_t stream_id);
  ~ProxyStream() override;
  ProxyStream(const ProxyStream&) = delete;
  ProxyStream& operator=(const ProxyStream&) = delete;

  h2::StreamEvents* downstream_events() { return &downstream_side_; }
  h2::StreamEvents* upstream_events() { return &upstream_side_; }
  int32_t downstream_id() const { return downstream_id_; }

  // From the upstream pool and connection.
  // The pool chose `conn` for this stream; it may still be connecting.
  void on_upstream_assigned(UpstreamConnection& conn);
  // `conn` is ready: submit the request now.
  void on_upstream_ready();
  // No upstream connection could be had (connect failure, backoff, GOAWAY).
  void on_upstream_unavailable(const std::string& message);
  // The upstream connection died under an open stream.
  void on_upstream_connection_lost(const std::string& message);

  // From the downstream connection.
  // The connection is gone without closing this stream (socket error, hard close).
  void on_downstream_gone();
  // Ends the stream now with `grpc_status` (trailers-only if nothing was sent yet) or a reset.
  void terminate(EndReason reason, int grpc_status, const std::string& message);

  // For the connection's timeouts: when the request's header block started, while it is still
  // incomplete; and since when a response has been waiting on a closed client window.
  std::optional<TimePoint> headers_pending_since() const {
    return phase_ == Phase::Headers ? std::optional<TimePoint>(created_at_) : std::nullopt;
  }
  std::optional<TimePoint> stalled_since() const {
    return response_started_ && !response_body_.empty() && phase_ != Phase::Closed
               ? std::optional<TimePoint>(last_progress_)
               : std::nullopt;
  }

  // ChainCallbacks
  const RequestInfo& request() const override { return info_; }
  Dispatcher& dispatcher() override;
  void admit() override;
  void shed(const LocalReply& reply, int filter_index) override;

 private:
  enum class Phase {
    Headers,    // receiving request headers
    Filtering,  // in the filter chain (possibly queued)
    Upstream,   // admitted: waiting for / talking to the upstream
    Local,      // answered locally (shed, unavailable, deadline); nothing goes upstream
    Closed,     // downstream stream closed
  };

  class DownstreamSide final : public h2::StreamEvents {
   public:
    explicit DownstreamSide(ProxyStream& s) : s_(s) {}
    void on_headers_begin(bool initial) override;
    uint32_t on_header(std::string_view name, std::string_view value,
                       bool never_indexed) override;
    void on_headers_end(bool end_stream) override;
    void on_data(const uint8_t* data, std::size_t length) override;
    void on_data_end() override;
    void on_end_stream_sent() override;
    void on_close(uint32_t error_code) override;
    h2::BodyBuffer* outgoing() override;
    void on_outgoing_sent(std::size_t n) override;

   private:
    ProxyStream& s_;
  };
  class UpstreamSide final : public h2::StreamEvents {
   public:
    explicit UpstreamSide(ProxyStream& s) : s_(s) {}
    void on_headers_begin(bool initial) override;
    uint32_t on_header(std::string_view name, std::string_view value,
                       bool never_indexed) override;
    void on_headers_end(bool end_stream) override;
    void on_data(const uint8_t* data, std::size_t length) override;
    void on_data_end() override;
    void on_close(uint32_t error_code) override;
    h2::BodyBuffer* outgoing() override;
    void on_outgoing_sent(std::size_t n) override;

   private:
    ProxyStream& s_;
  };

  void on_request_headers_complete(bool end_stream);
  void on_deadline();
  void submit_upstream();
  void on_response_headers(bool end_stream);
  void on_upstream_closed(uint32_t error_code, const std::string& detail);
  // Answers locally with a trailers-only gRPC response or an HTTP error.
  void send_local_reply(int grpc_status, int http_status, const std::string& message,
                        std::optional<Duration> retry_pushback);
  // Resets the upstream stream (CANCEL) and forgets it.
  void cancel_upstream();
  void detach_upstream();
  void reset_downstream(uint32_t error_code);
  void finish();  // downstream stream closed: report the outcome, release everything
  void set_reason(EndReason r) {
    if (!reason_) reason_ = r;
  }
  Duration queue_wait_now(TimePoint now) const;
  void add_queue_header(h2::HeaderBlock& headers) const;
  ClusterStats& cluster_stats() const;

  DownstreamConnection& down_;
  const int32_t downstream_id_;
  DownstreamSide downstream_side_{*this};
  UpstreamSide upstream_side_{*this};
  Phase phase_ = Phase::Headers;
  TimePoint created_at_;
  TimePoint last_progress_;  // last time response bytes went to the client

  // Request.
  h2::HeaderBlock request_headers_;  // as received, hop-by-hop already dropped
  h2::HeaderBlock request_trailers_;
  bool receiving_request_trailers_ = false;
  std::size_t request_header_bytes_ = 0;
  bool request_headers_too_large_ = false;
  RequestInfo info_;
  std::optional<Duration> timeout_;  // grpc-timeout as received
  h2::BodyBuffer request_body_;
  std::unique_ptr<ActiveChain> chain_;
  std::unique_ptr<Timer> deadline_timer_;

  // Upstream.
  UpstreamConnection* up_conn_ = nullptr;  // assigned connection (pending or active)
  int32_t upstream_id_ = -1;               // open upstream stream, or -1
  TimePoint admitted_at_{};
  Duration queue_wait_{};
  std::optional<Duration> rtt_;
  bool got_final_response_ = false;
  bool receiving_response_trailers_ = false;
  h2::HeaderBlock response_headers_;
  h2::HeaderBlock response_trailers_;
  std::optional<int> upstream_grpc_status_;
  h2::BodyBuffer response_body_;

  // Downstream response.
  bool response_started_ = false;   // response HEADERS submitted downstream
  bool response_end_sent_ = false;  // our END_STREAM went out
  int final_grpc_status_ = -1;
  std::optional<EndReason> reason_;
  uint64_t request_bytes_ = 0;   // request body bytes received
  uint64_t response_bytes_ = 0;  // response body bytes sent to the client
  uint32_t reset_code_ = 0;
  int shed_by_ = -1;
};

}  // namespace sluice
