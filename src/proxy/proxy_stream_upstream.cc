// ProxyStream's upstream half: the stream assigned to a connection, the request sent, the
// answer read back, and what happens when the upstream refuses, resets or goes away (transparent
// retry of what it never saw, the gRPC status for a reset). The rest is in proxy_stream.cc.
#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include <string>

#include "src/h2/server_session.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/grpc_util.h"
#include "src/proxy/proxy_stream.h"

namespace sluice {

// ---- Upstream ----

void ProxyStream::on_upstream_assigned(UpstreamLink& link) {
  upstream_ = UpstreamAttachment(link, *this, cluster_stats());
}

void ProxyStream::on_upstream_ready() {
  if (state_ != StreamState::Connecting || !upstream_.assigned()) return;
  submit_upstream();
}

void ProxyStream::submit_upstream() {
  const TimePoint t = now();
  if (info_.deadline && t >= *info_.deadline) {
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
    remaining = format_grpc_timeout(*info_.deadline - t);
    nv.push_back(h2::HeaderBlock::make_nv("grpc-timeout", remaining, /*never_index=*/true));
  }
  const h2::BodyBuffer& body = request_body_.buffer();
  const bool with_body = !(body.finished() && body.empty() && !body.trailers());
  const UpstreamLink* link = upstream_.link();
  const int32_t id = upstream_.submit(nv, with_body, upstream_events());
  if (id < 0) {
    const std::string why = std::string("cannot open upstream stream: ") + nghttp2_strerror(id);
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
      on_upstream_unseen(why, link);  // the connection retires itself; another takes it
    } else {
      on_upstream_unavailable(why);
    }
    return;
  }
  transition(StreamState::Forwarding);
}

void ProxyStream::on_upstream_unavailable(std::string_view message) {
  upstream_.lost();  // the port holds nothing of ours any more
  if (state_ != StreamState::Connecting) return;
  if (retries_ > 0) {  // an upstream already refused it: let the client's library retry it
    refuse_downstream(message);
    return;
  }
  set_reason(EndReason::UpstreamUnavailable);
  send_local_reply(GrpcStatus::Unavailable, 503, message, std::nullopt);
}

void ProxyStream::on_upstream_connection_lost(std::string_view message) {
  const bool sent = upstream_.request_sent();  // the link may be asked until this returns
  const UpstreamLink* link = upstream_.link();
  upstream_.lost();
  if (state_ == StreamState::Responding && response_body_.buffer().finished()) {
    return;  // everything was received: only the flush to the client is left
  }
  if (state_ == StreamState::Forwarding && !sent) {
    on_upstream_unseen(
        "upstream connection lost before the request was sent: " + std::string(message), link);
    return;
  }
  cluster_stats().upstream_rq_reset_total.inc();
  // A lost connection is UNAVAILABLE to a gRPC client, as its own library would report it.
  on_upstream_closed(NGHTTP2_INTERNAL_ERROR, GrpcStatus::Unavailable,
                     "upstream connection lost: " + std::string(message));
}

void ProxyStream::on_upstream_unseen(std::string_view why, const UpstreamLink* failed) {
  if (state_ != StreamState::Connecting && state_ != StreamState::Forwarding) return;
  if (retries_ >= kMaxRetries || !request_body_.replayable()) {
    refuse_downstream(why);
    return;
  }
  ++retries_;
  cluster_stats().upstream_rq_retry_total.inc();
  if (state_ == StreamState::Forwarding) transition(StreamState::Connecting);
  request_body_.rewind();
  response_parse_ = {};
  response_headers_.clear();
  response_trailers_.clear();
  upstream_grpc_status_.reset();
  if (failed != nullptr) {
    upstream_port_->reassign(*this, *failed);
  } else {
    upstream_port_->assign(*this);
  }
}

void ProxyStream::refuse_downstream(std::string_view why) {
  cluster_stats().upstream_rq_retry_refused_total.inc();
  spdlog::debug("stream {}: answered REFUSED_STREAM after {} retries: {}", downstream_id_, retries_,
                why);
  set_reason(EndReason::UpstreamUnavailable);
  cancel_upstream();
  enter_local();
  request_body_.drop_replay();
  request_body_.buffer().discard();
  reset_downstream(NGHTTP2_REFUSED_STREAM);
}

void ProxyStream::UpstreamSide::on_headers_begin(bool /*initial*/) {
  ResponseBlockParse& parse = s_.response_parse_;
  if (!parse.final_seen) {
    s_.response_headers_.clear();
    parse.trailers = false;
  } else {
    s_.response_trailers_.clear();
    parse.trailers = true;
  }
}

uint32_t ProxyStream::UpstreamSide::on_header(std::string_view name, std::string_view value,
                                              bool never_indexed) {
  if (s_.head_ && s_.response_parse_.trailers) return 0;  // the response was complete
  if (is_hop_by_hop_header(name, value)) return 0;
  if (name == "grpc-status") s_.upstream_grpc_status_ = parse_grpc_status(value);
  if (name == kQueueHeader) return 0;  // ours to set
  (s_.response_parse_.trailers ? s_.response_trailers_ : s_.response_headers_)
      .add(name, value, never_indexed);
  return 0;
}

