// A listening socket on one worker (SO_REUSEPORT: every worker binds the same address and the
// kernel spreads connections). Hands accepted sockets to a callback on the worker's thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>

namespace sluice {

class TcpListener : public std::enable_shared_from_this<TcpListener> {
 public:
  using AcceptFn = std::function<void(boost::asio::ip::tcp::socket)>;

  TcpListener(boost::asio::io_context& io, AcceptFn on_accept);

  // Binds and listens; throws std::system_error naming the address on failure.
  void bind(const boost::asio::ip::tcp::endpoint& endpoint, int backlog = 1024);
  uint16_t local_port() const;
  // Starts accepting (call on the worker's thread or before it runs).
  void start();
  // Closes the socket: no more connections are accepted. Call on the worker's thread.
  void stop();

 private:
  void accept_next();

  boost::asio::ip::tcp::acceptor acceptor_;
  AcceptFn on_accept_;
  bool stopped_ = false;
};

}  // namespace sluice
