#include "src/proxy/proxy_stream.h"

#include <nghttp2/nghttp2.h>

#include <string>

#include "src/admin/access_log.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/downstream_connection.h"
#include "src/proxy/grpc_util.h"
#include "src/proxy/listener_context.h"
#include "src/proxy/upstream_connection.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace {
constexpr std::string_view kQueueHeader = "x-sluice-queue-us";

std::string ms_string(Duration d) { return std::to_string(to_us(d) / 1000) + "ms"; }
}  // namespace

ProxyStream::ProxyStream(DownstreamConnection& downstream, int32_t stream_id)
    : down_(downstream), downstream_id_(stream_id), created_at_(LoopTime::now()) {}

ProxyStream::~ProxyStream() = default;

Dispatcher& ProxyStream::dispatcher() { return down_.worker().dispatcher(); }

ClusterStats& ProxyStream::cluster_stats() const {
  return down_.worker().pool(down_.listener().cluster_index).stats();
}

Duration ProxyStream::queue_wait_now(TimePoint now) const {
  if (admitted_at_ != TimePoint{}) return queue_wait_;
  return now - info_.headers_complete;
}

void ProxyStream::add_queue_header(h2::HeaderBlock& headers) const {
  headers.add(kQueueHeader, std::to_string(to_us(queue_wait_now(LoopTime::now()))),
              /*never_index=*/true);
}

// ---- Downstream side: the client's request ----

void ProxyStream::DownstreamSide::on_headers_begin(bool initial) {
  s_.receiving_request_trailers_ = !initial;
}

uint32_t ProxyStream::DownstreamSide::on_header(std::string_view name, std::string_view value,
                                                bool never_indexed) {
  const Http2Config& limits = s_.down_.listener().config.http2;
  h2::HeaderBlock& block =
      s_.receiving_request_trailers_ ? s_.request_trailers_ : s_.request_headers_;
  s_.request_header_bytes_ += name.size() + value.size() + 32;
  if (s_.request_headers_too_large_) return 0;
  if (block.size() >= limits.max_headers_count ||
      s_.request_header_bytes_ > limits.max_header_list_size) {
    // Keep reading the block (HPACK state must stay in sync) but store nothing more.
    s_.request_headers_too_large_ = true;
    return 0;
  }
  if (is_hop_by_hop_header(name, value)) return 0;
  block.add(name, value, never_indexed);
  return 0;
}

void ProxyStream::DownstreamSide::on_headers_end(bool end_stream) {
  if (!s_.receiving_request_trailers_) {
    s_.on_request_headers_complete(end_stream);
    return;
  }
  if (s_.phase_ == Phase::Local || s_.phase_ == Phase::Closed) return;
  s_.request_body_.set_trailers(std::move(s_.request_trailers_));
  if (s_.upstream_id_ >= 0) {
    s_.up_conn_->session().resume_data(s_.upstream_id_);
    s_.up_conn_->schedule_flush();
  }
}

void ProxyStream::DownstreamSide::on_data(const uint8_t* data, std::size_t length) {
  if (s_.phase_ == Phase::Local || s_.phase_ == Phase::Closed) {
    // Answered already: nobody reads this, keep the client's window open until it stops.
    s_.down_.session().consume_stream(s_.downstream_id_, length);
    return;
  }
  s_.request_bytes_ += length;
  // Stream credit is NOT returned here: only when the bytes go upstream (on_outgoing_sent of
  // the upstream side). A request waiting for admission thus stalls at one stream window.
  s_.request_body_.append(data, length);
  if (s_.upstream_id_ >= 0) {
    s_.up_conn_->session().resume_data(s_.upstream_id_);
    s_.up_conn_->schedule_flush();
  }
}

void ProxyStream::DownstreamSide::on_data_end() {
  if (s_.phase_ == Phase::Local || s_.phase_ == Phase::Closed) return;
  s_.request_body_.finish();
  if (s_.upstream_id_ >= 0) {
    s_.up_conn_->session().resume_data(s_.upstream_id_);
    s_.up_conn_->schedule_flush();
  }
}

