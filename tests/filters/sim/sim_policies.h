// Filter configurations for the simulation, built the way the YAML loader would build them.
#pragma once

#include <string>

#include "filters/aimd/aimd.h"
#include "filters/filter_registry.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/limiter_config.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/queue_limit.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "src/config/config.h"

namespace sluice::sim {

// The queue-wait budget in front of the limiters in the simulated scenarios.
inline constexpr Duration kBudget = std::chrono::milliseconds(50);

FilterConfig queue_wait_budget(Duration budget);
FilterConfig fixed_semaphore(uint32_t max_concurrency, uint32_t max_queue = 1000);
FilterConfig rtt_gradient(RttGradientConfig config = {});
FilterConfig aimd(Duration slo, AimdConfig config = {});

// The controller on the queue estimator that issue 32 builds (QueueLimit), not yet a filter type
// of sluice's: the simulation knows it as `queue_limit`.
struct QueueLimitConfig : QueueLimit::Options, LimiterGateConfig {
  bool operator==(const QueueLimitConfig&) const = default;
  void dump(boost::json::object& out) const;
};
FilterConfig queue_limit(QueueLimitConfig config = {});
// sluice's filter types and `queue_limit`.
const FilterRegistry& filter_types();

}  // namespace sluice::sim
