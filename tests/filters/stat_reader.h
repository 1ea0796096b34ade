// Reads one stat out of a StatsRegistry by its dotted name, as the admin endpoints would.
#pragma once

#include <optional>
#include <string>

#include "src/stats/stats_registry.h"

namespace sluice {

inline std::optional<StatValue> find_stat(const StatsRegistry& registry,
                                          const std::string& dotted) {
  for (StatValue& v : registry.snapshot()) {
    if (v.name.dotted() == dotted) return std::move(v);
  }
  return std::nullopt;
}

// The value of a counter or gauge, or the sample count of a histogram; -1 when absent.
inline double stat(const StatsRegistry& registry, const std::string& dotted) {
  auto v = find_stat(registry, dotted);
  return v ? v->number : -1;
}

}  // namespace sluice
