#include "filters/filter_registry.h"

#include "filters/aimd/aimd.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "filters/rtt_gradient/rtt_gradient.h"

namespace sluice {

const FilterRegistry& builtin_filters() {
  static const FilterRegistry registry({
      fixed_semaphore_filter_type(),
      queue_wait_budget_filter_type(),
      rtt_gradient_filter_type(),
      aimd_filter_type(),
  });
  return registry;
}

const FilterType* FilterRegistry::find(std::string_view name) const {
  for (const FilterType& t : types_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::vector<std::string_view> FilterRegistry::names() const {
  std::vector<std::string_view> out;
  out.reserve(types_.size());
  for (const FilterType& t : types_) out.push_back(t.name);
  return out;
}

std::shared_ptr<const FilterParams> FilterRegistry::read(std::string_view type,
                                                         const ConfigNode& node) const {
  const FilterType* t = find(type);
  if (t == nullptr) node.fail("unknown filter type \"" + std::string(type) + "\"");
  return t->read(node);
}

}  // namespace sluice