void ProxyStream::DownstreamSide::on_end_stream_sent() {
  s_.response_end_sent_ = true;
  // RFC 9113 8.1: a complete response before the request is complete; RST_STREAM(NO_ERROR)
  // tells the client to stop sending.
  if (!s_.request_body_.finished()) s_.reset_downstream(NGHTTP2_NO_ERROR);
}

void ProxyStream::DownstreamSide::on_close(uint32_t error_code) {
  if (!s_.response_end_sent_) {
    s_.set_reason(EndReason::ClientReset);
    if (s_.reset_code_ == 0)
      s_.reset_code_ = error_code == 0 ? static_cast<uint32_t>(NGHTTP2_CANCEL) : error_code;
  }
  // Premature: the client reset before any response (Envoy's rapid-reset signal).
  const bool premature = error_code != 0 && !s_.response_started_;
  s_.cancel_upstream();
  s_.finish();
  s_.down_.stream_finished(s_.downstream_id_, premature);  // last: destroys the stream soon
}

h2::BodyBuffer* ProxyStream::DownstreamSide::outgoing() {
  return s_.response_started_ ? &s_.response_body_ : nullptr;
}

void ProxyStream::DownstreamSide::on_outgoing_sent(std::size_t n) {
  s_.last_progress_ = LoopTime::now();
  s_.response_bytes_ += n;
  // Response bytes reached the client's socket queue: now the upstream may send more.
  if (s_.upstream_id_ >= 0) {
    s_.up_conn_->session().consume_stream(s_.upstream_id_, n);
    s_.up_conn_->schedule_flush();
  }
}

void ProxyStream::on_request_headers_complete(bool end_stream) {
  const TimePoint now = LoopTime::now();
  ListenerContext& listener = down_.listener();
  listener.stats.downstream_rq_total.inc();
  info_.headers_complete = now;
  phase_ = Phase::Filtering;
  std::optional<std::string_view> content_type;
  std::optional<std::string_view> timeout;
  for (std::size_t i = 0; i < request_headers_.size(); ++i) {
    const std::string_view n = request_headers_.name(i);
    if (n == ":method") {
      info_.method = request_headers_.value(i);
    } else if (n == ":path") {
      info_.path = request_headers_.value(i);
    } else if (n == ":authority") {
      info_.authority = request_headers_.value(i);
    } else if (n == "content-type") {
      content_type = request_headers_.value(i);
    } else if (n == "grpc-timeout") {
      timeout = request_headers_.value(i);
    }
  }
  info_.is_grpc = content_type && is_grpc_content_type(*content_type);
  if (end_stream) request_body_.finish();

  if (request_headers_too_large_) {
    listener.stats.downstream_rq_headers_too_large_total.inc();
    set_reason(EndReason::Internal);
    send_local_reply(kGrpcResourceExhausted, 431,
                     "request header list too large (limit " +
                         std::to_string(listener.config.http2.max_header_list_size) + " bytes, " +
                         std::to_string(listener.config.http2.max_headers_count) + " fields)",
                     std::nullopt);
    return;
  }
  if (timeout) {
    timeout_ = parse_grpc_timeout(*timeout);
    if (timeout_) {
      info_.deadline = now + *timeout_;
      deadline_timer_ = dispatcher().create_timer([this] { on_deadline(); });
      deadline_timer_->arm(*timeout_);
    }
  }
  if (listener.chain) {
    chain_ = std::make_unique<ActiveChain>(*listener.chain, *this);
    chain_->start();
  } else {
    admit();
  }
}

// ---- Admission ----

void ProxyStream::admit() {
  if (phase_ != Phase::Filtering) return;  // answered meanwhile (deadline, client gone)
  admitted_at_ = LoopTime::now();
  queue_wait_ = admitted_at_ - info_.headers_complete;
  phase_ = Phase::Upstream;
  if (info_.deadline && admitted_at_ >= *info_.deadline) {
    on_deadline();
    return;
  }
  down_.worker().pool(down_.listener().cluster_index).assign(*this);
}

void ProxyStream::shed(const LocalReply& reply, int filter_index) {
  if (phase_ != Phase::Filtering) return;
  shed_by_ = filter_index;
  set_reason(EndReason::Shed);
  send_local_reply(reply.grpc_status, reply.http_status, reply.message, reply.retry_pushback);
}

