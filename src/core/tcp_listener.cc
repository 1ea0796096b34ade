#include "src/core/tcp_listener.h"

#include <boost/asio/socket_base.hpp>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace sluice {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TcpListener::TcpListener(asio::io_context& io, AcceptFn on_accept, ErrorFn on_pause)
    : acceptor_(io),
      on_accept_(std::move(on_accept)),
      on_pause_(std::move(on_pause)),
      pause_timer_(io) {}

void TcpListener::bind(const tcp::endpoint& endpoint, int backlog) {
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) {
    int one = 1;
    if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
      ec.assign(errno, boost::system::system_category());
    }
  }
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(backlog, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + endpoint.address().to_string() + ":" +
                             std::to_string(endpoint.port()) + ": " + ec.message());
  }
}

uint16_t TcpListener::local_port() const { return acceptor_.local_endpoint().port(); }

void TcpListener::start() { accept_next(); }

void TcpListener::stop() {
  stopped_ = true;
  pause_timer_.cancel();
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void TcpListener::accept_next() {
  acceptor_.async_accept(
      [self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
        if (self->stopped_) return;
        if (!ec) {
          self->on_accept_(std::move(socket));
        } else if (ec == asio::error::operation_aborted) {
          return;
        } else if (is_resource_error(ec)) {
          if (self->on_pause_) self->on_pause_(ec);
          self->pause_timer_.expires_after(kPauseAfterResourceError);
          self->pause_timer_.async_wait([self](const boost::system::error_code& timer_ec) {
            if (!timer_ec && !self->stopped_) self->accept_next();
          });
          return;
        }
        // Other errors concern one connection (ECONNABORTED): the next accept may succeed.
        self->accept_next();
      });
}

bool TcpListener::is_resource_error(const boost::system::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int e = ec.value();
  return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

}  // namespace sluice
