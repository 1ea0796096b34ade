// The stats every filter keeps, named filter.<listener>.<filter>.<leaf> (see README "Stats").
// Registered once when the listener's chain is built; recording never locks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/core/criticality.h"
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
  StatName class_name(Criticality c, const std::string& leaf) const;
  StatsRegistry& registry() { return registry_; }

  void admitted(Criticality c) {
    admitted_total_.inc();
    classes_[index_of(c)].admitted.inc();
  }
  void shed(Criticality c, const std::string& reason);
  void queue_wait(Criticality c, Duration d);
  void rtt(Duration d);

  uint64_t admitted_total(Criticality c) const { return classes_[index_of(c)].admitted.value(); }
  uint64_t shed_total(Criticality c) const { return classes_[index_of(c)].shed.value(); }

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
  // filter.<listener>.<filter>.<class>.class_{admitted_total,shed_total,queue_wait_us}
  struct ClassStats {
    Counter& admitted;
    Counter& shed;
    Histogram& queue_wait_us;
  };
  std::vector<ClassStats> classes_;
};

}  // namespace sluice
