// Everything one worker owns for proxying: its upstream pools (one per cluster) and its open
// downstream connections (for drain). Touched only by the worker's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "src/core/asio_dispatcher.h"
#include "src/core/worker.h"
#include "src/proxy/upstream_port.h"
#include "src/stats/gauge.h"

namespace sluice {

class DownstreamConnection;
class UpstreamPool;

// Process-wide counters the drain logic waits on.
struct DrainTracker {
  Gauge active_streams;
  Gauge active_connections;
};

class WorkerContext final : public UpstreamDirectory {
 public:
  WorkerContext(Worker& worker, DrainTracker& drain);
  ~WorkerContext() override;

  Worker& worker() { return worker_; }
  AsioDispatcher& dispatcher() { return worker_.dispatcher(); }
  boost::asio::io_context& io() { return worker_.io(); }
  DrainTracker& drain_tracker() { return drain_; }

  void add_pool(std::unique_ptr<UpstreamPool> pool);
  UpstreamPool& pool(std::size_t cluster_index) { return *pools_[cluster_index]; }
  std::size_t pool_count() const { return pools_.size(); }
  // Queue mode: one port per queue (a QueueFrontend), in Config::queues order.
  void add_queue_port(std::unique_ptr<UpstreamPort> port);
  UpstreamPort& queue_port(std::size_t queue_index) { return *queue_ports_[queue_index]; }
  // Keeps `object` until the context goes, before its pools (queue-mode consumers).
  void keep(std::shared_ptr<void> object) { kept_.push_back(std::move(object)); }
  // UpstreamDirectory: a queue's port by index, a cluster's pool by name.
  UpstreamPort* find(const UpstreamTarget& target) override;

  void add_connection(DownstreamConnection* c) { connections_.insert(c); }
  void remove_connection(DownstreamConnection* c) { connections_.erase(c); }
  // A copy: callers may close connections while iterating.
  std::vector<DownstreamConnection*> connections() const {
    return {connections_.begin(), connections_.end()};
  }

  bool draining() const { return draining_; }
  void set_draining() { draining_ = true; }

 private:
  Worker& worker_;
  DrainTracker& drain_;
  std::vector<std::unique_ptr<UpstreamPool>> pools_;
  std::vector<std::unique_ptr<UpstreamPort>> queue_ports_;
  std::unordered_set<DownstreamConnection*> connections_;
  bool draining_ = false;
  std::vector<std::shared_ptr<void>> kept_;  // last: destroyed first
};

}  // namespace sluice
