#include "src/proxy/worker_context.h"

#include "src/proxy/listener_context.h"
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

UpstreamPort& WorkerContext::upstream_for(const ListenerContext& listener) {
  if (listener.queue_index) return queue_port(*listener.queue_index);
  return pool(listener.cluster_index);
}

}  // namespace sluice
