// A worker's connections to one cluster: round-robin over endpoints, more connections when the
// peer's SETTINGS_MAX_CONCURRENT_STREAMS is reached, reconnect with exponential backoff, and a
// fast UNAVAILABLE when no endpoint can be reached. An endpoint whose last connection failed
// (connect, TLS, keepalive) gets streams only when no healthy endpoint can take them; it is
// probed with a connection of its own once its backoff ends.
#pragma once

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/config/config.h"
#include "src/core/time.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

class UpstreamConnection;
class WorkerContext;
struct ClusterStats;

class UpstreamPool final : public UpstreamPort {
 public:
  UpstreamPool(WorkerContext& worker, const ClusterConfig& config,
               std::vector<boost::asio::ip::tcp::endpoint> endpoints, ClusterStats& stats,
               std::shared_ptr<boost::asio::ssl::context> tls);
  ~UpstreamPool() override;

  // UpstreamPort
  void assign(UpstreamClient& client) override { assign(client, nullptr); }
  void reassign(UpstreamClient& client, const UpstreamLink& failed) override {
    assign(client, &failed);
  }
  ClusterStats& stats() override { return stats_; }
  std::optional<Duration> max_stream_duration() const override {
    return config_.max_stream_duration;
  }

  // The endpoint's SETTINGS_MAX_CONCURRENT_STREAMS as last seen (none before its first SETTINGS):
  // how many streams a connection still connecting may be given.
  std::optional<std::size_t> stream_limit_hint(std::size_t endpoint_index) const {
    return endpoints_[endpoint_index].stream_limit;
  }
  void learn_stream_limit(std::size_t endpoint_index, std::size_t limit) {
    endpoints_[endpoint_index].stream_limit = std::max<std::size_t>(limit, 1);
  }

  // Connection events.
  void on_connect_result(UpstreamConnection& conn, bool ok, const std::string& error);
  void on_connection_closed(UpstreamConnection& conn);

  // Shutdown: stop new streams, close connections when their streams finish.
  void drain();
  void close_all();

  const ClusterConfig& config() const { return config_; }
  WorkerContext& worker() { return worker_; }
  // The cluster's TLS context (nullptr: h2c) and the name to verify / send as SNI.
  boost::asio::ssl::context* tls() const { return tls_.get(); }
  std::string tls_server_name(std::size_t endpoint_index) const;
  std::size_t connection_count() const { return connections_.size(); }

 private:
  struct Endpoint {
    boost::asio::ip::tcp::endpoint address;
    uint32_t consecutive_failures = 0;
    TimePoint retry_at{};  // no new connection attempt before this
    std::string last_error;
    std::optional<std::size_t> stream_limit;
  };

  // Finds `client` a connection, never `avoid` while there is another choice.
  void assign(UpstreamClient& client, const UpstreamLink* avoid);
  // Puts `client` on endpoint `idx` (an existing connection or a new one); false when the
  // endpoint is in backoff.
  bool assign_to(std::size_t idx, UpstreamClient& client, const UpstreamLink* avoid);
  // A failing endpoint out of backoff gets one connection attempt of its own (no stream waits on
  // it while healthy endpoints take them).
  void probe(std::size_t idx, TimePoint now);
  UpstreamConnection* open_connection(std::size_t idx);
  UpstreamConnection* pick(std::size_t endpoint_index, const UpstreamLink* avoid);
  Duration backoff(uint32_t failures);

  WorkerContext& worker_;
  const ClusterConfig& config_;
  ClusterStats& stats_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::vector<Endpoint> endpoints_;
  std::vector<std::shared_ptr<UpstreamConnection>> connections_;
  std::size_t next_endpoint_ = 0;
  uint64_t jitter_state_;
  bool draining_ = false;
};

}  // namespace sluice
