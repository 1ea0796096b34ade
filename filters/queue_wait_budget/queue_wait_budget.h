// type: queue_wait_budget. A request not admitted by the later filters within `budget` of its
// headers is shed (see QueueWaitBudgetFilter).
#pragma once

#include <array>
#include <boost/json/object.hpp>
#include <optional>
#include <string_view>

#include "filters/filter_registry.h"
#include "src/core/criticality.h"
#include "src/core/time.h"

namespace sluice {

inline constexpr std::string_view kQueueWaitBudgetType = "queue_wait_budget";

struct QueueWaitBudgetConfig {
  Duration budget{};  // required, > 0
  // `budgets:`, per class (index_of(Criticality)); absent: `budget`.
  std::array<std::optional<Duration>, kCriticalityCount> budgets{};
  std::optional<Duration> retry_pushback;

  bool operator==(const QueueWaitBudgetConfig&) const = default;
  void dump(boost::json::object& out) const;
};

FilterType queue_wait_budget_filter_type();

}  // namespace sluice
