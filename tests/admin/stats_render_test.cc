#include "src/admin/stats_render.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>

namespace sluice {
namespace {

class StatsRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.counter(StatName{"listener", {{"listener", "in"}}, "rq_total"}, "Requests").inc(7);
    registry_.gauge(StatName{"filter", {{"listener", "in"}, {"filter", "f"}}, "limit"}, "Limit")
        .set(20);
    registry_
        .float_gauge(StatName{"filter", {{"listener", "in"}, {"filter", "f"}}, "gradient"},
                     "Gradient")
        .set(0.625);
    Histogram& h = registry_.histogram(
        StatName{"filter", {{"listener", "in"}, {"filter", "f"}}, "queue_wait_us"}, "Wait", "us");
    for (uint64_t v = 1; v <= 1000; ++v) h.record(v);
  }
  StatsRegistry registry_;
};

TEST_F(StatsRenderTest, TextHasOneNameValueLinePerStat) {
  EXPECT_EQ(render_stats_text(registry_.snapshot()),
            "filter.in.f.gradient: 0.625\n"
            "filter.in.f.limit: 20\n"
            "filter.in.f.queue_wait_us: P50=511 P90=927 P99=991 P99.9=1000 max=1000 count=1000\n"
            "listener.in.rq_total: 7\n");
}

TEST_F(StatsRenderTest, EmptyHistogramPrintsZeros) {
  StatsRegistry r;
  r.histogram(StatName{"server", {}, "h_us"}, "", "us");
  EXPECT_EQ(render_stats_text(r.snapshot()),
            "server.h_us: P50=0 P90=0 P99=0 P99.9=0 max=0 count=0\n");
}

TEST_F(StatsRenderTest, JsonCarriesNameLabelsTypeAndValues) {
  const auto root = render_stats_json(registry_.snapshot());
  const auto& stats = root.at("stats").as_array();
  ASSERT_EQ(stats.size(), 4u);
  const auto& gradient = stats[0].as_object();
  EXPECT_EQ(gradient.at("name").as_string(), "filter.in.f.gradient");
  EXPECT_EQ(gradient.at("kind").as_string(), "filter");
  EXPECT_EQ(gradient.at("labels").at("listener").as_string(), "in");
  EXPECT_EQ(gradient.at("labels").at("filter").as_string(), "f");
  EXPECT_EQ(gradient.at("leaf").as_string(), "gradient");
  EXPECT_EQ(gradient.at("type").as_string(), "gauge");
  EXPECT_EQ(gradient.at("value").as_double(), 0.625);
  const auto& limit = stats[1].as_object();
  EXPECT_EQ(limit.at("value").as_int64(), 20);  // integral values stay integers
  const auto& wait = stats[2].as_object();
  EXPECT_EQ(wait.at("type").as_string(), "histogram");
  EXPECT_EQ(wait.at("unit").as_string(), "us");
  EXPECT_EQ(wait.at("count").as_uint64(), 1000u);
  EXPECT_EQ(wait.at("sum").as_uint64(), 500500u);
  EXPECT_EQ(wait.at("max").as_uint64(), 1000u);
  EXPECT_EQ(wait.at("p50").as_uint64(), 511u);
  EXPECT_EQ(wait.at("p99").as_uint64(), 991u);
  EXPECT_EQ(wait.at("p999").as_uint64(), 1000u);
  const auto& rq = stats[3].as_object();
  EXPECT_EQ(rq.at("type").as_string(), "counter");
  EXPECT_EQ(rq.at("help").as_string(), "Requests");
  EXPECT_EQ(rq.at("value").as_int64(), 7);
}

TEST_F(StatsRenderTest, JsonWritesNonFiniteValuesAsNull) {
  StatsRegistry r;
  r.float_gauge(StatName{"server", {}, "x"}, "").set(NAN);
  const auto root = render_stats_json(r.snapshot());
  EXPECT_TRUE(root.at("stats").as_array()[0].at("value").is_null());
}

TEST(FormatNumberTest, IntegersHaveNoDecimalPointAndFractionsRoundTrip) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(1e6), "1000000");
  EXPECT_EQ(format_number(-3), "-3");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(50 / 1e6), "5e-05");
  EXPECT_EQ(format_number(100 / 1e6), "0.0001");
  EXPECT_EQ(format_number(0.00025), "0.00025");
  EXPECT_EQ(format_number(1e300), "1e+300");
  EXPECT_EQ(format_number(NAN), "NaN");
  EXPECT_EQ(format_number(INFINITY), "+Inf");
  EXPECT_EQ(format_number(-INFINITY), "-Inf");
}

}  // namespace
}  // namespace sluice
