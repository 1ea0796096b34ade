// Rebuilds a listener's filter chain for a reload, in two steps, so that a reload applies whole
// or not at all. The constructor builds the factories of the filters that are new (a new name,
// or a new type under an old name); it may throw, and nothing running has changed then.
// commit() carries every kept filter (same name and type) over and returns the new chain; it
// never throws. A kept filter with the same parameters keeps its very factory; with new ones,
// its type's make() is given the running factory (FilterBuildContext::previous): the limiter
// filters keep their AdmissionController (gate, waiters, algorithm state, stats) and apply the
// new options to it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "filters/filter_chain.h"
#include "filters/filter_registry.h"
#include "src/config/config.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class ChainRebuild {
 public:
  // `running` was built from `running_configs` (null when the listener had no filters). Both,
  // the registry and the clock must outlive commit().
  ChainRebuild(const std::shared_ptr<const FilterChain>& running,
               const std::vector<FilterConfig>& running_configs, std::vector<FilterConfig> configs,
               std::string listener, StatsRegistry& registry, const Clock& clock,
               const FilterRegistry& types = builtin_filters());
  ChainRebuild(const ChainRebuild&) = delete;
  ChainRebuild& operator=(const ChainRebuild&) = delete;
  ChainRebuild(ChainRebuild&&) = default;

  // The new chain (null when it has no filters). Once.
  std::shared_ptr<FilterChain> commit();
  // Filters whose state carries over ("name (type)"), in chain order.
  const std::vector<std::string>& kept() const { return kept_; }

 private:
  struct Entry {
    FilterConfig config;
    std::shared_ptr<FilterFactory> factory;   // built (new filter, or unchanged kept one)
    std::shared_ptr<FilterFactory> previous;  // kept with new parameters: built by commit()
  };

  std::string listener_;
  StatsRegistry& registry_;
  const Clock& clock_;
  const FilterRegistry& types_;
  std::vector<Entry> entries_;
  std::vector<std::string> kept_;
};

}  // namespace sluice
