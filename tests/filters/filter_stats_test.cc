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
  stats.shed("queue_full");
  stats.shed("something_else");
  EXPECT_EQ(stat(registry, "filter.ingress.fs.shed_total"), 2);
  EXPECT_EQ(stat(registry, "filter.ingress.fs.shed_queue_full_total"), 1);
  EXPECT_EQ(stats.shed_total(), 2u);
}

TEST(FilterStatsTest, RecordsDurationsInMicroseconds) {
  StatsRegistry registry;
  FilterStats stats(registry, "ingress", "fs", {});
  stats.queue_wait(1500us);
  stats.rtt(-5us);  // clock skew never records a huge unsigned value
  auto wait = find_stat(registry, "filter.ingress.fs.queue_wait_us");
  EXPECT_EQ(wait->unit, "us");
  EXPECT_EQ(wait->histogram.max, 1500u);
  EXPECT_EQ(find_stat(registry, "filter.ingress.fs.rtt_us")->histogram.max, 0u);
}

}  // namespace
}  // namespace sluice
