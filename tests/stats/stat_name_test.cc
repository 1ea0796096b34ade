#include "src/stats/stat_name.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(StatNameTest, DottedJoinsKindLabelValuesAndLeaf) {
  StatName n{"filter", {{"listener", "ingress"}, {"filter", "rtt_gradient"}}, "shed_total"};
  EXPECT_EQ(n.dotted(), "filter.ingress.rtt_gradient.shed_total");
}

TEST(StatNameTest, DottedWithoutLabelsIsKindDotLeaf) {
  StatName n{"server", {}, "uptime_seconds"};
  EXPECT_EQ(n.dotted(), "server.uptime_seconds");
}

TEST(StatNameTest, PrometheusNameIsPrefixedKindAndLeaf) {
  StatName n{"listener", {{"listener", "ingress"}}, "downstream_rq_total"};
  EXPECT_EQ(n.prometheus_name(), "sluice_listener_downstream_rq_total");
}

TEST(StatNameTest, PrometheusNameReplacesInvalidCharacters) {
  StatName n{"cluster", {}, "rq.grpc-status:14"};
  EXPECT_EQ(n.prometheus_name(), "sluice_cluster_rq_grpc_status_14");
}

TEST(StatNameTest, PrometheusLabelsEmptyWithoutLabels) {
  EXPECT_EQ((StatName{"server", {}, "x"}).prometheus_labels(), "");
}

TEST(StatNameTest, PrometheusLabelsKeepNameOrder) {
  StatName n{"filter", {{"listener", "ingress"}, {"filter", "fixed"}}, "limit"};
  EXPECT_EQ(n.prometheus_labels(), R"({listener="ingress",filter="fixed"})");
}

TEST(StatNameTest, PrometheusLabelValuesEscapeBackslashQuoteAndNewline) {
  StatName n{"listener", {{"listener", "a\\b\"c\nd"}}, "x"};
  EXPECT_EQ(n.prometheus_labels(), R"({listener="a\\b\"c\nd"})");
}

TEST(StatNameTest, PrometheusLabelNamesAreSanitized) {
  StatName n{"worker", {{"worker-id", "1"}, {"2nd", "x"}}, "x"};
  EXPECT_EQ(n.prometheus_labels(), R"({worker_id="1",_2nd="x"})");
}

}  // namespace
}  // namespace sluice
