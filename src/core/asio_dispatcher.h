// Dispatcher on an Asio io_context: the real event loop of one worker.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/core/dispatcher.h"

namespace sluice {

class AsioDispatcher final : public Dispatcher {
 public:
  AsioDispatcher(boost::asio::io_context& io, uint32_t worker_index)
      : io_(io), worker_index_(worker_index) {}

  // Dispatcher
  void post(std::function<void()> fn) override;
  std::unique_ptr<Timer> create_timer(std::function<void()> cb) override;
  // The loop clock: one reading per event-loop handler (see LoopTime).
  TimePoint now() const override { return LoopTime::now(); }
  uint32_t worker_index() const override { return worker_index_; }

  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context& io_;
  uint32_t worker_index_;
};

}  // namespace sluice
