// Builds the `queue_wait_budget` filter of one listener.
#pragma once

#include <memory>
#include <string>

#include "filters/filter.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/queue_wait_budget/queue_wait_budget_filter.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class QueueWaitBudgetFactory final : public FilterFactory {
 public:
  QueueWaitBudgetFactory(const std::string& listener, std::string name,
                         const QueueWaitBudgetConfig& config, StatsRegistry& registry,
                         const Clock& clock);

  // FilterFactory
  const std::string& name() const override { return name_; }
  const std::string& type() const override { return type_; }
  std::unique_ptr<StreamFilter> create() override;

 private:
  const std::string name_;
  const std::string type_{kQueueWaitBudgetType};
  std::shared_ptr<QueueWaitBudgetShared> shared_;
};

}  // namespace sluice
