#include "src/proxy/upstream_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>

#include "src/config/units.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/tls_context.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace asio = boost::asio;

namespace {
// gRPC servers (C-core, Go, Java) answer PINGs that come more often than every 5 minutes while
// they send nothing with "strikes", and the third strike with GOAWAY(ENHANCE_YOUR_CALM,
// "too_many_pings"), failing every stream on the connection; sending HEADERS or DATA clears
// the strikes. So a quiet stretch gets at most two PINGs at `interval` (one strike), then one
// per 5 minutes (no strike) until the peer sends a stream frame again.
constexpr uint32_t kPingsPerQuietStretch = 2;
constexpr Duration kServerMinPingInterval = std::chrono::minutes(5);

}  // namespace

UpstreamConnection::UpstreamConnection(UpstreamPool& pool,
                                       std::shared_ptr<UpstreamEndpoint> endpoint,
                                       std::shared_ptr<const UpstreamSettings> settings)
    : H2Connection(pool.worker().io(), asio::ip::tcp::socket(pool.worker().io())),
      pool_(pool),
      endpoint_(std::move(endpoint)),
      settings_(std::move(settings)),
      connect_timer_(pool.worker().io()),
      keepalive_timer_(pool.worker().io()) {}

UpstreamConnection::~UpstreamConnection() = default;

ClusterStats& UpstreamConnection::stats() { return pool_.stats(); }

std::string UpstreamConnection::tls_server_name() const {
  if (config().tls && !config().tls->sni.empty()) return config().tls->sni;
  return endpoint_->host;
}

void UpstreamConnection::connect() {
  auto self = std::static_pointer_cast<UpstreamConnection>(shared_from_this());
  connect_timer_.expires_after(config().connect_timeout);
  connect_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (ec || self->state_ != State::Connecting) return;
    const std::string msg =
        std::string(self->session_ ? "no SETTINGS from the upstream" : "connect timeout") +
        " after " + std::to_string(to_us(self->config().connect_timeout) / 1000) + "ms";
    self->on_connect_failed(CloseReason::ConnectTimeout, msg);
  });
  socket().async_connect(endpoint_->address, [self](const boost::system::error_code& ec) {
    if (self->state_ != State::Connecting) return;  // timed out or closed meanwhile
    if (ec) {
      self->on_connect_failed(CloseReason::ConnectFailed, ec.message());
      return;
    }
    if (self->settings_->tls != nullptr) {
      self->start_tls();
      return;
    }
    self->on_connected();
  });
}

void UpstreamConnection::start_tls() {
  // The connect timer keeps running: it bounds TCP connect, TLS and SETTINGS together.
  transport().enable_tls(*settings_->tls);
  SSL* ssl = transport().native_tls();
  set_client_tls_peer(ssl, tls_server_name(), config().tls->verify);
  auto self = std::static_pointer_cast<UpstreamConnection>(shared_from_this());
  transport().async_handshake(
      boost::asio::ssl::stream_base::client, [self](const boost::system::error_code& ec) {
        if (self->state_ != State::Connecting) return;
        if (ec) {
          self->on_connect_failed(CloseReason::TlsError, "TLS handshake failed: " + ec.message());
          return;
        }
        if (self->transport().alpn() != "h2") {
          self->on_connect_failed(CloseReason::TlsError, "upstream did not negotiate h2 (ALPN)");
          return;
        }
        self->on_connected();
      });
}

void UpstreamConnection::on_connect_failed(CloseReason reason, const std::string& error) {
  state_ = State::Closed;
  std::vector<UpstreamClient*> pending;
  pending.swap(pending_);
  // The pool puts the endpoint in backoff first, so re-assigning picks another endpoint or
  // answers UNAVAILABLE at once.
  pool_.on_connect_result(*this, false, error);
  for (UpstreamClient* s : pending) pool_.assign(*s);
  close(reason, error);
}

void UpstreamConnection::on_connected() {
  // Still Connecting: streams are submitted once the peer's SETTINGS tell how many it takes.
  session_ = std::make_unique<h2::ClientSession>(*this, config().http2);
  start_io(session_.get());
}

void UpstreamConnection::on_remote_settings() {
  const std::size_t limit =
      std::min<std::size_t>(session_->remote_max_concurrent_streams(), 1u << 20);
  endpoint_->stream_limit = std::max<std::size_t>(limit, 1);
  if (state_ != State::Connecting) return;
  connect_timer_.cancel();
  state_ = State::Ready;
  last_read_ = LoopTime::now();
  if (config().keepalive.enabled) arm_keepalive(config().keepalive.interval);
  counted_active_ = true;
  stats().upstream_cx_active.add(1);
  pool_.on_connect_result(*this, true, "");
  // Submit what waited, up to the peer's limit; the pool finds the rest another connection.
  std::vector<UpstreamClient*> pending;
  pending.swap(pending_);
  std::vector<UpstreamClient*> overflow;
  for (UpstreamClient* s : pending) {
    if (state_ != State::Ready || active_.size() >= limit) {  // full, or retired meanwhile
      overflow.push_back(s);
      continue;
    }
    active_.insert(s);  // before submitting: a failure inside must find it
    s->on_upstream_ready();
  }
  for (UpstreamClient* s : overflow) pool_.assign(*s);
  schedule_flush();
}

