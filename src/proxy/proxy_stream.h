// One proxied request: the downstream stream, the filter chain deciding its admission, and the
// upstream stream it is forwarded on. Its lifecycle is the StreamState machine (stream_state.h);
// every change of state goes through transition(). It talks to the client connection and to
// the upstream only through its ports (StreamContext), and owns both bodies in flight, so
// flow-control credit is returned to one side only when bytes were handed to the other
// (read pacing, see PacedBody).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "filters/active_chain.h"
#include "filters/filter.h"
#include "filters/filter_chain.h"
#include "src/core/grpc_status.h"
#include "src/h2/header_block.h"
#include "src/h2/stream_events.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/paced_body.h"
#include "src/proxy/stream_context.h"
#include "src/proxy/stream_state.h"
#include "src/proxy/upstream_attachment.h"

namespace sluice {

struct ClusterStats;

class ProxyStream final : public ChainCallbacks, public UpstreamClient {
 public:
  ProxyStream(StreamContext& context, int32_t stream_id);
  ~ProxyStream() override;
  ProxyStream(const ProxyStream&) = delete;
  ProxyStream& operator=(const ProxyStream&) = delete;

  h2::StreamEvents* downstream_events() { return &downstream_side_; }
  int32_t downstream_id() const { return downstream_id_; }
  StreamState state() const { return state_; }

  // UpstreamClient
  void on_upstream_assigned(UpstreamLink& link) override;
  void on_upstream_ready() override;
  void on_upstream_unavailable(std::string_view message) override;
  void on_upstream_connection_lost(std::string_view message) override;
  h2::StreamEvents* upstream_events() override { return &upstream_side_; }

  // From the downstream connection.
  // The connection is gone without closing this stream (socket error, hard close).
  void on_downstream_gone();
  // Ends the stream now with `status` (trailers-only if nothing was sent yet) or a reset.
  void terminate(EndReason reason, GrpcStatus status, std::string_view message);

  // For the connection's timeouts: when the request's header block started, while it is still
  // incomplete; and since when a response has been waiting on a closed client window.
  std::optional<TimePoint> headers_pending_since() const {
    return state_ == StreamState::ReceivingHeaders ? std::optional<TimePoint>(created_at_)
                                                   : std::nullopt;
  }
  std::optional<TimePoint> stalled_since() const {
    return response_started_ && !response_body_.buffer().empty() && state_ != StreamState::Closed
               ? std::optional<TimePoint>(last_progress_)
               : std::nullopt;
  }

  // ChainCallbacks
  const RequestInfo& request() const override { return info_; }
  Dispatcher& dispatcher() override { return context_.dispatcher; }
  void admit() override;
  void shed(const LocalReply& reply, int filter_index) override;

  // Moves transition() refused since the process started (a release build survives them; a
  // debug build aborts on the first). Zero unless ProxyStream has a bug; tests assert it.
  static uint64_t illegal_transitions();

 private:
  // The client's side: its request arrives here, and credit for request bytes goes back to it.
  class DownstreamSide final : public h2::StreamEvents, public PacedBody::Sender {
   public:
    explicit DownstreamSide(ProxyStream& s) : s_(s) {}
    void on_headers_begin(bool initial) override;
    uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) override;
    void on_headers_end(bool end_stream) override;
    void on_data(const uint8_t* data, std::size_t length) override;
    void on_data_end() override;
    void on_end_stream_sent() override;
    void on_close(uint32_t error_code) override;
    h2::BodyBuffer* outgoing() override;
    void on_outgoing_sent(std::size_t n) override;
    // PacedBody::Sender
    void return_credit(std::size_t n) override;

   private:
    ProxyStream& s_;
  };
  // The upstream's side: its response arrives here, and credit for response bytes goes back.
  class UpstreamSide final : public h2::StreamEvents, public PacedBody::Sender {
   public:
    explicit UpstreamSide(ProxyStream& s) : s_(s) {}
    void on_headers_begin(bool initial) override;
    uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) override;
    void on_headers_end(bool end_stream) override;
    void on_data(const uint8_t* data, std::size_t length) override;
    void on_data_end() override;
    void on_close(uint32_t error_code) override;
    h2::BodyBuffer* outgoing() override;
    void on_outgoing_sent(std::size_t n) override;
    // PacedBody::Sender
    void return_credit(std::size_t n) override;

