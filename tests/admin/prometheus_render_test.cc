#include "src/admin/prometheus_render.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/admin/prometheus_parser.h"

namespace sluice {
namespace {

// A registry shaped like the proxy's: two filters on one listener, so families interleave when
// sorted by dotted name.
class PrometheusRenderTest : public ::testing::Test {
 protected:
  StatName filter_stat(const std::string& filter, const std::string& leaf) {
    return StatName{"filter", {{"listener", "ingress"}, {"filter", filter}}, leaf};
  }
  void SetUp() override {
    for (const char* f : {"fixed", "vegas"}) {
      registry_.counter(filter_stat(f, "admitted_total"), "Requests admitted").inc(10);
      registry_.gauge(filter_stat(f, "in_flight"), "Requests in flight").set(3);
      registry_.float_gauge(filter_stat(f, "gradient"), "RTT gradient").set(0.75);
    }
    Histogram& h = registry_.histogram(filter_stat("vegas", "queue_wait_us"), "Queue wait", "us");
    for (uint64_t v : {10u, 40u, 80u, 200u, 900u, 3000u, 20000000u}) h.record(v);
    registry_.histogram(filter_stat("fixed", "queue_wait_us"), "Queue wait", "us");  // empty
    registry_
        .histogram(StatName{"listener", {{"listener", "ingress"}}, "request_bytes"}, "Request size",
                   "bytes")
        .record(300);
    registry_
        .counter(StatName{"cluster", {{"cluster", "svc"}}, "connect_failures"}, "Connect failures")
        .inc();
    registry_.gauge_fn(StatName{"server", {}, "uptime_seconds"}, "Uptime\nin seconds \\o/",
                       [] { return 12.5; });
    registry_.counter(StatName{"listener", {{"listener", "we\"ird\\name\n"}}, "rq_total"}, "");
  }

  std::vector<PromFamily> parse() {
    return PrometheusParser::parse(render_prometheus(registry_.snapshot()));
  }

  StatsRegistry registry_;
};

TEST_F(PrometheusRenderTest, OutputPassesTheStrictParser) {
  EXPECT_NO_THROW(parse()) << render_prometheus(registry_.snapshot());
}

TEST_F(PrometheusRenderTest, StatsSharingANameBecomeOneFamilyWithLabels) {
  const auto families = parse();
  int admitted_families = 0;
  for (const auto& f : families) {
    if (f.name != "sluice_filter_admitted_total") continue;
    ++admitted_families;
    EXPECT_EQ(f.type, "counter");
    EXPECT_EQ(f.help, "Requests admitted");
    EXPECT_EQ(f.samples.size(), 2u);
  }
  EXPECT_EQ(admitted_families, 1);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_admitted_total",
                                    {{"listener", "ingress"}, {"filter", "vegas"}}),
            10.0);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_gradient", {{"filter", "fixed"}}),
            0.75);
}

TEST_F(PrometheusRenderTest, CountersAlwaysEndInTotal) {
  const auto families = parse();
  EXPECT_EQ(PrometheusParser::value(families, "sluice_cluster_connect_failures_total"), 1.0);
}

TEST_F(PrometheusRenderTest, MicrosecondHistogramsAreExportedInSeconds) {
  const auto families = parse();
  const std::vector<std::pair<std::string, std::string>> vegas = {{"filter", "vegas"}};
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_count", vegas),
            7.0);
  EXPECT_NEAR(PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_sum", vegas),
              (10 + 40 + 80 + 200 + 900 + 3000 + 20000000) * 1e-6, 1e-9);
  auto bucket = [&](const std::string& le) {
    return PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_bucket",
                                   {{"filter", "vegas"}, {"le", le}});
  };
  EXPECT_EQ(bucket("5e-05"), 2.0);   // 10, 40
  EXPECT_EQ(bucket("0.0001"), 3.0);  // + 80
  EXPECT_EQ(bucket("0.001"), 5.0);   // + 200, 900
  EXPECT_EQ(bucket("10"), 6.0);      // 20 s is beyond the last boundary
  EXPECT_EQ(bucket("+Inf"), 7.0);
}

TEST_F(PrometheusRenderTest, EmptyHistogramHasZeroBuckets) {
  const auto families = parse();
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_bucket",
                                    {{"filter", "fixed"}, {"le", "+Inf"}}),
            0.0);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_queue_wait_seconds_count",
                                    {{"filter", "fixed"}}),
            0.0);
}

TEST_F(PrometheusRenderTest, OtherUnitsKeepTheirNameAndScale) {
  const auto families = parse();
  EXPECT_EQ(PrometheusParser::value(families, "sluice_listener_request_bytes_sum"), 300.0);
  EXPECT_EQ(
      PrometheusParser::value(families, "sluice_listener_request_bytes_bucket", {{"le", "500"}}),
      1.0);
}

