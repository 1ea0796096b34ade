// Runs an io_context on the test's thread until a condition holds or a timeout passes, so a
// test drives RedisConnection's callbacks without a second thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <thread>

namespace sluice::queue {

template <typename Pred>
bool run_until(boost::asio::io_context& io, Pred pred,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    io.restart();
    if (io.run_for(std::chrono::milliseconds(2)) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // nothing pending at all
    }
  }
  return true;
}

// Runs the io_context for `d` whatever happens (to show that something does *not* happen).
inline void run_for(boost::asio::io_context& io, std::chrono::milliseconds d) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < deadline) {
    io.restart();
    if (io.run_for(std::chrono::milliseconds(2)) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

}  // namespace sluice::queue
