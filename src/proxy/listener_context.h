// What every worker shares about one listener bound at one address: its name, stats and the
// snapshot of what a reload can change (filter chain, criticality rules, access log, upstream,
// HTTP/2 settings, limits and TLS). A listener moved to another address by a reload gets a new
// context (same name, hence the same stats); the old one drains its connections and goes with
// the last of them (each connection holds it).
#pragma once

#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>

#include "src/config/config.h"
#include "src/proxy/listener_stats.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

class AccessLog;
class FilterChain;

// What a connection takes from its listener when it is accepted, and keeps until it closes: a
// reload that changes them reaches new connections only (an open connection has already
// advertised its SETTINGS and finished its TLS handshake).
struct ConnectionSettings {
  Http2Config http2;
  ConnectionLimits limits;
  std::shared_ptr<boost::asio::ssl::context> tls;  // nullptr: h2c
};

// What a request takes from its listener when its headers are complete, and holds until it
// ends: a reload publishes a new one for new requests, and calls in flight finish under theirs.
struct ListenerSnapshot {
  std::shared_ptr<const FilterChain> chain;  // nullptr when the listener has no filters
  std::optional<CriticalityConfig> criticality;
  std::shared_ptr<AccessLog> access_log;                 // nullptr: off
  std::shared_ptr<const ConnectionSettings> connection;  // never nullptr
  UpstreamTarget upstream;                               // looked up when a call is admitted
};

struct ListenerContext {
  ListenerContext(std::string listener_name, StatsRegistry& registry,
                  std::shared_ptr<const ListenerSnapshot> snapshot);
  ~ListenerContext();

  // The snapshot new requests (and, for `connection`, new connections) use. Any thread.
  std::shared_ptr<const ListenerSnapshot> current() const {
    return snapshot_.load(std::memory_order_acquire);
  }
  void publish(std::shared_ptr<const ListenerSnapshot> snapshot) {
    snapshot_.store(std::move(snapshot), std::memory_order_release);
  }

  const std::string name;
  ListenerStats stats;                   // by name: a moved listener's continue
  std::atomic<uint32_t> connections{0};  // open downstream connections, all workers
  // Set when a reload removed or moved the listener: its sockets are closed and its connections
  // drain. A connection accepted in the same turn learns it when its session starts.
  std::atomic<bool> draining{false};

 private:
  std::atomic<std::shared_ptr<const ListenerSnapshot>> snapshot_;
};

// The snapshot of a listener as `cfg` describes it; the parts built elsewhere are passed in.
std::shared_ptr<const ListenerSnapshot> make_listener_snapshot(
    const ListenerConfig& cfg, UpstreamTarget upstream, std::shared_ptr<const FilterChain> chain,
    std::shared_ptr<boost::asio::ssl::context> tls, std::shared_ptr<AccessLog> access_log);

}  // namespace sluice
