#include "src/proxy/upstream_connection.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>

#include "src/proxy/cluster_stats.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"

namespace sluice {

namespace asio = boost::asio;

UpstreamConnection::UpstreamConnection(UpstreamPool& pool, std::size_t endpoint_index,
                                       asio::ip::tcp::endpoint endpoint)
    : H2Connection(pool.worker().io(), asio::ip::tcp::socket(pool.worker().io())),
      pool_(pool),
      endpoint_index_(endpoint_index),
      endpoint_(endpoint),
      connect_timer_(pool.worker().io()) {}

UpstreamConnection::~UpstreamConnection() = default;

ClusterStats& UpstreamConnection::stats() { return pool_.stats(); }

void UpstreamConnection::connect() {
  auto self = std::static_pointer_cast<UpstreamConnection>(shared_from_this());
  connect_timer_.expires_after(pool_.config().connect_timeout);
  connect_timer_.async_wait([self](const boost::system::error_code& ec) {
    if (ec || self->state_ != State::Connecting) return;
    const std::string msg =
        std::string(self->session_ ? "no SETTINGS from the upstream" : "connect timeout") +
        " after " + std::to_string(to_us(self->pool_.config().connect_timeout) / 1000) + "ms";
    self->on_connect_failed(CloseReason::ConnectTimeout, msg);
  });
  socket().async_connect(endpoint_, [self](const boost::system::error_code& ec) {
    if (self->state_ != State::Connecting) return;  // timed out or closed meanwhile
    if (ec) {
      self->on_connect_failed(CloseReason::ConnectFailed, ec.message());
      return;
    }
    if (self->pool_.tls() != nullptr) {
      self->start_tls();
      return;
    }
    self->on_connected();
  });
}

void UpstreamConnection::start_tls() {
  // The connect timer keeps running: it bounds TCP connect, TLS and SETTINGS together.
  transport().enable_tls(*pool_.tls());
  SSL* ssl = transport().native_tls();
  const std::string name = pool_.tls_server_name(endpoint_index_);
  boost::system::error_code bad_ip;
  boost::asio::ip::make_address(name, bad_ip);
  if (bad_ip) {  // SNI is for names, not addresses (the macro form uses a C cast)
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
  }
  if (pool_.config().tls->verify) {
    SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (bad_ip) {
      X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
    }
  }
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
  session_ = std::make_unique<h2::ClientSession>(*this, pool_.config().http2);
  start_io(session_.get());
}

void UpstreamConnection::on_remote_settings() {
  const std::size_t limit =
      std::min<std::size_t>(session_->remote_max_concurrent_streams(), 1u << 20);
  pool_.learn_stream_limit(endpoint_index_, limit);
  if (state_ != State::Connecting) return;
  connect_timer_.cancel();
  state_ = State::Ready;
  counted_active_ = true;
  stats().upstream_cx_active.add(1);
  pool_.on_connect_result(*this, true, "");
  // Submit what waited, up to the peer's limit; the pool finds the rest another connection.
  std::vector<UpstreamClient*> pending;
  pending.swap(pending_);
  std::vector<UpstreamClient*> overflow;
  for (UpstreamClient* s : pending) {
    if (active_.size() >= limit) {
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
  if (session_ && session_->remote_settings_received()) {
    return load() < std::min<std::size_t>(session_->remote_max_concurrent_streams(), 1u << 20);
  }
  // Until our SETTINGS arrive: the limit this endpoint gave before. The very first connection to
  // an endpoint takes everything; once SETTINGS tell the limit, the overflow goes to new
  // connections (opening several at once on a guess would spread a startup burst over
  // connections the peer never needed).
  const std::optional<std::size_t> hint = pool_.stream_limit_hint(endpoint_index_);
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
  if (id >= 0) schedule_flush();
  return id;
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

void UpstreamConnection::on_goaway(int32_t /*last_stream_id*/, uint32_t /*error_code*/) {
  stats().upstream_cx_goaway_total.inc();
  // Streams above last_stream_id are closed by nghttp2 with REFUSED_STREAM; the rest finish.
  if (state_ == State::Ready) state_ = State::Draining;
}

void UpstreamConnection::on_bytes_read(std::size_t n) { stats().upstream_bytes_rx_total.inc(n); }

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
  if (counted_active_) stats().upstream_cx_active.sub(1);
  counted_active_ = false;
  std::vector<UpstreamClient*> active(active_.begin(), active_.end());
  active_.clear();
  for (UpstreamClient* s : active) s->on_upstream_connection_lost(reason);
  fail_pending(reason);
  pool_.on_connection_closed(*this);
}

}  // namespace sluice
