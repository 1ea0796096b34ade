#include "src/proxy/downstream_connection.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "src/proxy/listener_context.h"
#include "src/proxy/proxy_stream.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace asio = boost::asio;

DownstreamConnection::DownstreamConnection(WorkerContext& worker,
                                           std::shared_ptr<ListenerContext> listener,
                                           asio::ip::tcp::socket socket)
    : H2Connection(worker.io(), std::move(socket)),
      worker_(worker),
      listener_(std::move(listener)),
      settings_(listener_->current()->connection),
      stream_context_{*this, worker, *listener_, *settings_, worker.dispatcher()},
      tick_timer_(worker.io()) {}

DownstreamConnection::~DownstreamConnection() = default;

void DownstreamConnection::start() {
  listener_->stats.downstream_cx_total.inc();
  listener_->stats.downstream_cx_active.add(1);
  listener_->connections.fetch_add(1, std::memory_order_relaxed);
  worker_.drain_tracker().active_connections.add(1);
  worker_.add_connection(this);
  accepted_at_ = last_activity_ = LoopTime::now();
  const ConnectionLimits& l = settings_->limits;
  Duration shortest = std::min(
      {l.handshake_timeout, l.request_headers_timeout, l.idle_timeout, l.stream_write_timeout});
  if (l.max_connection_age) shortest = std::min(shortest, *l.max_connection_age);
  tick_period_ =
      std::clamp<Duration>(shortest / 4, std::chrono::milliseconds(20), std::chrono::seconds(1));
  arm_tick();
  if (settings_->tls) {
    transport().enable_tls(*settings_->tls);
    auto self = std::static_pointer_cast<DownstreamConnection>(shared_from_this());
    transport().async_handshake(
        asio::ssl::stream_base::server, [self](const boost::system::error_code& ec) {
          if (self->closed()) return;
          if (ec) {
            self->close(CloseReason::TlsError, "TLS handshake failed: " + ec.message());
            return;
          }
          if (self->transport().alpn() != "h2") {
            self->close(CloseReason::TlsError, "TLS client did not negotiate h2 (ALPN)");
            return;
          }
          self->start_session();
        });
    return;
  }
  start_session();
}

void DownstreamConnection::start_session() {
  const ConnectionLimits& l = settings_->limits;
  h2::FloodLimits flood;
  flood.max_consecutive_empty_frames = l.max_consecutive_empty_frames;
  flood.max_priority_frames_per_stream = l.max_priority_frames_per_stream;
  flood.max_window_updates_per_data_frame_sent = l.max_window_updates_per_data_frame_sent;
  flood.max_outbound_frames = l.max_outbound_frames;
  session_ = std::make_unique<h2::ServerSession>(*this, settings_->http2, flood);
  session_->set_reset_stats(&listener_->stats.downstream_rst_rx_total,
                            &listener_->stats.downstream_rst_tx_total);
  if (worker_.draining() || listener_->draining.load(std::memory_order_relaxed)) {
    // Accepted in the same turn the drain started: tell the client right away.
    session_->submit_shutdown_notice();
    notice_sent_ = true;
  }
  start_io(session_.get());
}

void DownstreamConnection::arm_tick() {
  tick_timer_.expires_after(tick_period_);
  tick_timer_.async_wait([self = std::static_pointer_cast<DownstreamConnection>(
                              shared_from_this())](const boost::system::error_code& ec) {
    if (ec || self->closed()) return;
    self->on_tick();
    if (!self->closed()) self->arm_tick();
  });
}

