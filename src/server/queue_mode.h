// Queue mode's part of the server: per-queue stats, and per worker one QueueFrontend for each
// queue a listener enqueues to. Kept apart from Server so that server.cc only calls in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "src/config/config.h"
#include "src/stats/stats_registry.h"

namespace sluice {

struct ClusterStats;
class FilterChain;
class WorkerContext;
struct DrainTracker;

namespace queue {
struct ConsumerStats;
class QueueConsumer;
struct QueueStats;
}  // namespace queue

class QueueMode {
 public:
  QueueMode(const Config& config, StatsRegistry& stats);
  ~QueueMode();
  QueueMode(const QueueMode&) = delete;
  QueueMode& operator=(const QueueMode&) = delete;

  // Index into Config::queues of the listener's queue; nullopt for a listener on a cluster.
  std::optional<std::size_t> queue_index(const ListenerConfig& listener) const;
  // Adds the worker's frontends (one per queue, used by listeners or not, so that indices
  // match) and starts them on the worker's thread once it runs.
  void add_frontends(WorkerContext& worker, uint32_t worker_index);
  // Builds every consumer on `worker` (its io_context and its cluster pools) and starts them
  // once it runs. Each consumer holds one of `drain`'s active streams until it has drained,
  // so a SIGTERM waits for the calls in hand (up to drain_timeout).
  void add_consumers(WorkerContext& worker, DrainTracker& drain, StatsRegistry& stats);
  // Consumers stop reading and finish what they hold (posted to their worker). Any thread.
  void drain_consumers();
  // The consumers' limiters for /limits and the dashboard, as listener "consumer:<name>" (the
  // name their filter stats carry). Any thread.
  void append_limits(std::vector<LimiterSnapshot>& out) const;
  // "host:pid:random": unique per process incarnation (reply lists are keyed by it).
  const std::string& frontend_id() const { return frontend_id_; }

 private:
  const Config& config_;
  std::string frontend_id_;
  std::vector<std::unique_ptr<queue::QueueStats>> queue_stats_;
  std::vector<std::unique_ptr<ClusterStats>> cluster_stats_;  // "cluster.queue:<name>"
  std::vector<std::unique_ptr<queue::ConsumerStats>> consumer_stats_;
  struct Running;
  std::vector<std::unique_ptr<Running>> consumers_;
  // Consumer chains by the name their stats carry; written before the workers run.
  std::vector<std::pair<std::string, std::shared_ptr<const FilterChain>>> consumer_chains_;
};

}  // namespace sluice
