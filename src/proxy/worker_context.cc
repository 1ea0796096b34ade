#include "src/proxy/worker_context.h"

#include "src/proxy/upstream_pool.h"

namespace sluice {

WorkerContext::WorkerContext(Worker& worker, DrainTracker& drain)
    : worker_(worker), drain_(drain) {}

WorkerContext::~WorkerContext() = default;

void WorkerContext::add_pool(std::unique_ptr<UpstreamPool> pool) {
  pools_.push_back(std::move(pool));
}

void WorkerContext::add_queue_port(std::unique_ptr<UpstreamPort> port) {
  queue_ports_.push_back(std::move(port));
}

UpstreamPort* WorkerContext::find(const UpstreamTarget& target) {
  if (target.queue) {
    return *target.queue < queue_ports_.size() ? queue_ports_[*target.queue].get() : nullptr;
  }
  for (const auto& p : pools_) {
    if (p->config().name == target.cluster) return p.get();
  }
  return nullptr;
}

}  // namespace sluice
