#include "src/server/queue_mode.h"

#include <unistd.h>

#include <boost/asio/post.hpp>
#include <random>

#include "src/proxy/cluster_stats.h"
#include "src/proxy/worker_context.h"
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
  return std::string(host[0] != '\0' ? host : "sluice") + ":" + std::to_string(::getpid()) +
         ":" + suffix;
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

QueueMode::~QueueMode() = default;

std::optional<std::size_t> QueueMode::queue_index(const ListenerConfig& listener) const {
  if (listener.queue.empty()) return std::nullopt;
  for (std::size_t i = 0; i < config_.queues.size(); ++i) {
    if (config_.queues[i].name == listener.queue) return i;
  }
  return std::nullopt;  // the loader refuses such a config
}

void QueueMode::add_frontends(WorkerContext& worker, uint32_t worker_index) {
  for (std::size_t i = 0; i < config_.queues.size(); ++i) {
    auto frontend = std::make_unique<queue::QueueFrontend>(
        worker.io(), config_.queues[i], frontend_id_, worker_index, *cluster_stats_[i],
        *queue_stats_[i]);
    queue::QueueFrontend* f = frontend.get();
    worker.add_queue_port(std::move(frontend));
    // The worker's context outlives its io_context's handlers (Server::~Server).
    boost::asio::post(worker.io(), [f] { f->start(); });
  }
}

}  // namespace sluice
