#include "src/stats/stats_registry.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sluice {
namespace {

StatName name(std::string leaf) { return StatName{"listener", {{"listener", "in"}}, leaf}; }

TEST(StatsRegistryTest, RegisteringTheSameNameTwiceReturnsTheSameStat) {
  StatsRegistry r;
  Counter& a = r.counter(name("rq_total"), "requests");
  Counter& b = r.counter(name("rq_total"), "other help is ignored");
  EXPECT_EQ(&a, &b);
  Histogram& h1 = r.histogram(name("rtt_us"), "rtt", "us");
  Histogram& h2 = r.histogram(name("rtt_us"), "rtt", "us");
  EXPECT_EQ(&h1, &h2);
  EXPECT_EQ(r.snapshot().size(), 2u);
}

TEST(StatsRegistryTest, RegisteringANameWithAnotherTypeThrows) {
  StatsRegistry r;
  r.counter(name("x"), "");
  EXPECT_THROW(r.gauge(name("x"), ""), std::logic_error);
  EXPECT_THROW(r.float_gauge(name("x"), ""), std::logic_error);
  EXPECT_THROW(r.histogram(name("x"), "", "us"), std::logic_error);
  EXPECT_THROW(r.gauge_fn(name("x"), "", [] { return 1.0; }), std::logic_error);
  r.gauge(name("g"), "");
  EXPECT_THROW(r.counter(name("g"), ""), std::logic_error);
}

TEST(StatsRegistryTest, SnapshotIsSortedByDottedNameWithCurrentValues) {
  StatsRegistry r;
  r.gauge(StatName{"server", {}, "b"}, "gauge b").set(-3);
  r.counter(StatName{"cluster", {{"cluster", "svc"}}, "a_total"}, "counter a").inc(5);
  r.float_gauge(StatName{"server", {}, "a"}, "float a").set(0.5);
  r.gauge_fn(StatName{"server", {}, "c"}, "fn c", [] { return 42.0; });
  Histogram& h = r.histogram(StatName{"listener", {{"listener", "in"}}, "rtt_us"}, "rtt", "us");
  h.record(10);
  h.record(20);

  const auto s = r.snapshot();
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].name.dotted(), "cluster.svc.a_total");
  EXPECT_EQ(s[0].type, StatType::Counter);
  EXPECT_EQ(s[0].number, 5.0);
  EXPECT_EQ(s[0].help, "counter a");
  EXPECT_EQ(s[1].name.dotted(), "listener.in.rtt_us");
  EXPECT_EQ(s[1].type, StatType::Histogram);
  EXPECT_EQ(s[1].unit, "us");
  EXPECT_EQ(s[1].histogram.count, 2u);
  EXPECT_EQ(s[1].histogram.sum, 30u);
  EXPECT_EQ(s[2].name.dotted(), "server.a");
  EXPECT_EQ(s[2].type, StatType::FloatGauge);
  EXPECT_EQ(s[2].number, 0.5);
  EXPECT_EQ(s[3].name.dotted(), "server.b");
  EXPECT_EQ(s[3].number, -3.0);
  EXPECT_EQ(s[4].name.dotted(), "server.c");
  EXPECT_EQ(s[4].type, StatType::GaugeFn);
  EXPECT_EQ(s[4].number, 42.0);
}

TEST(StatsRegistryTest, ComputedGaugeIsEvaluatedAtEachSnapshot) {
  StatsRegistry r;
  int calls = 0;
  r.gauge_fn(StatName{"server", {}, "calls"}, "", [&calls] { return ++calls; });
  EXPECT_EQ(r.snapshot()[0].number, 1.0);
  EXPECT_EQ(r.snapshot()[0].number, 2.0);
}

TEST(StatsRegistryTest, AComputedGaugeRegisteredAgainReadsTheNewFunction) {
  StatsRegistry r;
  r.gauge_fn(StatName{"server", {}, "g"}, "", [] { return 1.0; });
  r.gauge_fn(StatName{"server", {}, "g"}, "", [] { return 2.0; });
  ASSERT_EQ(r.snapshot().size(), 1u);
  EXPECT_EQ(r.snapshot()[0].number, 2.0);
}

TEST(StatsRegistryTest, ReferencesStayValidAsMoreStatsAreAdded) {
  StatsRegistry r;
  Counter& first = r.counter(StatName{"server", {}, "m_total"}, "");
  for (int i = 0; i < 1000; ++i) {
    // (append, not operator+: GCC 12 raises a false -Wrestrict on "c" + std::string)
    r.counter(StatName{"server", {}, std::string("c").append(std::to_string(i))}, "");
  }
  first.inc(3);
  for (const auto& v : r.snapshot()) {
    if (v.name.leaf == "m_total") {
      EXPECT_EQ(v.number, 3.0);
    }
  }
  EXPECT_EQ(r.counter(StatName{"server", {}, "m_total"}, "").value(), 3u);
}

}  // namespace
}  // namespace sluice
