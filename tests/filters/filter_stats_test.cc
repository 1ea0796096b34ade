#include "filters/filter_stats.h"

#include <gtest/gtest.h>

#include "tests/filters/stat_reader.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

TEST(FilterStatsTest, NamesStatsByListenerFilterAndLeaf) {
  StatsRegistry registry;
  FilterStats stats(registry, "ingress", "fs", {"queue_full"});
  const StatName n = stats.name("admitted_total");
  EXPECT_EQ(n.dotted(), "filter.ingress.fs.admitted_total");
  EXPECT_EQ(n.prometheus_name(), "sluice_filter_admitted_total");
}

TEST(FilterStatsTest, SheddingCountsTheTotalAndTheReason) {
  StatsRegistry registry;
  FilterStats stats(registry, "ingress", "fs", {"queue_full"});
  stats.shed(Criticality::Critical, "queue_full");
  stats.shed(Criticality::Critical, "something_else");
  EXPECT_EQ(stat(registry, "filter.ingress.fs.shed_total"), 2);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.shed_queue_full_total"), 1);
  EXPECT_EQ(stats.shed_total(), 2u);
}

TEST(FilterStatsTest, RecordsDurationsInMicroseconds) {
  StatsRegistry registry;
  FilterStats stats(registry, "ingress", "fs", {});
  stats.queue_wait(Criticality::Critical, 1500us);
  stats.rtt(-5us);  // clock skew never records a huge unsigned value
  auto wait = find_stat(registry, "filter.ingress.fs.queue_wait_us");
  EXPECT_EQ(wait->unit, "us");
  EXPECT_EQ(wait->histogram.max, 1500u);
  EXPECT_EQ(find_stat(registry, "filter.ingress.fs.rtt_us")->histogram.max, 0u);
}

TEST(FilterStatsTest, KeepsAdmittedShedAndQueueWaitPerClass) {
  StatsRegistry registry;
  FilterStats stats(registry, "ingress", "fs", {"queue_full"});
  stats.admitted(Criticality::Sheddable);
  stats.admitted(Criticality::CriticalPlus);
  stats.shed(Criticality::Sheddable, "queue_full");
  stats.queue_wait(Criticality::SheddablePlus, 2ms);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.admitted_total"), 2);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.sheddable.class_admitted_total"), 1);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.critical_plus.class_admitted_total"), 1);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.sheddable.class_shed_total"), 1);
  EXPECT_EQ(stats.admitted_total(Criticality::Sheddable), 1u);
  EXPECT_EQ(stats.shed_total(Criticality::Critical), 0u);
  EXPECT_EQ(
      find_stat(registry, "filter.ingress.fs.sheddable_plus.class_queue_wait_us")->histogram.max,
      2000u);
  const StatName n = stats.class_name(Criticality::Critical, "class_admitted_total");
  EXPECT_EQ(n.prometheus_name(), "sluice_filter_class_admitted_total");
  EXPECT_EQ(n.prometheus_labels(), "{listener=\"ingress\",filter=\"fs\",criticality=\"critical\"}");
}

}  // namespace
}  // namespace sluice