bool UpstreamConnection::has_capacity() const {
  if (state_ != State::Connecting && state_ != State::Ready) return false;
  // Streams waiting for this connection will each take one of its remaining requests.
  if (streams_started_ + pending_.size() >= config().max_requests_per_connection) {
    return false;
  }
  if (session_ && session_->remote_settings_received()) {
    return load() < std::min<std::size_t>(session_->remote_max_concurrent_streams(), 1u << 20);
  }
  // Until our SETTINGS arrive: the limit this endpoint gave before. The very first connection to
  // an endpoint takes everything; once SETTINGS tell the limit, the overflow goes to new
  // connections (opening several at once on a guess would spread a startup burst over
  // connections the peer never needed).
  const std::optional<std::size_t> hint = endpoint_->stream_limit;
  return !hint || load() < *hint;
}

void UpstreamConnection::add_stream(UpstreamClient& client) {
  client.on_upstream_assigned(*this);
  if (state_ == State::Ready) {
    active_.insert(&client);
    client.on_upstream_ready();
  } else {
    pending_.push_back(&client);
  }
}

int32_t UpstreamConnection::submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                                   h2::StreamEvents* events) {
  const int32_t id = session_->submit_request(headers, with_body, events);
  if (id >= 0) {
    schedule_flush();
    if (++streams_started_ >= config().max_requests_per_connection) {
      retire("max_requests_per_connection reached");
    }
  } else if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
    retire("stream ids exhausted");  // the caller sends the request elsewhere
  }
  return id;
}

bool UpstreamConnection::request_sent(int32_t stream_id) const {
  return session_ && session_->request_sent(stream_id);
}

void UpstreamConnection::retire(const char* why) {
  if (state_ != State::Ready) return;
  spdlog::debug("cluster {}: retiring an upstream connection after {} streams ({})", config().name,
                streams_started_, why);
  stats().upstream_cx_retired_total.inc();
  state_ = State::Draining;  // the pool opens a new connection for the next stream
  if (load() == 0) close_after_flush(CloseReason::Drained, "drained");
}

void UpstreamConnection::arm_keepalive(Duration after) {
  auto self = std::static_pointer_cast<UpstreamConnection>(shared_from_this());
  keepalive_timer_.expires_after(after);
  keepalive_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (ec || self->closed()) return;
    const LoopTime::Scope time_scope;
    self->on_keepalive_tick();
  });
}

void UpstreamConnection::on_keepalive_tick() {
  if (state_ != State::Ready && state_ != State::Draining) return;
  const KeepaliveConfig& k = config().keepalive;
  const TimePoint now = LoopTime::now();
  if (ping_sent_at_) {
    if (last_read_ <= *ping_sent_at_) {  // nothing at all from the peer since the PING
      if (now - *ping_sent_at_ >= k.timeout) {
        on_keepalive_timeout();
        return;
      }
      arm_keepalive(*ping_sent_at_ + k.timeout - now);
      return;
    }
    ping_sent_at_.reset();  // any input proves the peer alive, the ACK or anything before it
  }
  const uint64_t frames = session_->counters().stream_frames_received;
  if (frames != quiet_frames_) {
    quiet_frames_ = frames;
    pings_in_quiet_ = 0;
  }
  // A connection without streams is not pinged: gRPC servers allow that one PING per 2 hours.
  // Its next stream makes it due at once if it was quiet for `interval`.
  if (load() == 0) {
    arm_keepalive(k.interval);
    return;
  }
  TimePoint due = last_read_ + k.interval;
  if (pings_in_quiet_ >= kPingsPerQuietStretch) {
    due = std::max(due, last_ping_ + kServerMinPingInterval);
  }
  if (now < due) {
    arm_keepalive(due - now);
    return;
  }
  session_->ping();
  schedule_flush();
  stats().upstream_cx_keepalive_ping_total.inc();
  ping_sent_at_ = now;
  last_ping_ = now;
  ++pings_in_quiet_;
  // Back by `interval` at the latest: if the answer came by then, the next PING is due one
  // interval after it, not one timeout after this one.
  arm_keepalive(std::min(k.timeout, k.interval));
}

void UpstreamConnection::on_keepalive_timeout() {
  const Duration timeout = config().keepalive.timeout;
  const std::string why = "no answer to a keepalive PING within " + format_duration(timeout);
  spdlog::warn("cluster {}: upstream {} is not responding ({}): closing the connection",
               config().name, endpoint_->label, why);
  stats().upstream_cx_keepalive_timeout_total.inc();
  // The endpoint goes into backoff first, so streams sent elsewhere avoid it.
  pool_.on_connect_result(*this, false, why);
  close(CloseReason::KeepaliveTimeout, "upstream connection dead (" + why + ")");
}

void UpstreamConnection::resume_request(int32_t stream_id) {
  session_->resume_data(stream_id);
  schedule_flush();
}

