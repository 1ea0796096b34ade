#include "tests/filters/sim/sim_policies.h"

#include <stdexcept>

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

void QueueLimitConfig::dump(boost::json::object& out) const {
  out["initial_limit"] = initial_limit;
  out["min_limit"] = min_limit;
  out["max_limit"] = max_limit;
  dump_gate_config(*this, out);
}

FilterConfig queue_limit(QueueLimitConfig config) {
  return FilterConfig{"queue_limit", "queue_limit", config};
}

const FilterRegistry& filter_types() {
  static const FilterRegistry types = [] {
    std::vector<FilterType> all = builtin_filters().types();
    all.push_back(FilterType{"queue_limit",
                             [](const ConfigNode&) -> std::shared_ptr<const FilterParams> {
                               throw std::logic_error(
                                   "queue_limit is built by the simulation only");
                             },
                             [](const FilterBuildContext& context, const FilterParams& params) {
                               const auto& c = params_of<QueueLimitConfig>(params);
                               return make_limiter_filter(context, "queue_limit", c.initial_limit,
                                                          c, std::make_unique<QueueLimit>(c));
                             }});
    return FilterRegistry(std::move(all));
  }();
  return types;
}

}  // namespace sluice::sim
