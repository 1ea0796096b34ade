// A connection's byte stream: plain TCP, or TLS over it. One class with templated async
// operations that branch at run time, so connection code is written once for both.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <string>

namespace sluice {

class Transport {
 public:
  explicit Transport(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}

  // Wraps the socket in TLS; call before any I/O. The handshake role is chosen by handshake().
  void enable_tls(boost::asio::ssl::context& context) {
    tls_ =
        std::make_unique<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>>(socket_, context);
  }
  bool is_tls() const { return tls_ != nullptr; }
  SSL* native_tls() { return tls_ ? tls_->native_handle() : nullptr; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

  template <class Handler>
  void async_handshake(boost::asio::ssl::stream_base::handshake_type type, Handler&& h) {
    tls_->async_handshake(type, std::forward<Handler>(h));
  }
  template <class MutableBuffer, class Handler>
  void async_read_some(const MutableBuffer& buffer, Handler&& h) {
    if (tls_) {
      tls_->async_read_some(buffer, std::forward<Handler>(h));
    } else {
      socket_.async_read_some(buffer, std::forward<Handler>(h));
    }
  }
  template <class ConstBuffers, class Handler>
  void async_write(const ConstBuffers& buffers, Handler&& h) {
    if (tls_) {
      boost::asio::async_write(*tls_, buffers, std::forward<Handler>(h));
    } else {
      boost::asio::async_write(socket_, buffers, std::forward<Handler>(h));
    }
  }
  // The ALPN protocol agreed in the handshake ("" when none, or not TLS).
  std::string alpn() const;
  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
};

}  // namespace sluice
