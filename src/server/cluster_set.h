// The running server's clusters: for each, its stats, its membership (addresses, DNS and health
// checks, on the main thread) and a pool on every worker, which gets each snapshot the
// membership publishes (posted to the worker's io_context: no lock on the call path).
//
// Clusters live in slots that never move or go away, so a listener's cluster index stays valid
// across reloads: a cluster removed by a reload keeps its slot (its pools drained, its checks
// stopped) and takes it again if it comes back under the same name.
//
// Everything runs on the main thread, except readiness() (any thread).
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/config/config.h"
#include "src/core/asio_dispatcher.h"
#include "src/proxy/asio_name_resolver.h"
#include "src/proxy/cluster_membership.h"
#include "src/proxy/cluster_snapshot.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class WorkerContext;
struct ClusterStats;

class ClusterSet {
 public:
  // How long startup waits for the first resolution of every endpoint name.
  static constexpr Duration kStartupResolveWait = std::chrono::seconds(5);

  ClusterSet(StatsRegistry& stats, boost::asio::io_context& main_io);
  ~ClusterSet();
  ClusterSet(const ClusterSet&) = delete;
  ClusterSet& operator=(const ClusterSet&) = delete;

  // Startup, in this order. build() throws std::runtime_error (an unreadable TLS file).
  void build(const std::vector<ClusterConfig>& clusters);
  // Runs the main io_context until every endpoint name has been resolved once (well or not) or
  // kStartupResolveWait passed; names still pending go on resolving in the background.
  void wait_for_names();
  // Gives `worker` a pool of every cluster, in slot order. Call before the worker runs.
  void add_pools(WorkerContext& worker);

  // The slot of cluster `name` (an index into every worker's pools); nullopt: no such cluster.
  std::optional<std::size_t> index(const std::string& name) const;

  // A reload, in two steps: prepare() builds what can fail (TLS contexts of clusters whose
  // connection settings change or that are new) and changes nothing; commit() applies it and
  // cannot fail. `next` is the whole new list.
  struct Prepared;
  std::shared_ptr<Prepared> prepare(const std::vector<ClusterConfig>& next);
  void commit(const std::shared_ptr<Prepared>& prepared);

  // For /ready: one line per cluster of `routes` (listener, cluster) that has no healthy
  // address: "NO_HEALTHY_UPSTREAM cluster app (listener ingress): 0 of 2 addresses healthy:
  // 10.0.0.1:50051 NOT_SERVING; ...". Any thread.
  std::vector<std::string> unready_reasons(
      const std::vector<std::pair<std::string, std::string>>& routes) const;

  // Shutdown: stop resolving and health checking.
  void stop();

 private:
  struct Slot {
    std::string name;
    std::unique_ptr<ClusterStats> stats;
    std::shared_ptr<const ClusterConfig> config;  // nullptr while removed
    std::shared_ptr<const UpstreamSettings> settings;
    std::unique_ptr<ClusterMembership> membership;
    bool pools_added = false;  // every worker has this slot's pool (or will, in posting order)
  };

  Slot& make_slot(const std::string& name);
  void publish(std::size_t index, const std::shared_ptr<const ClusterSnapshot>& snapshot);
  std::size_t unresolved() const;
  Slot* find(const std::string& name) const;

  StatsRegistry& stats_;
  boost::asio::io_context& main_io_;
  AsioDispatcher loop_;
  AsioNameResolver resolver_;
  std::vector<WorkerContext*> workers_;
  mutable std::mutex slots_mu_;  // the vector's shape (readiness() reads it from the admin thread)
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace sluice
