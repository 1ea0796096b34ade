#include "filters/queue_wait_budget/queue_wait_budget.h"

#include "filters/queue_wait_budget/queue_wait_budget_factory.h"
#include "src/config/config_dump.h"

namespace sluice {
namespace {

std::shared_ptr<const FilterParams> read_queue_wait_budget(const ConfigNode& node) {
  node.check_keys({"type", "name", "budget", "budgets", "retry_pushback"});
  QueueWaitBudgetConfig c;
  c.budget = node.require("budget").as_duration();
  if (auto budgets = node.find("budgets")) {
    std::vector<std::string_view> classes;
    classes.reserve(kCriticalities.size());
    for (const Criticality k : kCriticalities) classes.emplace_back(to_string(k));
    budgets->check_keys(classes);
    for (const Criticality k : kCriticalities) {
      if (auto n = budgets->find(to_string(k))) c.budgets[index_of(k)] = n->as_duration();
    }
  }
  if (auto n = node.find_optional("retry_pushback")) c.retry_pushback = n->as_duration();
  return std::make_shared<const FilterParamsOf<QueueWaitBudgetConfig>>(c);
}

std::unique_ptr<FilterFactory> make_queue_wait_budget(const FilterBuildContext& context,
                                                      const FilterParams& params) {
  return std::make_unique<QueueWaitBudgetFactory>(context.listener, context.name,
                                                  params_of<QueueWaitBudgetConfig>(params),
                                                  context.stats, context.clock);
}

}  // namespace

void QueueWaitBudgetConfig::dump(boost::json::object& out) const {
  out["budget"] = dump_duration(budget);
  boost::json::object per_class;
  for (const Criticality k : kCriticalities) {
    if (budgets[index_of(k)]) per_class[to_string(k)] = dump_duration(*budgets[index_of(k)]);
  }
  out["budgets"] = std::move(per_class);
  out["retry_pushback"] = dump_optional_duration(retry_pushback);
}

FilterType queue_wait_budget_filter_type() {
  return {kQueueWaitBudgetType, &read_queue_wait_budget, &make_queue_wait_budget};
}

}  // namespace sluice
