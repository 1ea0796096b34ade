#include "src/proxy/worker_context.h"

#include "src/proxy/upstream_pool.h"

namespace sluice {

WorkerContext::WorkerContext(Worker& worker, DrainTracker& drain)
    : worker_(worker), drain_(drain) {}

WorkerContext::~WorkerContext() = default;

void WorkerContext::add_pool(std::unique_ptr<UpstreamPool> pool) {
  pools_.push_back(std::move(pool));
}

}  // namespace sluice
