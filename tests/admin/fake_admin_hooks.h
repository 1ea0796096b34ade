// AdminHooks without a proxy behind them, for tests that run a real AdminServer or what the admin
// side derives from the proxy: a drain only flips a flag (and is counted); limits and the config
// dump are whatever the test sets, and config_dump can be made to throw.
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
    std::lock_guard lock(mu_);
    return config_;
  }
  ServerInfo server_info() const override {
    using namespace std::chrono_literals;
    return ServerInfo{"9.8.7", SteadyClock::now() - 42s, std::chrono::system_clock::now() - 42s, 3,
                      "/etc/sluice/sluice.yaml"};
  }

  // While an AdminServer thread may read them; tests that drive the admin side on their own
  // thread may also assign limits_ directly.
  void set_limits(std::vector<LimiterSnapshot> l) {
    std::lock_guard lock(mu_);
    limits_ = std::move(l);
  }
  void set_config(const char* json) {
    std::lock_guard lock(mu_);
    config_ = boost::json::parse(json);
  }

  std::atomic<int> drain_calls{0};
  std::atomic<bool> throw_on_config_dump{false};
  std::vector<LimiterSnapshot> limits_;
  boost::json::value config_ =
      boost::json::parse(R"({"admin":{"address":"127.0.0.1:0"},"workers":2})");

 private:
  std::atomic<bool> draining_{false};
  mutable std::mutex mu_;
};

}  // namespace sluice
