#include "src/server/queue_mode.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <random>

#include "filters/filter_chain.h"
#include "filters/filter_registry.h"
#include "src/core/time.h"
#include "src/proxy/cluster_stats.h"
#include "src/proxy/upstream_pool.h"
#include "src/proxy/worker_context.h"
#include "src/queue/queue_consumer.h"
#include "src/queue/queue_frontend.h"
#include "src/queue/queue_stats.h"

namespace sluice {

namespace {

std::string make_frontend_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::random_device rd;
  char suffix[9];
  std::snprintf(suffix, sizeof suffix, "%08x", rd());
  return std::string(host[0] != '\0' ? host : "sluice") + ":" + std::to_string(::getpid()) + ":" +
         suffix;
}

}  // namespace

QueueMode::QueueMode(const Config& config, StatsRegistry& stats)
    : config_(config), frontend_id_(make_frontend_id()) {
  for (const QueueConfig& q : config.queues) {
    queue_stats_.push_back(std::make_unique<queue::QueueStats>(stats, q.name));
    // Queue names cannot contain ':', so this never meets a real cluster's stats.
    cluster_stats_.push_back(std::make_unique<ClusterStats>(stats, "queue:" + q.name));
  }
}

// A consumer and the drain hold it keeps on the server.
struct QueueMode::Running {
  queue::QueueConsumer* consumer = nullptr;  // owned by `worker` (dies before its io_context)
  WorkerContext* worker = nullptr;
  DrainTracker* drain = nullptr;
  bool holding = false;  // counts as one active stream until drained
};

QueueMode::~QueueMode() {
  for (auto& r : consumers_) {
    if (r->holding) r->drain->active_streams.sub(1);
  }
}

std::optional<std::size_t> QueueMode::queue_index(const ListenerConfig& listener) const {
  if (listener.queue.empty()) return std::nullopt;
  for (std::size_t i = 0; i < config_.queues.size(); ++i) {
    if (config_.queues[i].name == listener.queue) return i;
  }
  return std::nullopt;  // the loader refuses such a config
}

void QueueMode::add_frontends(WorkerContext& worker, uint32_t worker_index) {
  for (std::size_t i = 0; i < config_.queues.size(); ++i) {
    auto frontend =
        std::make_unique<queue::QueueFrontend>(worker.io(), config_.queues[i], frontend_id_,
                                               worker_index, *cluster_stats_[i], *queue_stats_[i]);
    queue::QueueFrontend* f = frontend.get();
    worker.add_queue_port(std::move(frontend));
    // The worker's context outlives its io_context's handlers (Server::~Server).
    boost::asio::post(worker.io(), [f] { f->start(); });
  }
}

void QueueMode::add_consumers(WorkerContext& worker, DrainTracker& drain, StatsRegistry& stats) {
  for (const ConsumerConfig& c : config_.consumers) {
    const QueueConfig* queue = config_.find_queue(c.queue);
    std::size_t cluster = 0;
    while (config_.clusters[cluster].name != c.cluster) ++cluster;
    std::shared_ptr<const FilterChain> chain;
    if (!c.filters.empty()) {
      // Stats under filter.consumer:<name>.<filter>: ':' never occurs in a listener name.
      chain = make_filter_chain(c.filters, "consumer:" + c.name, stats, RealClock::instance());
    }
    if (chain) consumer_chains_.emplace_back("consumer:" + c.name, chain);
    consumer_stats_.push_back(std::make_unique<queue::ConsumerStats>(stats, c.name));
    auto running = std::make_unique<Running>();
    running->worker = &worker;
    running->drain = &drain;
    auto owned = std::make_shared<queue::QueueConsumer>(
        worker.io(), worker.dispatcher(), *queue, c, frontend_id_ + ":" + c.name, std::move(chain),
        worker.pool(cluster), *consumer_stats_.back());
    queue::QueueConsumer* consumer = owned.get();
    worker.keep(std::move(owned));
    running->consumer = consumer;
    running->holding = true;
    drain.active_streams.add(1);
    boost::asio::post(worker.io(), [consumer] { consumer->start(); });
    consumers_.push_back(std::move(running));
  }
}

void QueueMode::append_limits(std::vector<LimiterSnapshot>& out) const {
  for (const auto& [name, chain] : consumer_chains_) {
    for (auto& snap : chain->snapshots()) {
      snap.listener = name;
      out.push_back(std::move(snap));
    }
  }
}

void QueueMode::drain_consumers() {
  for (auto& r : consumers_) {
    Running* running = r.get();
    boost::asio::post(running->worker->io(), [running] {
      running->consumer->drain([running] {
        if (!running->holding) return;
        running->holding = false;
        running->drain->active_streams.sub(1);
      });
    });
  }
}

}  // namespace sluice
