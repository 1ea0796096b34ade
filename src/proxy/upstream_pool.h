// A worker's connections to one cluster: round-robin over the cluster's addresses, more
// connections when the peer's SETTINGS_MAX_CONCURRENT_STREAMS is reached, reconnect with
// exponential backoff, and a fast UNAVAILABLE when no address can be reached.
//
// The addresses, their health and the settings come from ClusterSnapshots the cluster's
// membership publishes (update()). One mechanism covers an address that vanished from DNS, an
// endpoint removed by a reload and changed connection settings: the old endpoint is retired,
// its connections drain (no new streams; the streams on them finish; then they close) and new
// calls go to new connections.
//
// Choosing an address: active health first (an address the health check holds unhealthy gets
// no new calls while another is healthy; with none healthy, all are used: panic routing), then
// passive failures (an address whose last connection failed gets streams only when no other can
// take them; it is probed with a connection of its own once its backoff ends).
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/time.h"
#include "src/proxy/cluster_snapshot.h"
#include "src/proxy/upstream_endpoint.h"
#include "src/proxy/upstream_port.h"

namespace sluice {

class UpstreamConnection;
class WorkerContext;
struct ClusterStats;

class UpstreamPool final : public UpstreamPort {
 public:
  UpstreamPool(WorkerContext& worker, ClusterStats& stats,
               std::shared_ptr<const ClusterSnapshot> snapshot);
  ~UpstreamPool() override;

  // UpstreamPort
  void assign(UpstreamClient& client) override { assign(client, nullptr); }
  void reassign(UpstreamClient& client, const UpstreamLink& failed) override {
    assign(client, &failed);
  }
  ClusterStats& stats() override { return stats_; }
  std::optional<Duration> max_stream_duration() const override {
    return snapshot_->config->max_stream_duration;
  }

  // Takes the cluster's new addresses, health and settings (see the header comment). Calls in
  // flight keep their connections.
  void update(std::shared_ptr<const ClusterSnapshot> snapshot);
  // The cluster was removed by a reload: every connection drains, new calls get UNAVAILABLE.
  void retire_all(const std::string& why);

  // Connection events.
  void on_connect_result(UpstreamConnection& conn, bool ok, const std::string& error);
  void on_connection_closed(UpstreamConnection& conn);

  // Shutdown: stop new streams, close connections when their streams finish.
  void drain();
  void close_all();

  WorkerContext& worker() { return worker_; }
  const ClusterConfig& config() const { return *snapshot_->config; }
  std::size_t connection_count() const { return connections_.size(); }
  std::size_t endpoint_count() const { return endpoints_.size(); }

 private:
  using EndpointPtr = std::shared_ptr<UpstreamEndpoint>;

  // Finds `client` a connection, never `avoid` while there is another choice.
  void assign(UpstreamClient& client, const UpstreamLink* avoid);
  // Puts `client` on endpoint `idx` (an existing connection or a new one); false when the
  // endpoint is in backoff.
  bool assign_to(std::size_t idx, UpstreamClient& client, const UpstreamLink* avoid);
  // A failing endpoint out of backoff gets one connection attempt of its own (no stream waits on
  // it while healthy endpoints take them).
  void probe(std::size_t idx, TimePoint now);
  UpstreamConnection* open_connection(std::size_t idx);
  UpstreamConnection* pick(const UpstreamEndpoint& endpoint, const UpstreamLink* avoid);
  // Drains every connection of `endpoint`, which has left endpoints_.
  void retire(const EndpointPtr& endpoint, const char* why);
  void fail_unavailable(UpstreamClient& client, TimePoint now);
  Duration backoff(uint32_t failures);

  WorkerContext& worker_;
  ClusterStats& stats_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
  std::vector<EndpointPtr> endpoints_;  // the snapshot's addresses, in its order
  std::vector<std::shared_ptr<UpstreamConnection>> connections_;
  std::size_t next_endpoint_ = 0;
  uint64_t jitter_state_;
  bool draining_ = false;
  std::string removed_;  // retire_all(): why the cluster takes no calls
};

}  // namespace sluice
