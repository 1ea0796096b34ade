#include "tests/filters/sim/sim_policies.h"

namespace sluice::sim {

FilterConfig queue_wait_budget(Duration budget) {
  QueueWaitBudgetConfig c;
  c.budget = budget;
  return FilterConfig{"queue_wait_budget", "queue_wait_budget", c};
}

FilterConfig fixed_semaphore(uint32_t max_concurrency, uint32_t max_queue) {
  FixedSemaphoreConfig c;
  c.max_concurrency = max_concurrency;
  c.max_queue = max_queue;
  return FilterConfig{"fixed_semaphore", "fixed_semaphore", c};
}

FilterConfig rtt_gradient(RttGradientConfig config) {
  return FilterConfig{"rtt_gradient", "rtt_gradient", config};
}

FilterConfig aimd(Duration slo, AimdConfig config) {
  config.latency_slo = slo;
  return FilterConfig{"aimd", "aimd", config};
}

}  // namespace sluice::sim
