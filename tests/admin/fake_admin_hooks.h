// AdminHooks for tests of what the admin side derives from the proxy: limits and the config
// dump are whatever the test sets, and config_dump can be made to throw.
#pragma once

#include <boost/json/parse.hpp>
#include <stdexcept>
#include <utility>
#include <vector>

#include "src/admin/admin_hooks.h"

namespace sluice {

class FakeAdminHooks : public AdminHooks {
 public:
  bool draining() const override { return false; }
  void start_drain() override {}
  std::vector<LimiterSnapshot> limits() const override { return limits_; }
  boost::json::value config_dump() const override {
    if (throw_on_config_dump) throw std::runtime_error("config exploded");
    return config_;
  }
  ServerInfo server_info() const override { return {}; }

  std::vector<LimiterSnapshot> limits_;
  boost::json::value config_ = boost::json::object();
  bool throw_on_config_dump = false;

  void set_config(const char* json) { config_ = boost::json::parse(json); }
};

}  // namespace sluice