void DownstreamConnection::on_tick() {
  const TimePoint now = LoopTime::now();
  const ConnectionLimits& l = settings_->limits;
  ListenerStats& st = listener_->stats;
  // Slowloris: a TLS handshake or HTTP/2 preface that does not complete.
  if (!preface_received_ && now - accepted_at_ >= l.handshake_timeout) {
    close(CloseReason::HandshakeTimeout, "handshake/preface timeout");
    return;
  }
  if (!session_) return;
  // A header block that never ends blocks the whole connection (CONTINUATION must be contiguous).
  for (auto& [id, s] : streams_) {
    const auto since = s->headers_pending_since();
    if (since && now - *since >= l.request_headers_timeout) {
      session_->terminate(NGHTTP2_PROTOCOL_ERROR);
      close_after_flush(CloseReason::HeadersTimeout, "request headers timeout");
      return;
    }
  }
  // A client that does not read: the socket write never completes.
  if (const auto since = write_pending_since(); since && now - *since >= l.stream_write_timeout) {
    close(CloseReason::WriteTimeout, "write timeout: the client is not reading");
    return;
  }
  // Streams whose client keeps its window shut while a response waits.
  std::vector<ProxyStream*> stalled;
  for (auto& [id, s] : streams_) {
    const auto since = s->stalled_since();
    if (since && now - *since >= l.stream_write_timeout) stalled.push_back(s.get());
  }
  for (ProxyStream* s : stalled) {
    st.downstream_rq_write_timeout_total.inc();
    s->terminate(EndReason::ClientReset, GrpcStatus::DeadlineExceeded,
                 "stream write timeout: flow-control window closed");
  }
  if (streams_.empty() && now - last_activity_ >= l.idle_timeout) {
    if (!goaway_sent_) {
      goaway_sent_ = true;
      session_->submit_goaway();
    }
    close_after_flush(CloseReason::IdleTimeout, "idle timeout");
    return;
  }
  if (l.max_connection_age && now - accepted_at_ >= *l.max_connection_age) {
    if (!notice_sent_) {
      st.downstream_cx_max_age_total.inc();
      shutdown_notice();
    } else if (!goaway_sent_) {
      goaway();
    }
  }
}

h2::StreamEvents* DownstreamConnection::on_new_stream(int32_t stream_id) {
  auto stream = std::make_unique<ProxyStream>(stream_context_, stream_id);
  h2::StreamEvents* events = stream->downstream_events();
  streams_.emplace(stream_id, std::move(stream));
  worker_.drain_tracker().active_streams.add(1);
  listener_->stats.downstream_rq_active.add(1);
  // This stream takes the last slot (it is not counted as open yet): until one closes, a
  // compliant client queues further calls itself, where no filter can see or shed them.
  if (session_->open_streams() + 1 >= settings_->http2.max_concurrent_streams) {
    listener_->stats.downstream_cx_streams_full_total.inc();
  }
  return events;
}

void DownstreamConnection::on_stream_refused() {
  // A client that keeps opening streams beyond the limit makes us answer each with a
  // RST_STREAM, like a rapid reset: counted by the same rule.
  count_stream_end(true);
}

void DownstreamConnection::stream_finished(int32_t stream_id, bool premature) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  const bool first = graveyard_.empty();
  graveyard_.push_back(std::move(it->second));
  streams_.erase(it);
  worker_.drain_tracker().active_streams.sub(1);
  listener_->stats.downstream_rq_active.sub(1);
  last_activity_ = LoopTime::now();
  if (first) {
    // Destroy after the nghttp2 callback that reported the close has returned.
    asio::post(io(), [self = shared_from_this(), this] { bury_dead_streams(); });
  }
  count_stream_end(premature);
}

void DownstreamConnection::count_stream_end(bool premature) {
  // Envoy's premature-reset rule: a connection whose streams are mostly reset by the client
  // before any response is an attack (rapid reset) or a broken client.
  ++closed_streams_;
  if (premature) ++premature_resets_;
  const ConnectionLimits& l = settings_->limits;
  if (closed_streams_ >= l.premature_reset_limit &&
      static_cast<double>(premature_resets_) >
          l.premature_reset_ratio * static_cast<double>(closed_streams_)) {
    if (!closed() && !premature_close_) {
      premature_close_ = true;  // streams still ending in this read must not count it again
      session_->terminate(NGHTTP2_ENHANCE_YOUR_CALM);
      close_after_flush(CloseReason::PrematureResets, "too many streams reset before a response");
    }
  }
}