TEST_F(PrometheusRenderTest, HelpAndLabelValuesAreEscaped) {
  const auto families = parse();
  for (const auto& f : families) {
    if (f.name == "sluice_server_uptime_seconds") {
      EXPECT_EQ(f.help, "Uptime\nin seconds \\o/");
    }
  }
  EXPECT_EQ(PrometheusParser::value(families, "sluice_listener_rq_total",
                                    {{"listener", "we\"ird\\name\n"}}),
            0.0);
}

TEST_F(PrometheusRenderTest, GaugeFunctionsAreGauges) {
  const auto families = parse();
  EXPECT_EQ(PrometheusParser::value(families, "sluice_server_uptime_seconds"), 12.5);
}

// The per-class stats the filters register: a third label, and a dotted name per class that
// sorts between the filter's other stats.
TEST_F(PrometheusRenderTest, PerClassStatsAreOneFamilyWithACriticalityLabel) {
  auto class_stat = [](const std::string& filter, const std::string& c, const std::string& leaf) {
    return StatName{
        "filter", {{"listener", "ingress"}, {"filter", filter}, {"criticality", c}}, leaf};
  };
  for (const char* f : {"fixed", "vegas"}) {
    for (const char* c : {"sheddable", "critical"}) {
      registry_.counter(class_stat(f, c, "class_admitted_total"), "Admitted, per class").inc(4);
      registry_.counter(class_stat(f, c, "class_shed_total"), "Shed, per class");
      registry_.histogram(class_stat(f, c, "class_queue_wait_us"), "Queue wait, per class", "us")
          .record(1500);
    }
  }
  const std::string text = render_prometheus(registry_.snapshot());
  std::vector<PromFamily> families;
  ASSERT_NO_THROW(families = PrometheusParser::parse(text)) << text;
  EXPECT_EQ(PrometheusParser::value(
                families, "sluice_filter_class_admitted_total",
                {{"listener", "ingress"}, {"filter", "vegas"}, {"criticality", "critical"}}),
            4.0);
  EXPECT_EQ(PrometheusParser::value(families, "sluice_filter_class_queue_wait_seconds_count",
                                    {{"filter", "fixed"}, {"criticality", "sheddable"}}),
            1.0);
  for (const auto& f : families) {
    if (f.name == "sluice_filter_class_shed_total") {
      EXPECT_EQ(f.samples.size(), 4u);
    }
  }
}

TEST(PrometheusRenderConflictTest, StatsThatCollideAfterSanitizingAreLeftOut) {
  StatsRegistry registry;
  // "a.b", "a_b" and "a-b" all become sluice_x_a_b; the first (sorted by dotted name: "x.a-b",
  // the histogram) owns the family, the gauges conflict on type.
  registry.gauge(StatName{"x", {}, "a.b"}, "").set(1);
  registry.gauge(StatName{"x", {}, "a_b"}, "").set(2);
  registry.histogram(StatName{"x", {}, "a-b"}, "", "");
  const std::string text = render_prometheus(registry.snapshot());
  const auto families = PrometheusParser::parse(text);
  ASSERT_EQ(families.size(), 1u) << text;
  EXPECT_EQ(families[0].type, "histogram");
  EXPECT_NE(text.find("# sluice: x.a.b omitted"), std::string::npos) << text;
  EXPECT_NE(text.find("# sluice: x.a_b omitted"), std::string::npos) << text;
}

TEST(PrometheusRenderConflictTest, DuplicateSeriesAfterSanitizingAreLeftOut) {
  StatsRegistry registry;
  registry.gauge(StatName{"x", {}, "a.b"}, "").set(1);
  registry.gauge(StatName{"x", {}, "a_b"}, "").set(2);
  const std::string text = render_prometheus(registry.snapshot());
  const auto families = PrometheusParser::parse(text);
  ASSERT_EQ(families.size(), 1u) << text;
  EXPECT_EQ(families[0].samples.size(), 1u);
  EXPECT_NE(text.find("same series"), std::string::npos) << text;
}

TEST(PrometheusBoundsTest, MicrosecondBoundsAreIncreasingAndCoverMicrosToSeconds) {
  const auto bounds = prometheus_bounds("us");
  ASSERT_FALSE(bounds.empty());
  for (std::size_t i = 1; i < bounds.size(); ++i) EXPECT_LT(bounds[i - 1], bounds[i]);
  EXPECT_LE(bounds.front(), 100u);
  EXPECT_GE(bounds.back(), 10'000'000u);
}

}  // namespace
}  // namespace sluice
