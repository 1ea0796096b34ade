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
  std::vector<std::string> unready_reasons() const override {
    std::lock_guard lock(mu_);
    return unready_;
  }
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
    ServerInfo info;
    info.version = "9.8.7";
    info.started = SteadyClock::now() - 42s;
    info.started_wall = std::chrono::system_clock::now() - 42s;
    info.workers = 3;
    info.config_path = "/etc/sluice/sluice.yaml";
    info.listeners = {{"ingress", 8080}, {"side", 41234}};
    std::lock_guard lock(mu_);
    info.config.version = "00112233aabbccdd";
    info.config.loaded_at = info.started_wall;
    info.config.last_reload = last_reload_;
    return info;
  }
  ReloadResult reload_config() override {
    std::lock_guard lock(mu_);
    last_reload_ = next_reload_;
    return next_reload_;
  }

  // While an AdminServer thread may read them; tests that drive the admin side on their own
  // thread may also assign limits_ directly.
  void set_unready(std::vector<std::string> reasons) {
    std::lock_guard lock(mu_);
    unready_ = std::move(reasons);
  }
  void set_limits(std::vector<LimiterSnapshot> l) {
    std::lock_guard lock(mu_);
    limits_ = std::move(l);
  }
  void set_config(const char* json) {
    std::lock_guard lock(mu_);
    config_ = boost::json::parse(json);
  }

  std::atomic<int> drain_calls{0};
  // What reload_config() answers next (and /server_info then shows as last_reload).
  void set_next_reload(ReloadResult r) {
    std::lock_guard lock(mu_);
    next_reload_ = std::move(r);
  }
  std::atomic<bool> throw_on_config_dump{false};
  std::vector<LimiterSnapshot> limits_;
  boost::json::value config_ =
      boost::json::parse(R"({"admin":{"address":"127.0.0.1:0"},"workers":2})");

 private:
  std::atomic<bool> draining_{false};
  std::vector<std::string> unready_;
  mutable std::mutex mu_;
  ReloadResult next_reload_;
  std::optional<ReloadResult> last_reload_;
};

}  // namespace sluice