void DownstreamConnection::bury_dead_streams() { graveyard_.clear(); }

void DownstreamConnection::shutdown_notice() {
  if (closed() || !session_ || notice_sent_ || goaway_sent_) return;
  notice_sent_ = true;
  session_->submit_shutdown_notice();
  schedule_flush();
}

void DownstreamConnection::goaway() {
  if (closed() || !session_ || goaway_sent_) return;
  goaway_sent_ = true;
  session_->submit_goaway();
  schedule_flush();  // closes by itself once every stream is done (session finished)
}

void DownstreamConnection::terminate_streams(EndReason reason, const std::string& message) {
  std::vector<ProxyStream*> open;
  open.reserve(streams_.size());
  for (auto& [id, s] : streams_) open.push_back(s.get());
  for (ProxyStream* s : open) s->terminate(reason, GrpcStatus::Unavailable, message);
  if (!goaway_sent_) goaway();
  schedule_flush();
}

void DownstreamConnection::on_bytes_read(std::size_t n) {
  listener_->stats.downstream_bytes_rx_total.inc(n);
}

void DownstreamConnection::on_bytes_written(std::size_t n) {
  listener_->stats.downstream_bytes_tx_total.inc(n);
}

void DownstreamConnection::after_receive() {
  // Activity is a complete frame, not a byte: a client dribbling one frame a byte at a time
  // (slowloris) must not hold an idle connection open forever.
  if (session_ && session_->counters().frames_received != frames_seen_) {
    frames_seen_ = session_->counters().frames_received;
    last_activity_ = LoopTime::now();
  }
}

void DownstreamConnection::count_close(CloseReason reason) {
  ListenerStats& st = listener_->stats;
  switch (reason) {
    case CloseReason::ProtocolError:
      st.downstream_cx_protocol_error_total.inc();
      return;
    case CloseReason::TlsError:
      st.downstream_cx_tls_error_total.inc();
      return;
    case CloseReason::HandshakeTimeout:
      st.downstream_cx_handshake_timeout_total.inc();
      return;
    case CloseReason::HeadersTimeout:
      st.downstream_cx_headers_timeout_total.inc();
      return;
    case CloseReason::WriteTimeout:
      st.downstream_cx_write_timeout_total.inc();
      return;
    case CloseReason::IdleTimeout:
      st.downstream_cx_idle_timeout_total.inc();
      return;
    case CloseReason::PrematureResets:
      st.downstream_cx_premature_reset_total.inc();
      return;
    case CloseReason::Finished:
    case CloseReason::PeerClosed:
    case CloseReason::ReadError:
    case CloseReason::WriteError:
    case CloseReason::SessionError:
    case CloseReason::ConnectFailed:
    case CloseReason::ConnectTimeout:
    case CloseReason::KeepaliveTimeout:
    case CloseReason::Drained:
    case CloseReason::Shutdown:
      return;
  }
}

void DownstreamConnection::on_closed(CloseReason /*reason*/, const std::string& /*message*/) {
  tick_timer_.cancel();
  // Streams still open lose their client: each one is completed and counted.
  std::vector<std::unique_ptr<ProxyStream>> open;
  open.reserve(streams_.size());
  for (auto& [id, s] : streams_) open.push_back(std::move(s));
  streams_.clear();
  for (auto& s : open) {
    s->on_downstream_gone();
    worker_.drain_tracker().active_streams.sub(1);
    listener_->stats.downstream_rq_active.sub(1);
  }
  open.clear();
  listener_->stats.downstream_cx_active.sub(1);
  listener_->connections.fetch_sub(1, std::memory_order_relaxed);
  worker_.drain_tracker().active_connections.sub(1);
  worker_.remove_connection(this);
}

}  // namespace sluice
