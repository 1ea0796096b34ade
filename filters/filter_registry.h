// The one list of filter types. An entry says how a `filters:` entry of that type is read from
// YAML and how its FilterFactory is built; everything else about a type (its config struct and
// defaults, its stats and gauges, its algorithm) lives in its own folder, filters/<type>/.
// Adding a filter is that folder plus one line in filter_registry.cc.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "filters/filter.h"
#include "src/config/config_node.h"
#include "src/config/filter_params.h"
#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// What a factory is built from, besides its parameters.
struct FilterBuildContext {
  const std::string& listener;
  const std::string& name;  // unique within the listener
  StatsRegistry& stats;
  const Clock& clock;
  // A reload: the running chain's factory of this name and type (null when the filter is new).
  // make() may carry its state over; it must not throw when given one (ChainRebuild applies
  // kept filters only once every new one was built).
  FilterFactory* previous = nullptr;
};

struct FilterType {
  std::string_view name;  // the YAML `type`
  // Validates an entry (its keys included) and returns its parameters; throws ConfigError.
  std::shared_ptr<const FilterParams> (*read)(const ConfigNode& node);
  // Builds the listener's factory; `params` came from read(). Registers the filter's stats.
  std::unique_ptr<FilterFactory> (*make)(const FilterBuildContext& context,
                                         const FilterParams& params);
};

class FilterRegistry final : public FilterTypes {
 public:
  explicit FilterRegistry(std::vector<FilterType> types) : types_(std::move(types)) {}

  const FilterType* find(std::string_view name) const;
  const std::vector<FilterType>& types() const { return types_; }

  // FilterTypes
  std::vector<std::string_view> names() const override;
  std::shared_ptr<const FilterParams> read(std::string_view type,
                                           const ConfigNode& node) const override;

 private:
  std::vector<FilterType> types_;
};

// sluice's filters.
const FilterRegistry& builtin_filters();

// The parameters of a FilterType's make() as the type's struct. Throws std::invalid_argument
// when they were made for another type (a caller's bug: the loader never does that).
template <class T>
const T& params_of(const FilterParams& params) {
  if (const auto* p = dynamic_cast<const FilterParamsOf<T>*>(&params)) return p->value();
  throw std::invalid_argument("filter parameters do not match the filter's type");
}

}  // namespace sluice
