// The admin HTTP/1.1 listener: its own thread and io_context, so a busy worker can never starve
// /ready or /stats, and admin traffic never delays requests on a worker.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <thread>

// See admin_server.cc: GCC 12 false -Wnull-dereference in Asio's scheduler.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#pragma GCC diagnostic pop

#include "src/admin/admin_handler.h"
#include "src/admin/admin_hooks.h"
#include "src/admin/history_sampler.h"
#include "src/config/config.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class AdminServer {
 public:
  // `stats` and `hooks` must outlive the server; hooks are called on the admin thread. The
  // history is sampled every `history.interval` on the admin thread from start() to stop().
  AdminServer(AdminConfig config, StatsRegistry& stats, AdminHooks& hooks,
              HistoryOptions history = {});
  ~AdminServer();  // stops and joins if still running
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds config.address (port 0 = ephemeral) and starts the admin thread. Throws
  // std::runtime_error naming the address when it cannot bind. Call once.
  void start();
  // The bound port (the ephemeral one when configured with port 0); 0 before start().
  uint16_t bound_port() const { return bound_port_; }
  // Closes the listener and every admin connection, then joins the thread. Idempotent.
  void stop();

  // Readiness as the admin endpoints report it ("LIVE", "DRAINING", "HEALTHCHECK_FAILED").
  std::string state() const { return handler_.state(); }

 private:
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);
  // Samples the history at a fixed rate (a late tick does not shift the ones after it).
  boost::asio::awaitable<void> history_loop();

  AdminConfig config_;
  HistorySampler history_;  // admin thread only, like the handler that reads it
  AdminHandler handler_;
  boost::asio::io_context io_{1};
  boost::asio::ip::tcp::acceptor acceptor_{io_};
  boost::asio::steady_timer history_timer_{io_};
  std::set<boost::beast::tcp_stream*> connections_;  // open connections; admin thread only
  std::thread thread_;
  uint16_t bound_port_ = 0;
};

}  // namespace sluice