   private:
    ProxyStream& s_;
  };

  // Moves to `to`; refuses (and reports) a move the state machine does not have.
  void transition(StreamState to);
  // Local is where every early ending goes; several can happen to one stream.
  void enter_local();
  // Nothing more will be read from or sent to the upstream for this stream.
  bool answered() const { return state_ == StreamState::Local || state_ == StreamState::Closed; }
  TimePoint now() const { return context_.dispatcher.now(); }

  void on_request_headers_complete(bool end_stream);
  void on_deadline();
  void on_max_stream_duration();
  void submit_upstream();
  // The upstream provably never processed the request (REFUSED_STREAM, above a GOAWAY's last
  // stream id, never sent before its connection died or ran out of stream ids): sent again,
  // avoiding `failed`, at most kMaxRetries times while its body is still held; else the client
  // gets RST_STREAM(REFUSED_STREAM), which its gRPC library retries transparently.
  void on_upstream_unseen(std::string_view why, const UpstreamLink* failed);
  void refuse_downstream(std::string_view why);
  void on_response_headers(bool end_stream);
  // The upstream's answer began: its first message, or the stream's end without one. Takes the
  // latency sample (rtt_) and tells the filters (ResponseStart); later calls do nothing.
  void on_answer(bool message);
  RequestOutcome outcome(TimePoint now) const;
  // The upstream stream ended early: before response headers the client gets `status`
  // (trailers-only), after them a reset with `error_code`.
  void on_upstream_closed(uint32_t error_code, GrpcStatus status, const std::string& detail);
  // Answers locally (make_local_response), or resets if a response already started.
  void send_local_reply(GrpcStatus status, int http_status, std::string_view message,
                        std::optional<Duration> retry_pushback);
  // Resets the upstream stream (CANCEL) and lets go of the link.
  void cancel_upstream() { upstream_.reset(); }
  void reset_downstream(uint32_t error_code);
  void finish();  // downstream stream closed: report the outcome, release everything
  void set_reason(EndReason r) {
    if (!reason_) reason_ = r;
  }
  Duration queue_wait_now(TimePoint now) const;
  void add_queue_header(h2::HeaderBlock& headers) const;
  ClusterStats& cluster_stats() const;
  void write_access_log(const RequestOutcome& outcome, TimePoint now) const;

  StreamContext& context_;
  const int32_t downstream_id_;
  DownstreamSide downstream_side_{*this};
  UpstreamSide upstream_side_{*this};
  StreamState state_ = StreamState::ReceivingHeaders;
  TimePoint created_at_;
  TimePoint last_progress_;  // last time response bytes went to the client

  // Request.
  h2::HeaderBlock request_headers_;  // as received, hop-by-hop already dropped
  h2::HeaderBlock request_trailers_;
  struct RequestBlockParse {
    bool trailers = false;   // the block being received is the request's trailers
    bool too_large = false;  // over the listener's header limits: stored no more of it
    std::size_t bytes = 0;   // HPACK size of the fields so far (name + value + 32 each)
  } request_parse_;
  RequestInfo info_;
  std::optional<Duration> timeout_;           // grpc-timeout as received
  PacedBody request_body_{downstream_side_};  // client -> upstream
  // The listener's chain and rules as of the request's headers: kept (with the filters' state)
  // until the stream is gone, whatever a reload publishes meanwhile. Declared before chain_,
  // which it outlives.
  std::shared_ptr<const ListenerSnapshot> snapshot_;
  std::unique_ptr<ActiveChain> chain_;
  std::unique_ptr<Timer> deadline_timer_;
  std::unique_ptr<Timer> max_duration_timer_;  // clusters[].max_stream_duration, no grpc-timeout

  // Upstream.
  static constexpr uint8_t kMaxRetries = 2;
  // Added to every answer the client gets: the queue wait in microseconds (one the upstream
  // sent is dropped).
  static constexpr std::string_view kQueueHeader = "x-sluice-queue-us";
  uint8_t retries_ = 0;  // times the request was sent again (on_upstream_unseen)
  // The port of the cluster (or queue) the snapshot names, found when the request is admitted;
  // set from then on (every use of the upstream side follows admission).
  UpstreamPort* upstream_port_ = nullptr;
  UpstreamAttachment upstream_;
  std::optional<TimePoint> admitted_at_;  // set when every filter passed
  Duration queue_wait_{};
  std::optional<Duration> rtt_;  // admission -> the answer began
  struct ResponseBlockParse {
    bool final_seen = false;  // a non-1xx response HEADERS arrived
    bool trailers = false;    // the block being received is the response's trailers
  } response_parse_;
  h2::HeaderBlock response_headers_;
  h2::HeaderBlock response_trailers_;
  std::optional<int> upstream_grpc_status_;
  PacedBody response_body_{upstream_side_};  // upstream -> client

  // Downstream response.
  bool response_started_ = false;  // response HEADERS submitted downstream
  // A HEAD request (RFC 9110 9.3.2): its response is the headers alone, with END_STREAM, and
  // whatever the upstream sends after its response headers is dropped.
  bool head_ = false;
  bool response_end_sent_ = false;  // our END_STREAM went out
  int final_grpc_status_ = -1;
  std::optional<EndReason> reason_;
  uint32_t reset_code_ = 0;
  int shed_by_ = -1;
};

}  // namespace sluice
