#include "filters/filter_stats.h"

#include <algorithm>
#include <utility>

namespace sluice {
namespace {

uint64_t non_negative_us(Duration d) {
  return static_cast<uint64_t>(std::max<int64_t>(0, to_us(d)));
}

}  // namespace

FilterStats::FilterStats(StatsRegistry& registry, std::string listener, std::string filter,
                         const std::vector<std::string>& shed_reasons)
    : registry_(registry),
      listener_(std::move(listener)),
      filter_(std::move(filter)),
      admitted_total_(registry.counter(name("admitted_total"),
                                       "Requests that passed this filter and were sent upstream")),
      shed_total_(registry.counter(name("shed_total"), "Requests this filter answered locally")),
      queue_wait_us_(registry.histogram(
          name("queue_wait_us"),
          "Time requests waited in this filter before going on or being shed", "us")),
      rtt_us_(registry.histogram(
          name("rtt_us"),
          "Admission to the first response message of OK answers: the latency sample", "us")) {
  for (const std::string& reason : shed_reasons) {
    shed_by_reason_[reason] = &registry.counter(name("shed_" + reason + "_total"),
                                                "Requests this filter shed because of " + reason);
  }
  classes_.reserve(kCriticalityCount);
  for (const Criticality c : kCriticalities) {
    classes_.push_back(
        ClassStats{registry.counter(class_name(c, "class_admitted_total"),
                                    "Requests of this class that passed this filter"),
                   registry.counter(class_name(c, "class_shed_total"),
                                    "Requests of this class this filter answered locally"),
                   registry.histogram(class_name(c, "class_queue_wait_us"),
                                      "Time requests of this class waited in this filter", "us")});
  }
}

StatName FilterStats::class_name(Criticality c, const std::string& leaf) const {
  return StatName{"filter",
                  {{"listener", listener_}, {"filter", filter_}, {"criticality", to_string(c)}},
                  leaf};
}

StatName FilterStats::name(const std::string& leaf) const {
  return StatName{"filter", {{"listener", listener_}, {"filter", filter_}}, leaf};
}

void FilterStats::shed(Criticality c, const std::string& reason) {
  shed_total_.inc();
  classes_[index_of(c)].shed.inc();
  auto it = shed_by_reason_.find(reason);
  if (it != shed_by_reason_.end()) it->second->inc();
}

void FilterStats::queue_wait(Criticality c, Duration d) {
  queue_wait_us_.record(non_negative_us(d));
  classes_[index_of(c)].queue_wait_us.record(non_negative_us(d));
}

void FilterStats::rtt(Duration d) { rtt_us_.record(non_negative_us(d)); }

}  // namespace sluice
