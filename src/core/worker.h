// One worker thread running one io_context. Connections never change workers, so everything a
// worker owns is touched by its thread only.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <optional>
#include <thread>

#include "src/core/asio_dispatcher.h"

namespace sluice {

class Worker {
 public:
  explicit Worker(uint32_t index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Starts the thread; it runs until stop().
  void start();
  // Stops the loop (pending handlers are abandoned) and joins the thread.
  void stop();

  uint32_t index() const { return index_; }
  boost::asio::io_context& io() { return io_; }
  AsioDispatcher& dispatcher() { return dispatcher_; }

 private:
  uint32_t index_;
  boost::asio::io_context io_{1};  // one thread: Asio may skip internal locking
  AsioDispatcher dispatcher_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::thread thread_;
};

}  // namespace sluice
