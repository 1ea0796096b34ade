// A listening socket on one worker (SO_REUSEPORT: every worker binds the same address and the
// kernel spreads connections). Hands accepted sockets to a callback on the worker's thread.
// When accept() fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) the pending
// connection stays in the backlog and would fail again at once: accepting pauses instead.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace sluice {

class TcpListener : public std::enable_shared_from_this<TcpListener> {
 public:
  using AcceptFn = std::function<void(boost::asio::ip::tcp::socket)>;
  // Told once per pause, with the error that caused it.
  using ErrorFn = std::function<void(const boost::system::error_code&)>;

  static constexpr std::chrono::milliseconds kPauseAfterResourceError{100};

  TcpListener(boost::asio::io_context& io, AcceptFn on_accept, ErrorFn on_pause = {});

  // Binds and listens; throws std::system_error naming the address on failure.
  void bind(const boost::asio::ip::tcp::endpoint& endpoint, int backlog = 1024);
  uint16_t local_port() const;
  // Starts accepting (call on the worker's thread or before it runs).
  void start();
  // Closes the socket: no more connections are accepted. Call on the worker's thread.
  void stop();

 private:
  void accept_next();
  // Out of descriptors or memory: retrying at once would spin on the same error.
  static bool is_resource_error(const boost::system::error_code& ec);

  boost::asio::ip::tcp::acceptor acceptor_;
  AcceptFn on_accept_;
  ErrorFn on_pause_;
  boost::asio::steady_timer pause_timer_;
  bool stopped_ = false;
};

}  // namespace sluice
