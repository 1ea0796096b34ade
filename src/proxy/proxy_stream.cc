#include "src/proxy/proxy_stream.h"

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "src/h2/server_session.h"
#include "src/proxy/access_log.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/grpc_util.h"
#include "src/proxy/listener_context.h"

namespace sluice {

namespace {
std::string ms_string(Duration d) { return std::to_string(to_us(d) / 1000) + "ms"; }

std::atomic<uint64_t> g_illegal_transitions{0};
}  // namespace

ProxyStream::ProxyStream(StreamContext& context, int32_t stream_id)
    : context_(context), downstream_id_(stream_id), created_at_(context.dispatcher.now()) {}

ProxyStream::~ProxyStream() = default;

uint64_t ProxyStream::illegal_transitions() {
  return g_illegal_transitions.load(std::memory_order_relaxed);
}

void ProxyStream::transition(StreamState to) {
  if (is_legal_transition(state_, to)) {
    state_ = to;
    return;
  }
  g_illegal_transitions.fetch_add(1, std::memory_order_relaxed);
  spdlog::error("stream {}: illegal state transition {} -> {} (ignored)", downstream_id_,
                to_string(state_), to_string(to));
#ifndef NDEBUG
  std::abort();
#endif
}

void ProxyStream::enter_local() {
  max_duration_timer_.reset();  // answered: nothing left for it to bound
  if (state_ != StreamState::Local) transition(StreamState::Local);
}

ClusterStats& ProxyStream::cluster_stats() const { return upstream_port_->stats(); }

Duration ProxyStream::queue_wait_now(TimePoint now) const {
  if (admitted_at_) return queue_wait_;
  return now - info_.headers_complete;
}

void ProxyStream::add_queue_header(h2::HeaderBlock& headers) const {
  headers.add(kQueueHeader, std::to_string(to_us(queue_wait_now(now()))), /*never_index=*/true);
}

// ---- Downstream side: the client's request ----

void ProxyStream::DownstreamSide::on_headers_begin(bool initial) {
  s_.request_parse_.trailers = !initial;
  s_.request_parse_.bytes = 0;  // the limits apply to each header block on its own
}

uint32_t ProxyStream::DownstreamSide::on_header(std::string_view name, std::string_view value,
                                                bool never_indexed) {
  const Http2Config& limits = s_.context_.connection.http2;
  RequestBlockParse& parse = s_.request_parse_;
  h2::HeaderBlock& block = parse.trailers ? s_.request_trailers_ : s_.request_headers_;
  parse.bytes += name.size() + value.size() + 32;
  if (parse.too_large) return 0;
  if (block.size() >= limits.max_headers_count || parse.bytes > limits.max_header_list_size) {
    if (parse.trailers) {
      // Trailers cannot get the 431 the headers get (the request went upstream, a response
      // may have started) and must never be forwarded cut short: reset the stream (gRPC
      // clients read ENHANCE_YOUR_CALM as RESOURCE_EXHAUSTED). The session stops the block.
      s_.context_.listener.stats.downstream_rq_headers_too_large_total.inc();
      s_.set_reason(EndReason::Internal);
      if (s_.reset_code_ == 0) s_.reset_code_ = NGHTTP2_ENHANCE_YOUR_CALM;
      return NGHTTP2_ENHANCE_YOUR_CALM;
    }
    // Keep reading the block (HPACK state must stay in sync) but store nothing more.
    parse.too_large = true;
    return 0;
  }
  if (is_hop_by_hop_header(name, value)) return 0;
  block.add(name, value, never_indexed);
  return 0;
}

void ProxyStream::DownstreamSide::on_headers_end(bool end_stream) {
  if (!s_.request_parse_.trailers) {
    s_.on_request_headers_complete(end_stream);
    return;
  }
  if (s_.answered()) return;
  s_.request_body_.buffer().set_trailers(std::move(s_.request_trailers_));
  s_.upstream_.resume_request();
}

void ProxyStream::DownstreamSide::on_data(const uint8_t* data, std::size_t length) {
  if (s_.answered()) {
    s_.request_body_.unread(length);
    return;
  }
  // The stream credit comes back only when the bytes go upstream (UpstreamSide's
  // on_outgoing_sent): a request waiting for admission stalls at one stream window.
  s_.request_body_.received(data, length);
  s_.upstream_.resume_request();
}

void ProxyStream::DownstreamSide::on_data_end() {
  if (s_.answered()) return;
  s_.request_body_.buffer().finish();
  s_.upstream_.resume_request();
}

void ProxyStream::DownstreamSide::on_end_stream_sent() {
  s_.response_end_sent_ = true;
  // RFC 9113 8.1: a complete response before the request is complete; RST_STREAM(NO_ERROR)
  // tells the client to stop sending.
  if (!s_.request_body_.buffer().finished()) s_.reset_downstream(NGHTTP2_NO_ERROR);
}

void ProxyStream::DownstreamSide::on_close(uint32_t error_code) {
  const bool reset_by_us = s_.reset_code_ != 0;  // before this only our own resets set it
  if (!s_.response_end_sent_) {
    s_.set_reason(EndReason::ClientReset);
    if (s_.reset_code_ == 0)
      s_.reset_code_ = error_code == 0 ? static_cast<uint32_t>(NGHTTP2_CANCEL) : error_code;
  }
  // Premature: the client reset soon after opening, before any response (Envoy's rapid-reset
  // signal). A call cancelled at its deadline after a long queue wait is not an attack, and our
  // own REFUSED_STREAM (refuse_downstream) is not the client's doing.
  const bool premature =
      error_code != 0 && !s_.response_started_ && !reset_by_us &&
      s_.now() - s_.created_at_ < s_.context_.connection.limits.premature_reset_min_stream_lifetime;
  s_.cancel_upstream();
  s_.finish();
  s_.context_.downstream.stream_finished(s_.downstream_id_, premature);  // last: destroys us soon
}

h2::BodyBuffer* ProxyStream::DownstreamSide::outgoing() {
  return s_.response_started_ ? &s_.response_body_.buffer() : nullptr;
}

void ProxyStream::DownstreamSide::on_outgoing_sent(std::size_t n) {
  s_.last_progress_ = s_.now();
  // Response bytes reached the client's socket queue: now the upstream may send more.
  s_.response_body_.delivered(n);
}

void ProxyStream::DownstreamSide::return_credit(std::size_t n) {
  s_.context_.downstream.session().consume_stream(s_.downstream_id_, n);
  s_.context_.downstream.schedule_flush();
}

void ProxyStream::on_request_headers_complete(bool end_stream) {
  const TimePoint t = now();
  ListenerContext& listener = context_.listener;
  listener.stats.downstream_rq_total.inc();
  info_.headers_complete = t;
  std::optional<std::string_view> content_type;
  std::optional<std::string_view> timeout;
  std::optional<std::string_view> criticality;
  snapshot_ = listener.current();
  const std::optional<CriticalityConfig>& classes = snapshot_->criticality;
  for (std::size_t i = 0; i < request_headers_.size(); ++i) {
    const std::string_view n = request_headers_.name(i);
    if (classes && n == classes->header) {
      criticality = request_headers_.value(i);
    } else if (n == ":method") {
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
  head_ = info_.method == "HEAD";
  if (classes) {
    bool invalid = false;
    info_.criticality = classes->classify(info_.path, criticality, &invalid);
    if (invalid) listener.stats.downstream_rq_criticality_invalid_total.inc();
  }
  if (end_stream) request_body_.buffer().finish();

  if (request_parse_.too_large) {
    listener.stats.downstream_rq_headers_too_large_total.inc();
    set_reason(EndReason::Internal);
    send_local_reply(GrpcStatus::ResourceExhausted, 431,
                     "request header list too large (limit " +
                         std::to_string(context_.connection.http2.max_header_list_size) +
                         " bytes, " + std::to_string(context_.connection.http2.max_headers_count) +
                         " fields)",
                     std::nullopt);
    return;
  }
  transition(StreamState::Filtering);
  if (timeout) {
    timeout_ = parse_grpc_timeout(*timeout);
    if (timeout_) {
      info_.deadline = t + *timeout_;
      deadline_timer_ = dispatcher().create_timer([this] { on_deadline(); });
      deadline_timer_->arm(*timeout_);
    }
  }
  if (snapshot_->chain) {
    chain_ = std::make_unique<ActiveChain>(*snapshot_->chain, *this);
    chain_->start();
  } else {
    admit();
  }
}

// ---- Admission ----

void ProxyStream::admit() {
  if (state_ != StreamState::Filtering) return;  // answered meanwhile (deadline, client gone)
  const TimePoint t = now();
  admitted_at_ = t;
  queue_wait_ = t - info_.headers_complete;
  transition(StreamState::Connecting);
  if (info_.deadline && t >= *info_.deadline) {
    on_deadline();
    return;
  }
  // Nothing was sent yet: from here on a copy of the body (up to one stream window, what the
  // client may send before it hears from us) is kept until the answer starts, so that a request
  // the upstream never saw can be sent again.
  // The upstream as the request's snapshot names it: a reload that points the listener at
  // another cluster reaches the calls admitted after it.
  upstream_port_ = context_.upstreams.find(snapshot_->upstream);
  if (upstream_port_ == nullptr) {
    on_upstream_unavailable("no " + snapshot_->upstream.to_string() + " on this worker");
    return;
  }
  request_body_.keep_for_replay(context_.connection.http2.initial_stream_window);
  if (!info_.deadline) {
    if (const std::optional<Duration> limit = upstream_port_->max_stream_duration()) {
      max_duration_timer_ = dispatcher().create_timer([this] { on_max_stream_duration(); });
      max_duration_timer_->arm(*limit);
    }
  }
  upstream_port_->assign(*this);
}

void ProxyStream::shed(const LocalReply& reply, int filter_index) {
  if (state_ != StreamState::Filtering) return;
  shed_by_ = filter_index;
  set_reason(EndReason::Shed);
  send_local_reply(reply.grpc_status, reply.http_status, reply.message, reply.retry_pushback);
}

void ProxyStream::on_deadline() {
  terminate(EndReason::DeadlineExceeded, GrpcStatus::DeadlineExceeded,
            "deadline exceeded (grpc-timeout " + ms_string(timeout_.value_or(Duration{})) +
                (state_ == StreamState::Filtering ? ", while waiting for admission)" : ")"));
}

void ProxyStream::on_max_stream_duration() {
  cluster_stats().upstream_rq_max_duration_reached_total.inc();
  const Duration limit = upstream_port_->max_stream_duration().value_or(Duration{});
  // DEADLINE_EXCEEDED, as if the caller had sent grpc-timeout: it is a deadline sluice set for
  // it, and unlike UNAVAILABLE it does not invite a retry of a call that may still be running.
  terminate(
      EndReason::DeadlineExceeded, GrpcStatus::DeadlineExceeded,
      "max_stream_duration (" + ms_string(limit) + ") exceeded; the call carried no grpc-timeout");
}

// ---- Local replies, resets, teardown ----

void ProxyStream::send_local_reply(GrpcStatus status, int http_status, std::string_view message,
                                   std::optional<Duration> retry_pushback) {
  if (state_ == StreamState::Closed) return;
  cancel_upstream();
  enter_local();
  if (response_started_) {
    reset_downstream(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  request_body_.buffer().discard();
  // Never admitted: the filters learn now, so a permit-gate waiter leaves its queue at once
  // instead of when the client closes the stream (and cannot be granted meanwhile).
  if (chain_ && !admitted_at_) chain_->abandon();
  LocalResponse reply =
      make_local_response(info_.is_grpc, status, http_status, message, retry_pushback);
  if (head_) reply.trailers_only = true;  // the headers a GET would get, no content
  add_queue_header(reply.headers);
  if (reply.trailers_only) {
    final_grpc_status_ = to_int(status);
  } else {
    h2::BodyBuffer& body = response_body_.buffer();
    body.append(reinterpret_cast<const uint8_t*>(reply.body.data()), reply.body.size());
    body.finish();
  }
  response_started_ = true;
  context_.downstream.session().submit_response(downstream_id_, reply.headers,
                                                !reply.trailers_only);
  context_.downstream.schedule_flush();
}

void ProxyStream::reset_downstream(uint32_t error_code) {
  if (state_ == StreamState::Closed) return;
  if (reset_code_ == 0) reset_code_ = error_code;
  context_.downstream.session().reset_stream(downstream_id_, error_code);
  context_.downstream.schedule_flush();
}

void ProxyStream::terminate(EndReason reason, GrpcStatus status, std::string_view message) {
  if (state_ == StreamState::Closed || response_end_sent_) return;
  set_reason(reason);
  if (!response_started_) {
    send_local_reply(status, reason == EndReason::DeadlineExceeded ? 504 : 503, message,
                     std::nullopt);
    return;
  }
  cancel_upstream();
  enter_local();
  reset_downstream(NGHTTP2_CANCEL);
}

void ProxyStream::on_downstream_gone() {
  if (state_ == StreamState::Closed) return;
  if (!response_end_sent_) set_reason(EndReason::ClientReset);
  cancel_upstream();
  finish();
}

void ProxyStream::finish() {
  const StreamState was = state_;
  transition(StreamState::Closed);
  deadline_timer_.reset();
  max_duration_timer_.reset();
  if (was == StreamState::ReceivingHeaders) return;  // never became a request
  const TimePoint t = now();
  const RequestOutcome o = outcome(t);
  if (chain_) chain_->complete(o);
  ListenerStats& ls = context_.listener.stats;
  ls.by_reason(o.reason).inc();
  ls.downstream_rq_time_us.record(static_cast<uint64_t>(to_us(o.total)));
  ls.downstream_rq_queue_wait_us.record(static_cast<uint64_t>(to_us(o.queue_wait)));
  write_access_log(o, t);
}

RequestOutcome ProxyStream::outcome(TimePoint t) const {
  RequestOutcome o;
  o.admitted = admitted_at_.has_value();
  o.reason = reason_.value_or(EndReason::Completed);
  o.queue_wait = queue_wait_now(t);
  o.rtt = rtt_;
  o.total = t - info_.headers_complete;
  o.grpc_status = final_grpc_status_;
  o.reset_code = reset_code_;
  o.shed_by = shed_by_;
  return o;
}

void ProxyStream::write_access_log(const RequestOutcome& outcome, TimePoint t) const {
  AccessLog* log = snapshot_ ? snapshot_->access_log.get() : nullptr;
  if (log == nullptr) return;
  AccessLogEntry e;
  e.timestamp = std::chrono::system_clock::now() -
                std::chrono::duration_cast<std::chrono::system_clock::duration>(outcome.total);
  e.method = std::string(info_.method);
  e.path = std::string(info_.path);
  e.grpc_status = outcome.grpc_status;
  e.outcome = to_string(outcome.reason);
  e.queue_wait_us = to_us(outcome.queue_wait);
  e.upstream_us = admitted_at_ ? to_us(t - *admitted_at_) : -1;
  e.total_us = to_us(outcome.total);
  e.bytes_in = request_body_.received_bytes();
  e.bytes_out = response_body_.delivered_bytes();
  log->log(std::move(e));
}

}  // namespace sluice