void ProxyStream::UpstreamSide::on_headers_end(bool end_stream) {
  if (!s_.response_parse_.trailers) {
    const auto status = s_.response_headers_.find(":status");
    if (status && status->size() == 3 && (*status)[0] == '1') return;  // 1xx: wait for final
    s_.response_parse_.final_seen = true;
    s_.on_response_headers(end_stream);
    return;
  }
  if (s_.state_ != StreamState::Responding || s_.head_) return;
  s_.final_grpc_status_ = s_.upstream_grpc_status_.value_or(-1);
  s_.cluster_stats().count_grpc_status(s_.final_grpc_status_);
  s_.response_body_.buffer().set_trailers(std::move(s_.response_trailers_));
  s_.context_.downstream.session().resume_data(s_.downstream_id_);
  s_.context_.downstream.schedule_flush();
  s_.on_answer(/*message=*/false);  // a stream that ended without a message
}

void ProxyStream::on_response_headers(bool end_stream) {
  cluster_stats().upstream_rtt_us.record(
      static_cast<uint64_t>(to_us(now() - *admitted_at_)));  // time to the response headers
  if (state_ != StreamState::Forwarding) return;
  request_body_.drop_replay();  // the upstream took it: it is never sent again
  add_queue_header(response_headers_);
  if (head_) end_stream = true;  // the headers are the whole response to a HEAD
  if (end_stream) {              // trailers-only response
    response_body_.buffer().finish();
    final_grpc_status_ = upstream_grpc_status_.value_or(-1);
    cluster_stats().count_grpc_status(final_grpc_status_);
  }
  response_started_ = true;
  transition(StreamState::Responding);
  context_.downstream.session().submit_response(downstream_id_, response_headers_, !end_stream);
  context_.downstream.schedule_flush();
  if (end_stream) on_answer(/*message=*/false);
}

void ProxyStream::on_answer(bool message) {
  if (rtt_) return;  // only the first: a message, or the end of a stream that had none
  rtt_ = now() - *admitted_at_;
  ResponseStart r;
  r.rtt = *rtt_;
  if (message) {
    r.ok = true;
  } else {
    r.grpc_status = upstream_grpc_status_.value_or(-1);
    if (info_.is_grpc) {
      r.ok = r.grpc_status == 0;
    } else {
      const auto status = response_headers_.find(":status");
      r.ok = status && !status->empty() && (*status)[0] == '2';
    }
  }
  if (chain_) chain_->on_response(r);
}

void ProxyStream::UpstreamSide::on_data(const uint8_t* data, std::size_t length) {
  if (s_.state_ != StreamState::Responding || s_.head_) {
    s_.response_body_.unread(length);
    return;
  }
  if (s_.response_body_.buffer().empty()) s_.last_progress_ = s_.now();  // a wait starts
  s_.response_body_.received(data, length);
  s_.context_.downstream.session().resume_data(s_.downstream_id_);
  s_.context_.downstream.schedule_flush();
  s_.on_answer(/*message=*/true);
}

void ProxyStream::UpstreamSide::on_data_end() {
  if (s_.state_ != StreamState::Responding || s_.head_) return;
  h2::BodyBuffer& body = s_.response_body_.buffer();
  if (!body.finished()) {
    // A response that ends without trailers: gRPC calls that an error; pass it on as is.
    s_.cluster_stats().count_grpc_status(s_.upstream_grpc_status_.value_or(-1));
  }
  body.finish();
  s_.context_.downstream.session().resume_data(s_.downstream_id_);
  s_.context_.downstream.schedule_flush();
  s_.on_answer(/*message=*/false);
}

void ProxyStream::UpstreamSide::on_close(uint32_t error_code) {
  ClusterStats& cs = s_.cluster_stats();
  cs.upstream_rq_time_us.record(static_cast<uint64_t>(to_us(s_.now() - *s_.admitted_at_)));
  const UpstreamLink* link = s_.upstream_.link();
  s_.upstream_.closed();
  if (error_code == NGHTTP2_NO_ERROR && s_.response_body_.buffer().finished()) {
    s_.max_duration_timer_.reset();  // the upstream is done; the flush to the client is not bound
    return;
  }
  // A HEAD response is complete with its headers: how the upstream ends its stream after them
  // (nghttp2 resets one that sends content to a HEAD) changes nothing for the client.
  if (s_.head_ && s_.response_started_) {
    s_.max_duration_timer_.reset();
    return;
  }
  cs.upstream_rq_reset_total.inc();
  const std::string detail =
      std::string("upstream reset the stream (") + h2_error_name(error_code) + ")";
  // RST_STREAM(REFUSED_STREAM), a stream above a GOAWAY's last id (nghttp2 closes those with
  // REFUSED_STREAM) and one whose HEADERS could not be sent: RFC 9113 8.7, not processed.
  if (error_code == NGHTTP2_REFUSED_STREAM && s_.state_ == StreamState::Forwarding) {
    s_.on_upstream_unseen(detail, link);
    return;
  }
  s_.on_upstream_closed(error_code, grpc_status_for_reset(error_code), detail);
}

h2::BodyBuffer* ProxyStream::UpstreamSide::outgoing() { return &s_.request_body_.buffer(); }

void ProxyStream::UpstreamSide::on_outgoing_sent(std::size_t n) {
  // Request bytes were handed to the upstream: only now may the client send more.
  s_.request_body_.delivered(n);
}

void ProxyStream::UpstreamSide::return_credit(std::size_t n) { s_.upstream_.consume_response(n); }

void ProxyStream::on_upstream_closed(uint32_t error_code, GrpcStatus status,
                                     const std::string& detail) {
  if (state_ != StreamState::Forwarding && state_ != StreamState::Responding) return;
  set_reason(EndReason::UpstreamReset);
  if (!response_started_) {
    send_local_reply(status, 502, detail + " before response headers", std::nullopt);
    return;
  }
  enter_local();
  reset_downstream(error_code == NGHTTP2_NO_ERROR ? static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR)
                                                  : error_code);
}

}  // namespace sluice
