// The strict parser is what makes the Prometheus tests able to fail: check it rejects each rule
// it claims to enforce, and accepts well-formed output.
#include "tests/admin/prometheus_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace sluice {
namespace {

constexpr const char* kValid = R"(# HELP a_total Requests, with a \\ and a \n.
# TYPE a_total counter
a_total{x="1"} 3
a_total{x="q\"\\\n"} 0
# a free comment
# HELP h_seconds Latency.
# TYPE h_seconds histogram
h_seconds_bucket{le="0.1"} 1
h_seconds_bucket{le="1"} 2
h_seconds_bucket{le="+Inf"} 2
h_seconds_sum 0.55
h_seconds_count 2
# HELP g A gauge.
# TYPE g gauge
g -1.5e-3
g{k="v"} NaN 1700000000000
)";

TEST(PrometheusParserTest, AcceptsWellFormedOutput) {
  const auto families = PrometheusParser::parse(kValid);
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].help, "Requests, with a \\ and a \n.");
  EXPECT_EQ(families[0].samples[1].label("x"), "q\"\\\n");
  EXPECT_EQ(PrometheusParser::value(families, "h_seconds_count"), 2.0);
  EXPECT_EQ(families[2].samples[0].value, -1.5e-3);
  EXPECT_TRUE(std::isnan(PrometheusParser::value(families, "g", {{"k", "v"}})));
}

void expect_rejected(const std::string& text) {
  EXPECT_THROW(PrometheusParser::parse(text), std::runtime_error) << text;
}

TEST(PrometheusParserTest, RejectsSampleWithoutHelpAndType) {
  expect_rejected("a_total 1\n");
  expect_rejected("# TYPE a_total counter\na_total 1\n");
  expect_rejected("# HELP a_total x\na_total 1\n");
}

TEST(PrometheusParserTest, RejectsHelpOrTypeAfterSamples) {
  expect_rejected("# HELP g x\n# TYPE g gauge\ng 1\n# HELP g again\n");
}

TEST(PrometheusParserTest, RejectsInterleavedFamilies) {
  expect_rejected(
      "# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\nb 1\n"
      "# HELP a x\n# TYPE a gauge\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na 1\n# HELP b x\n# TYPE b gauge\na{x=\"1\"} 1\n");
}

TEST(PrometheusParserTest, RejectsBadNamesAndLabels) {
  expect_rejected("# HELP 1a x\n# TYPE 1a gauge\n1a 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{1k=\"v\"} 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{__k=\"v\"} 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{k=v} 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{k=\"\\t\"} 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{k=\"v\",k=\"w\"} 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na{k=\"v\" 1\n");
  expect_rejected("# HELP a-b x\n# TYPE a-b gauge\n");
}

TEST(PrometheusParserTest, RejectsBadValuesAndTypes) {
  expect_rejected("# HELP a x\n# TYPE a gauge\na one\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na 0x10\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na\n");
  expect_rejected("# HELP a x\n# TYPE a meter\na 1\n");
  expect_rejected("# HELP a x\n# TYPE a gauge\na 1");  // no final newline
}

TEST(PrometheusParserTest, RejectsDuplicateSeries) {
  expect_rejected("# HELP a x\n# TYPE a gauge\na{k=\"v\"} 1\na{k=\"v\"} 2\n");
}

TEST(PrometheusParserTest, RejectsCounterRuleViolations) {
  expect_rejected("# HELP a x\n# TYPE a counter\na 1\n");
  expect_rejected("# HELP a_total x\n# TYPE a_total counter\na_total -1\n");
}

TEST(PrometheusParserTest, RejectsBrokenHistograms) {
  const std::string head = "# HELP h x\n# TYPE h histogram\n";
  // +Inf missing
  expect_rejected(head + "h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n");
  // +Inf differs from _count
  expect_rejected(head + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n");
  // counts decrease
  expect_rejected(head +
                  "h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
                  "h_sum 1\nh_count 2\n");
  // le not increasing
  expect_rejected(head +
                  "h_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\n"
                  "h_sum 1\nh_count 1\n");
  // missing _sum
  expect_rejected(head + "h_bucket{le=\"+Inf\"} 1\nh_count 1\n");
  // a plain sample in a histogram family
  expect_rejected(head + "h 1\n");
}

}  // namespace
}  // namespace sluice