void ProxyStream::on_deadline() {
  terminate(EndReason::DeadlineExceeded, kGrpcDeadlineExceeded,
            "deadline exceeded (grpc-timeout " + ms_string(timeout_.value_or(Duration{})) +
                (phase_ == Phase::Filtering ? ", while waiting for admission)" : ")"));
}

// ---- Upstream ----

void ProxyStream::on_upstream_assigned(UpstreamConnection& conn) { up_conn_ = &conn; }

void ProxyStream::on_upstream_ready() {
  if (phase_ != Phase::Upstream || up_conn_ == nullptr) return;
  submit_upstream();
}

void ProxyStream::submit_upstream() {
  const TimePoint now = LoopTime::now();
  if (info_.deadline && now >= *info_.deadline) {
    on_deadline();
    return;
  }
  // Forward the request headers as received (hop-by-hop ones were never stored), except that
  // the upstream gets the time the caller has left, not the original timeout.
  auto& nv = h2::nv_scratch();
  nv.clear();
  request_headers_.append_nv(nv, "grpc-timeout");
  std::string remaining;
  if (info_.deadline) {
    remaining = format_grpc_timeout(*info_.deadline - now);
    nv.push_back(h2::HeaderBlock::make_nv("grpc-timeout", remaining, /*never_index=*/true));
  }
  const bool with_body =
      !(request_body_.finished() && request_body_.empty() && !request_body_.trailers());
  const int32_t id = up_conn_->session().submit_request(nv, with_body, upstream_events());
  if (id < 0) {
    up_conn_->remove_stream(this);
    up_conn_ = nullptr;
    on_upstream_unavailable(std::string("cannot open upstream stream: ") + nghttp2_strerror(id));
    return;
  }
  upstream_id_ = id;
  ClusterStats& cs = cluster_stats();
  cs.upstream_rq_total.inc();
  cs.upstream_rq_active.add(1);
  up_conn_->schedule_flush();
}

void ProxyStream::on_upstream_unavailable(const std::string& message) {
  up_conn_ = nullptr;
  if (phase_ != Phase::Upstream) return;
  set_reason(EndReason::UpstreamUnavailable);
  send_local_reply(kGrpcUnavailable, 503, message, std::nullopt);
}

void ProxyStream::on_upstream_connection_lost(const std::string& message) {
  up_conn_ = nullptr;
  if (upstream_id_ >= 0) {
    upstream_id_ = -1;
    cluster_stats().upstream_rq_active.sub(1);
  }
  if (response_started_ && response_body_.finished()) return;  // all received: just flushing
  cluster_stats().upstream_rq_reset_total.inc();
  on_upstream_closed(NGHTTP2_INTERNAL_ERROR, "upstream connection lost: " + message);
}

void ProxyStream::UpstreamSide::on_headers_begin(bool initial) {
  (void)initial;
  if (!s_.got_final_response_) {
    s_.response_headers_.clear();
    s_.receiving_response_trailers_ = false;
  } else {
    s_.response_trailers_.clear();
    s_.receiving_response_trailers_ = true;
  }
}

uint32_t ProxyStream::UpstreamSide::on_header(std::string_view name, std::string_view value,
                                              bool never_indexed) {
  if (is_hop_by_hop_header(name, value)) return 0;
  if (name == "grpc-status") s_.upstream_grpc_status_ = parse_grpc_status(value);
  if (name == kQueueHeader) return 0;  // ours to set
  (s_.receiving_response_trailers_ ? s_.response_trailers_ : s_.response_headers_)
      .add(name, value, never_indexed);
  return 0;
}

void ProxyStream::UpstreamSide::on_headers_end(bool end_stream) {
  if (!s_.receiving_response_trailers_) {
    const auto status = s_.response_headers_.find(":status");
    if (status && status->size() == 3 && (*status)[0] == '1') return;  // 1xx: wait for final
    s_.got_final_response_ = true;
    s_.on_response_headers(end_stream);
    return;
  }
  if (s_.phase_ != Phase::Upstream) return;
  s_.final_grpc_status_ = s_.upstream_grpc_status_.value_or(-1);
  s_.cluster_stats().count_grpc_status(s_.final_grpc_status_);
  s_.response_body_.set_trailers(std::move(s_.response_trailers_));
  s_.down_.session().resume_data(s_.downstream_id_);
  s_.down_.schedule_flush();
}

