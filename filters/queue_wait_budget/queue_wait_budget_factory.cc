#include "filters/queue_wait_budget/queue_wait_budget_factory.h"

#include <utility>

namespace sluice {

QueueWaitBudgetFactory::QueueWaitBudgetFactory(const std::string& listener, std::string name,
                                               const QueueWaitBudgetConfig& config,
                                               StatsRegistry& registry, const Clock& clock)
    : name_(std::move(name)), shared_(std::make_shared<QueueWaitBudgetShared>()) {
  for (const Criticality c : kCriticalities) {
    shared_->budgets[index_of(c)] = config.budgets[index_of(c)].value_or(config.budget);
  }
  shared_->retry_pushback = config.retry_pushback;
  shared_->clock = &clock;
  shared_->stats = std::make_unique<FilterStats>(registry, listener, name_,
                                                 std::vector<std::string>{"budget", "deadline"});
  shared_->queued = &registry.gauge(shared_->stats->name("queued"),
                                    "Requests waiting for admission under this budget");
  shared_->in_flight = &registry.gauge(shared_->stats->name("in_flight"),
                                       "Requests admitted under this budget that have not ended");
}

std::unique_ptr<StreamFilter> QueueWaitBudgetFactory::create() {
  return std::make_unique<QueueWaitBudgetFilter>(shared_);
}

}  // namespace sluice
