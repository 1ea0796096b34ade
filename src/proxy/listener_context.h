// What every worker shares about one listener: its config, stats and the snapshot of what a
// reload can change (filter chain, criticality rules, access log).
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>

#include "src/config/config.h"
#include "src/proxy/listener_stats.h"

namespace sluice {

class AccessLog;
class FilterChain;

// What a connection takes from its listener when it is accepted, and keeps until it closes: a
// reload that changes them reaches new connections only (an open connection has already
// advertised its SETTINGS).
struct ConnectionSettings {
  Http2Config http2;
  ConnectionLimits limits;
};

// What a request takes from its listener when its headers are complete, and holds until it
// ends: a reload publishes a new one for new requests, and calls in flight finish under theirs.
struct ListenerSnapshot {
  std::shared_ptr<const FilterChain> chain;  // nullptr when the listener has no filters
  std::optional<CriticalityConfig> criticality;
  std::shared_ptr<AccessLog> access_log;                 // nullptr: off
  std::shared_ptr<const ConnectionSettings> connection;  // never nullptr
};

struct ListenerContext {
  ListenerContext(const ListenerConfig& cfg, std::size_t cluster, StatsRegistry& registry,
                  std::shared_ptr<const FilterChain> filter_chain,
                  std::shared_ptr<boost::asio::ssl::context> tls_context);
  ~ListenerContext();

  // The snapshot new requests use. Any thread.
  std::shared_ptr<const ListenerSnapshot> current() const {
    return snapshot_.load(std::memory_order_acquire);
  }
  void publish(std::shared_ptr<const ListenerSnapshot> snapshot) {
    snapshot_.store(std::move(snapshot), std::memory_order_release);
  }

  // As started: a reload that would change the address, cluster or TLS is refused (ConfigDiff).
  // HTTP/2 settings and limits: current()->connection, taken by each connection when accepted;
  // filters and criticality: current(), taken by each request.
  const ListenerConfig& config;
  std::size_t cluster_index;               // into Config::clusters (unused when queue_index is set)
  std::optional<std::size_t> queue_index;  // into Config::queues: a queue-mode listener
  ListenerStats stats;
  std::shared_ptr<boost::asio::ssl::context> tls;  // nullptr: h2c
  std::atomic<uint32_t> connections{0};            // open downstream connections, all workers

 private:
  std::atomic<std::shared_ptr<const ListenerSnapshot>> snapshot_;
};

}  // namespace sluice