void ProxyStream::on_response_headers(bool end_stream) {
  rtt_ = LoopTime::now() - admitted_at_;
  cluster_stats().upstream_rtt_us.record(static_cast<uint64_t>(to_us(*rtt_)));
  if (phase_ != Phase::Upstream) return;
  add_queue_header(response_headers_);
  if (end_stream) {  // trailers-only response
    response_body_.finish();
    final_grpc_status_ = upstream_grpc_status_.value_or(-1);
    cluster_stats().count_grpc_status(final_grpc_status_);
  }
  response_started_ = true;
  down_.session().submit_response(downstream_id_, response_headers_, !end_stream);
  down_.schedule_flush();
}

void ProxyStream::UpstreamSide::on_data(const uint8_t* data, std::size_t length) {
  if (s_.phase_ != Phase::Upstream || !s_.response_started_) {
    s_.up_conn_->session().consume_stream(s_.upstream_id_, length);
    return;
  }
  if (s_.response_body_.empty()) s_.last_progress_ = LoopTime::now();  // a wait starts
  s_.response_body_.append(data, length);
  s_.down_.session().resume_data(s_.downstream_id_);
  s_.down_.schedule_flush();
}

void ProxyStream::UpstreamSide::on_data_end() {
  if (s_.phase_ != Phase::Upstream) return;
  if (!s_.response_body_.finished()) {
    // A response that ends without trailers: gRPC calls that an error; pass it on as is.
    s_.cluster_stats().count_grpc_status(s_.upstream_grpc_status_.value_or(-1));
  }
  s_.response_body_.finish();
  s_.down_.session().resume_data(s_.downstream_id_);
  s_.down_.schedule_flush();
}

void ProxyStream::UpstreamSide::on_close(uint32_t error_code) {
  ClusterStats& cs = s_.cluster_stats();
  cs.upstream_rq_active.sub(1);
  cs.upstream_rq_time_us.record(static_cast<uint64_t>(to_us(LoopTime::now() - s_.admitted_at_)));
  if (s_.up_conn_ != nullptr) s_.up_conn_->remove_stream(&s_);
  const bool complete = s_.response_body_.finished();
  UpstreamConnection* conn = s_.up_conn_;
  s_.up_conn_ = nullptr;
  s_.upstream_id_ = -1;
  (void)conn;
  if (error_code == NGHTTP2_NO_ERROR && complete) return;
  cs.upstream_rq_reset_total.inc();
  s_.on_upstream_closed(
      error_code, std::string("upstream reset the stream (") + h2_error_name(error_code) + ")");
}

h2::BodyBuffer* ProxyStream::UpstreamSide::outgoing() { return &s_.request_body_; }

void ProxyStream::UpstreamSide::on_outgoing_sent(std::size_t n) {
  // Request bytes were handed to the upstream: only now may the client send more.
  s_.down_.session().consume_stream(s_.downstream_id_, n);
  s_.down_.schedule_flush();
}

void ProxyStream::on_upstream_closed(uint32_t error_code, const std::string& detail) {
  if (phase_ != Phase::Upstream) return;
  set_reason(EndReason::UpstreamReset);
  if (!response_started_) {
    send_local_reply(kGrpcUnavailable, 502, detail + " before response headers", std::nullopt);
    return;
  }
  reset_downstream(error_code == NGHTTP2_NO_ERROR ? static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR)
                                                  : error_code);
}

// ---- Local replies, resets, teardown ----

