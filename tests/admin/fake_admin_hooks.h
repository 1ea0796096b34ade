// AdminHooks without a proxy behind them, for tests that run a real AdminServer: a drain
// only flips a flag (and is counted), limits and the config dump are whatever the test sets.
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/admin/admin_hooks.h"

namespace sluice {

class FakeAdminHooks : public AdminHooks {
 public:
  // AdminHooks
  bool draining() const override { return draining_.load(); }
  void start_drain() override {
    ++drain_calls;
    draining_.store(true);
  }
  std::vector<LimiterSnapshot> limits() const override {
    std::lock_guard lock(mu_);
    return limits_;
  }
  boost::json::value config_dump() const override {
    if (throw_on_config_dump) throw std::runtime_error("config exploded");
    return boost::json::parse(R"({"admin":{"address":"127.0.0.1:0"},"workers":2})");
  }
  ServerInfo server_info() const override {
    using namespace std::chrono_literals;
    return ServerInfo{"9.8.7", SteadyClock::now() - 42s, std::chrono::system_clock::now() - 42s, 3,
                      "/etc/sluice/sluice.yaml"};
  }

  void set_limits(std::vector<LimiterSnapshot> l) {
    std::lock_guard lock(mu_);
    limits_ = std::move(l);
  }

  std::atomic<int> drain_calls{0};
  std::atomic<bool> throw_on_config_dump{false};

 private:
  std::atomic<bool> draining_{false};
  mutable std::mutex mu_;
  std::vector<LimiterSnapshot> limits_;
};

}  // namespace sluice
