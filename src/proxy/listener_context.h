// What every worker shares about one listener: its config, stats and filter chain.
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "src/config/config.h"
#include "src/proxy/listener_stats.h"

namespace sluice {

class AccessLog;
class FilterChain;

struct ListenerContext {
  ListenerContext(const ListenerConfig& cfg, std::size_t cluster, StatsRegistry& registry,
                  std::unique_ptr<FilterChain> filter_chain,
                  std::shared_ptr<boost::asio::ssl::context> tls_context);
  ~ListenerContext();

  const ListenerConfig& config;
  std::size_t cluster_index;  // into Config::clusters
  ListenerStats stats;
  std::unique_ptr<FilterChain> chain;              // nullptr when the listener has no filters
  std::shared_ptr<boost::asio::ssl::context> tls;  // nullptr: h2c
  AccessLog* access_log = nullptr;                 // nullptr: off
  std::atomic<uint32_t> connections{0};            // open downstream connections, all workers
};

}  // namespace sluice