void ProxyStream::send_local_reply(int grpc_status, int http_status, const std::string& message,
                                   std::optional<Duration> retry_pushback) {
  if (phase_ == Phase::Closed) return;
  cancel_upstream();
  if (response_started_) {
    phase_ = Phase::Local;
    reset_downstream(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  phase_ = Phase::Local;
  request_body_.discard();
  h2::HeaderBlock h;
  if (info_.is_grpc) {
    h.add(":status", "200");
    h.add("content-type", "application/grpc");
    h.add("grpc-status", std::to_string(grpc_status));
    h.add("grpc-message", percent_encode_grpc_message(message));
    if (retry_pushback) {
      h.add("grpc-retry-pushback-ms", std::to_string(to_us(*retry_pushback) / 1000));
    }
    add_queue_header(h);
    final_grpc_status_ = grpc_status;
    response_started_ = true;
    down_.session().submit_response(downstream_id_, h, false);
  } else {
    h.add(":status", std::to_string(http_status));
    h.add("content-type", "text/plain; charset=utf-8");
    if (retry_pushback) {
      const int64_t ms = to_us(*retry_pushback) / 1000;
      h.add("retry-after", std::to_string((ms + 999) / 1000));
    } else if (http_status == 503) {
      h.add("retry-after", "1");
    }
    add_queue_header(h);
    const std::string body = message + "\n";
    response_body_.append(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    response_body_.finish();
    response_started_ = true;
    down_.session().submit_response(downstream_id_, h, true);
  }
  down_.schedule_flush();
}

void ProxyStream::cancel_upstream() {
  if (up_conn_ == nullptr) return;
  UpstreamConnection* conn = up_conn_;
  up_conn_ = nullptr;
  if (upstream_id_ >= 0) {
    conn->session().reset_stream(upstream_id_, NGHTTP2_CANCEL);
    conn->session().detach_stream(upstream_id_);
    ClusterStats& cs = cluster_stats();
    cs.upstream_rq_cancelled_total.inc();
    cs.upstream_rq_active.sub(1);
    upstream_id_ = -1;
    conn->schedule_flush();
  }
  conn->remove_stream(this);
}

void ProxyStream::reset_downstream(uint32_t error_code) {
  if (phase_ == Phase::Closed) return;
  if (reset_code_ == 0) reset_code_ = error_code;
  down_.session().reset_stream(downstream_id_, error_code);
  down_.schedule_flush();
}

void ProxyStream::terminate(EndReason reason, int grpc_status, const std::string& message) {
  if (phase_ == Phase::Closed || response_end_sent_) return;
  set_reason(reason);
  if (!response_started_) {
    send_local_reply(grpc_status, reason == EndReason::DeadlineExceeded ? 504 : 503, message,
                     std::nullopt);
    return;
  }
  cancel_upstream();
  phase_ = Phase::Local;
  reset_downstream(NGHTTP2_CANCEL);
}

void ProxyStream::on_downstream_gone() {
  if (phase_ == Phase::Closed) return;
  if (!response_end_sent_) set_reason(EndReason::ClientReset);
  cancel_upstream();
  finish();
}

void ProxyStream::finish() {
  const Phase was = phase_;
  phase_ = Phase::Closed;
  deadline_timer_.reset();
  if (was == Phase::Headers) return;  // never became a request
  const TimePoint now = LoopTime::now();
  RequestOutcome outcome;
  outcome.admitted = admitted_at_ != TimePoint{};
  outcome.reason = reason_.value_or(EndReason::Completed);
  outcome.queue_wait = queue_wait_now(now);
  outcome.rtt = rtt_;
  outcome.total = now - info_.headers_complete;
  outcome.grpc_status = final_grpc_status_;
  outcome.reset_code = reset_code_;
  outcome.shed_by = shed_by_;
  if (chain_) chain_->complete(outcome);
  ListenerStats& ls = down_.listener().stats;
  ls.by_reason(outcome.reason).inc();
  ls.downstream_rq_time_us.record(static_cast<uint64_t>(to_us(outcome.total)));
  ls.downstream_rq_queue_wait_us.record(static_cast<uint64_t>(to_us(outcome.queue_wait)));
  if (AccessLog* log = down_.listener().access_log) {
    AccessLogEntry e;
    e.timestamp = std::chrono::system_clock::now() -
                  std::chrono::duration_cast<std::chrono::system_clock::duration>(outcome.total);
    e.method = std::string(info_.method);
    e.path = std::string(info_.path);
    e.grpc_status = outcome.grpc_status;
    e.outcome = to_string(outcome.reason);
    e.queue_wait_us = to_us(outcome.queue_wait);
    e.upstream_us = outcome.admitted ? to_us(now - admitted_at_) : -1;
    e.total_us = to_us(outcome.total);
    e.bytes_in = request_bytes_;
    e.bytes_out = response_bytes_;
    log->log(std::move(e));
  }
}

}  // namespace sluice
