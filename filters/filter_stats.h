// The stats every filter keeps, named filter.<listener>.<filter>.<leaf> (see README "Stats").
// Registered once when the listener's chain is built; recording never locks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class FilterStats {
 public:
  // `shed_reasons` are the LocalReply::reason values this filter can produce; each gets a
  // shed_<reason>_total counter up front.
  FilterStats(StatsRegistry& registry, std::string listener, std::string filter,
              const std::vector<std::string>& shed_reasons);

  StatName name(const std::string& leaf) const;
  StatsRegistry& registry() { return registry_; }

  void admitted() { admitted_total_.inc(); }
  void shed(const std::string& reason);
  void queue_wait(Duration d);
  void rtt(Duration d);

  uint64_t admitted_total() const { return admitted_total_.value(); }
  uint64_t shed_total() const { return shed_total_.value(); }

 private:
  StatsRegistry& registry_;
  const std::string listener_;
  const std::string filter_;
  Counter& admitted_total_;
  Counter& shed_total_;
  std::map<std::string, Counter*> shed_by_reason_;
  Histogram& queue_wait_us_;
  Histogram& rtt_us_;
};

}  // namespace sluice
