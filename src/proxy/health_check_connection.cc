#include "src/proxy/health_check_connection.h"

#include <boost/asio/post.hpp>

#include "src/config/units.h"
#include "src/proxy/grpc_health.h"
#include "src/proxy/grpc_util.h"
#include "src/proxy/tls_context.h"

namespace sluice {

namespace asio = boost::asio;

namespace {}  // namespace

HealthCheckConnection::HealthCheckConnection(asio::io_context& io, EndpointAddress address,
                                             std::shared_ptr<const UpstreamSettings> settings,
                                             std::string service)
    : H2Connection(io, asio::ip::tcp::socket(io)),
      address_(std::move(address)),
      settings_(std::move(settings)),
      service_(std::move(service)),
      timer_(io) {}

HealthCheckConnection::~HealthCheckConnection() = default;

bool HealthCheckConnection::reusable() const {
  return !closed() && !abandoned_ && (state_ == State::Connecting || state_ == State::Ready);
}

void HealthCheckConnection::start_check(Duration timeout, Done done) {
  done_ = std::move(done);
  timeout_ = timeout;
  response_.clear();
  http_status_.reset();
  grpc_status_.reset();
  grpc_message_.clear();
  auto self = std::static_pointer_cast<HealthCheckConnection>(shared_from_this());
  timer_.expires_after(timeout);
  timer_.async_wait([self](const boost::system::error_code& ec) {
    if (ec || !self->done_) return;
    // A peer that does not answer in time is not trusted with the next check either.
    self->finish({false, "timeout after " + format_duration(self->timeout_)});
    self->close(CloseReason::ConnectTimeout, "health check timed out");
  });
  if (state_ == State::Idle) {
    connect();
  } else if (state_ == State::Ready) {
    submit();
  }  // Connecting: submitted once the peer's SETTINGS arrive
}

void HealthCheckConnection::abandon() {
  abandoned_ = true;
  done_ = nullptr;
  timer_.cancel();
  close(CloseReason::Shutdown, "health checks stopped");
}

void HealthCheckConnection::connect() {
  state_ = State::Connecting;
  auto self = std::static_pointer_cast<HealthCheckConnection>(shared_from_this());
  socket().async_connect(address_.address, [self](const boost::system::error_code& ec) {
    if (self->state_ != State::Connecting || self->closed()) return;
    if (ec) {
      self->close(CloseReason::ConnectFailed, "connect failed: " + ec.message());
      return;
    }
    if (!self->settings_->tls) {
      self->on_connected();
      return;
    }
    self->transport().enable_tls(*self->settings_->tls);
    set_client_tls_peer(self->transport().native_tls(), self->tls_server_name(),
                        self->settings_->config->tls->verify);
    self->transport().async_handshake(
        asio::ssl::stream_base::client, [self](const boost::system::error_code& tls_ec) {
          if (self->state_ != State::Connecting || self->closed()) return;
          if (tls_ec) {
            self->close(CloseReason::TlsError, "TLS handshake failed: " + tls_ec.message());
          } else if (self->transport().alpn() != "h2") {
            self->close(CloseReason::TlsError, "upstream did not negotiate h2 (ALPN)");
          } else {
            self->on_connected();
          }
        });
  });
}

std::string HealthCheckConnection::tls_server_name() const {
  const ClusterConfig& c = *settings_->config;
  if (c.tls && !c.tls->sni.empty()) return c.tls->sni;
  return address_.host;
}

void HealthCheckConnection::on_connected() {
  session_ = std::make_unique<h2::ClientSession>(*this, settings_->config->http2);
  start_io(session_.get());
}

void HealthCheckConnection::on_remote_settings() {
  if (state_ != State::Connecting) return;
  state_ = State::Ready;
  if (done_) submit();
}

void HealthCheckConnection::submit() {
  const std::string host =
      address_.host.find(':') != std::string::npos ? "[" + address_.host + "]" : address_.host;
  h2::HeaderBlock headers;
  headers.add(":method", "POST");
  headers.add(":scheme", settings_->tls ? "https" : "http");
  headers.add(":path", kHealthCheckPath);
  headers.add(":authority", host + ":" + std::to_string(address_.address.port()));
  headers.add("content-type", "application/grpc");
  headers.add("te", "trailers");
  headers.add("grpc-timeout", format_grpc_timeout(timeout_));
  headers.add("user-agent", "sluice-health-check");
  request_ = h2::BodyBuffer{};
  const std::string frame = health_check_request_frame(service_);
  request_.append(reinterpret_cast<const uint8_t*>(frame.data()), frame.size());
  request_.finish();
  stream_id_ = session_->submit_request(headers, true, this);
  if (stream_id_ < 0) {
    finish({false, std::string("cannot open a stream: ") + nghttp2_strerror(stream_id_)});
    return;
  }
  schedule_flush();
}

void HealthCheckConnection::on_headers_begin(bool /*initial*/) {}

uint32_t HealthCheckConnection::on_header(std::string_view name, std::string_view value,
                                          bool /*never_indexed*/) {
  if (name == ":status") http_status_ = std::string(value);
  if (name == "grpc-status") grpc_status_ = std::string(value);
  if (name == "grpc-message") grpc_message_ = percent_decode_grpc_message(value);
  return 0;
}

void HealthCheckConnection::on_headers_end(bool end_stream) {
  if (end_stream) complete();
}

void HealthCheckConnection::on_data(const uint8_t* data, std::size_t length) {
  // A HealthCheckResponse is a few bytes; more than a stream window is no health answer.
  constexpr std::size_t kMaxResponse = std::size_t{64} * 1024;
  if (response_.size() + length > kMaxResponse) return;
  response_.append(reinterpret_cast<const char*>(data), length);
}

void HealthCheckConnection::on_data_end() { complete(); }

void HealthCheckConnection::on_close(uint32_t error_code) {
  stream_id_ = -1;
  if (done_) finish({false, std::string("stream reset (") + h2_error_name(error_code) + ")"});
}

void HealthCheckConnection::complete() {
  if (!done_) return;
  if (http_status_ != "200") {
    finish({false, "HTTP status " + http_status_.value_or("missing")});
    return;
  }
  const std::optional<int> status = grpc_status_ ? parse_grpc_status(*grpc_status_) : std::nullopt;
  if (!status) {
    finish({false, "response without a valid grpc-status"});
    return;
  }
  if (*status != 0) {
    std::string why = "grpc-status " + std::to_string(*status) + " (" +
                      grpc_status_name(static_cast<GrpcStatus>(*status)) + ")";
    if (!grpc_message_.empty()) why += ": " + grpc_message_;
    finish({false, why});
    return;
  }
  const HealthCheckBody body = parse_health_check_body(response_);
  if (!body.status) {
    finish({false, body.error});
    return;
  }
  if (*body.status == kServingStatusServing) {
    finish({true, ""});
  } else {
    finish({false, serving_status_name(*body.status)});
  }
}

void HealthCheckConnection::finish(HealthCheckOutcome outcome) {
  if (!done_) return;
  timer_.cancel();
  Done done = std::move(done_);
  done_ = nullptr;
  // Posted: the caller never sees its callback inside one of its own calls, nor inside an
  // nghttp2 callback of this session.
  auto self = std::static_pointer_cast<HealthCheckConnection>(shared_from_this());
  asio::post(io(), [self, done = std::move(done), outcome = std::move(outcome)]() mutable {
    if (!self->abandoned_) done(std::move(outcome));
  });
}

void HealthCheckConnection::on_goaway(int32_t /*last_stream_id*/, uint32_t /*error_code*/) {
  // The check in flight may still be answered (nghttp2 closes it with REFUSED_STREAM when it is
  // above the last stream id); the next one gets a new connection.
  if (state_ == State::Ready || state_ == State::Connecting) state_ = State::Draining;
}

void HealthCheckConnection::on_closed(CloseReason /*reason*/, const std::string& message) {
  state_ = State::Closed;
  timer_.cancel();
  finish({false, message});
}

}  // namespace sluice
