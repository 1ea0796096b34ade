// Filter configurations for the simulation, built the way the YAML loader would build them.
#pragma once

#include <string>

#include "filters/aimd/aimd.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"
#include "src/config/config.h"

namespace sluice::sim {

// The queue-wait budget in front of the limiters in the simulated scenarios.
inline constexpr Duration kBudget = std::chrono::milliseconds(50);

FilterConfig queue_wait_budget(Duration budget);
FilterConfig fixed_semaphore(uint32_t max_concurrency, uint32_t max_queue = 1000);
FilterConfig rtt_gradient(RttGradientConfig config = {});
FilterConfig aimd(Duration slo, AimdConfig config = {});

}  // namespace sluice::sim