void UpstreamConnection::consume_response(int32_t stream_id, std::size_t n) {
  session_->consume_stream(stream_id, n);
  schedule_flush();
}

void UpstreamConnection::cancel(int32_t stream_id) {
  session_->reset_stream(stream_id, NGHTTP2_CANCEL);
  session_->detach_stream(stream_id);
  schedule_flush();
}

void UpstreamConnection::release(UpstreamClient& client) {
  active_.erase(&client);
  auto it = std::find(pending_.begin(), pending_.end(), &client);
  if (it != pending_.end()) pending_.erase(it);
  if (state_ == State::Draining && load() == 0) {
    close_after_flush(CloseReason::Drained, "drained");
  }
}

void UpstreamConnection::drain() {
  if (state_ == State::Closed) return;
  if (state_ == State::Connecting) {
    fail_pending("upstream connection closed for shutdown");
    close(CloseReason::Shutdown, "shutdown");
    return;
  }
  state_ = State::Draining;
  if (load() == 0) close_after_flush(CloseReason::Drained, "drained");
}

void UpstreamConnection::retire_from_pool(const char* why) {
  if (state_ == State::Connecting) {
    spdlog::debug("cluster {}: closing a connection to {} still connecting ({})", config().name,
                  endpoint_->label, why);
    stats().upstream_cx_drain_total.inc();
    // Closed first, so that the pool cannot hand the streams back to this connection and its
    // endpoint earns no backoff for a close that was no failure.
    state_ = State::Closed;
    std::vector<UpstreamClient*> pending;
    pending.swap(pending_);
    for (UpstreamClient* s : pending) pool_.assign(*s);
    close(CloseReason::Drained, std::string("drained: ") + why);
    return;
  }
  if (state_ != State::Ready) return;  // already draining or closed
  spdlog::debug("cluster {}: draining a connection to {} with {} streams ({})", config().name,
                endpoint_->label, load(), why);
  stats().upstream_cx_drain_total.inc();
  state_ = State::Draining;
  if (load() == 0) close_after_flush(CloseReason::Drained, "drained");
}

void UpstreamConnection::on_goaway(int32_t /*last_stream_id*/, uint32_t /*error_code*/) {
  stats().upstream_cx_goaway_total.inc();
  // Streams above last_stream_id are closed by nghttp2 with REFUSED_STREAM; the rest finish.
  if (state_ == State::Ready) state_ = State::Draining;
}

void UpstreamConnection::on_bytes_read(std::size_t n) {
  last_read_ = LoopTime::now();
  stats().upstream_bytes_rx_total.inc(n);
}

void UpstreamConnection::on_bytes_written(std::size_t n) { stats().upstream_bytes_tx_total.inc(n); }

void UpstreamConnection::fail_pending(const std::string& message) {
  std::vector<UpstreamClient*> pending;
  pending.swap(pending_);
  for (UpstreamClient* s : pending) s->on_upstream_unavailable(message);
}

void UpstreamConnection::count_close(CloseReason reason) {
  ClusterStats& st = stats();
  switch (reason) {
    case CloseReason::ConnectTimeout:
      st.upstream_cx_connect_timeout_total.inc();
      st.upstream_cx_connect_fail_total.inc();
      return;
    case CloseReason::TlsError:
      st.upstream_cx_tls_error_total.inc();
      st.upstream_cx_connect_fail_total.inc();
      return;
    case CloseReason::ConnectFailed:
      st.upstream_cx_connect_fail_total.inc();
      return;
    case CloseReason::ProtocolError:
    case CloseReason::SessionError:  // the upstream is trusted: either is its protocol breach
      st.upstream_cx_protocol_error_total.inc();
      return;
    case CloseReason::KeepaliveTimeout:  // counted where it is decided (on_keepalive_timeout)
    case CloseReason::Finished:
    case CloseReason::PeerClosed:
    case CloseReason::ReadError:
    case CloseReason::WriteError:
    case CloseReason::HandshakeTimeout:
    case CloseReason::HeadersTimeout:
    case CloseReason::WriteTimeout:
    case CloseReason::IdleTimeout:
    case CloseReason::PrematureResets:
    case CloseReason::Drained:
    case CloseReason::Shutdown:
      return;
  }
}

void UpstreamConnection::on_closed(CloseReason /*reason*/, const std::string& message) {
  const std::string& reason = message;
  auto self = shared_from_this();  // the pool drops its reference below
  if (state_ == State::Connecting) {
    pool_.on_connect_result(*this, false, reason);  // closed before its SETTINGS arrived
  }
  state_ = State::Closed;
  connect_timer_.cancel();
  keepalive_timer_.cancel();
  if (counted_active_) stats().upstream_cx_active.sub(1);
  counted_active_ = false;
  std::vector<UpstreamClient*> active(active_.begin(), active_.end());
  active_.clear();
  for (UpstreamClient* s : active) s->on_upstream_connection_lost(reason);
  fail_pending(reason);
  pool_.on_connection_closed(*this);
}

}  // namespace sluice
