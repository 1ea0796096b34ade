// clusters[].dns_refresh and clusters[].health_check (issue 14 items 4 and 5): defaults, every
// field read, and each validation error with its file:line:col and YAML path.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "src/config/config_dump.h"
#include "src/config/config_loader.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string cluster_with(std::string_view lines) {
  return "clusters:\n  - name: app\n    endpoints: [app.svc.cluster.local:50051, "
         "10.0.0.7:50051]\n" +
         std::string(lines) + "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
}

ClusterConfig load_cluster(std::string_view lines) {
  return load_config_string(cluster_with(lines), std::string(kTestSource), builtin_filters())
      .clusters.at(0);
}

TEST(ClusterConfig, DnsRefreshDefaultsTo30sAndHealthCheckToOff) {
  const ClusterConfig c = load_cluster("");
  EXPECT_EQ(c.dns_refresh, seconds(30));
  EXPECT_FALSE(c.health_check.has_value());
  EXPECT_EQ(c.endpoints.at(0).host, "app.svc.cluster.local");
  EXPECT_EQ(c.endpoints.at(0).port, 50051);
}

TEST(ClusterConfig, AnEmptyHealthCheckMapChecksWithEveryDefault) {
  const ClusterConfig c = load_cluster("    health_check: {}\n");
  ASSERT_TRUE(c.health_check.has_value());
  EXPECT_EQ(c.health_check->service, "");
  EXPECT_EQ(c.health_check->interval, seconds(5));
  EXPECT_EQ(c.health_check->timeout, seconds(1));
  EXPECT_EQ(c.health_check->unhealthy_threshold, 3u);
  EXPECT_EQ(c.health_check->healthy_threshold, 2u);
}

TEST(ClusterConfig, ReadsEveryHealthCheckFieldAndDnsRefresh) {
  const ClusterConfig c = load_cluster(
      "    dns_refresh: 500ms\n"
      "    health_check:\n"
      "      service: pkg.Orders\n"
      "      interval: 200ms\n"
      "      timeout: 100ms\n"
      "      unhealthy_threshold: 1\n"
      "      healthy_threshold: 4\n");
  EXPECT_EQ(c.dns_refresh, milliseconds(500));
  ASSERT_TRUE(c.health_check.has_value());
  EXPECT_EQ(c.health_check->service, "pkg.Orders");
  EXPECT_EQ(c.health_check->interval, milliseconds(200));
  EXPECT_EQ(c.health_check->timeout, milliseconds(100));
  EXPECT_EQ(c.health_check->unhealthy_threshold, 1u);
  EXPECT_EQ(c.health_check->healthy_threshold, 4u);
}

TEST(ClusterConfig, AnEmptyServiceNameIsTheServerAsAWholeAndNullTurnsCheckingOff) {
  EXPECT_EQ(load_cluster("    health_check: {service: \"\"}\n").health_check->service, "");
  EXPECT_FALSE(load_cluster("    health_check: ~\n").health_check.has_value());
}

TEST(ClusterConfig, TheDumpShowsTheNewFields) {
  const Config config = load_config_string(cluster_with("    health_check: {service: x}\n"),
                                           std::string(kTestSource), builtin_filters());
  const auto json = config_to_json(config);
  const auto& cluster = json.at("clusters").as_array().at(0).as_object();
  EXPECT_EQ(cluster.at("dns_refresh").as_string(), "30s");
  const auto& hc = cluster.at("health_check").as_object();
  EXPECT_EQ(hc.at("service").as_string(), "x");
  EXPECT_EQ(hc.at("interval").as_string(), "5s");
  EXPECT_EQ(hc.at("timeout").as_string(), "1s");
  EXPECT_EQ(hc.at("unhealthy_threshold").to_number<int>(), 3);
  EXPECT_EQ(hc.at("healthy_threshold").to_number<int>(), 2);
  const Config off = load_config_string(cluster_with(""), "t", builtin_filters());
  EXPECT_TRUE(config_to_json(off).at("clusters").as_array().at(0).at("health_check").is_null());
}

TEST(ClusterConfigValidation, DnsRefreshMustBeAPositiveDuration) {
  EXPECT_TRUE(FailsAt(cluster_with("    dns_refresh: 0s\n"), 4, 18, "clusters[0].dns_refresh",
                      "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(cluster_with("    dns_refresh: 30\n"), 4, 18, "clusters[0].dns_refresh",
                      "must be a duration > 0 with a unit"));
}

TEST(ClusterConfigValidation, HealthCheckFieldsAreChecked) {
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {interval: 0s}\n"), 4, 30,
                      "clusters[0].health_check.interval", "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {timeout: 1}\n"), 4, 29,
                      "clusters[0].health_check.timeout", "must be a duration > 0 with a unit"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {unhealthy_threshold: 0}\n"), 4, 41,
                      "clusters[0].health_check.unhealthy_threshold",
                      "must be an integer between 1 and 1000"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {healthy_threshold: 1001}\n"), 4, 39,
                      "clusters[0].health_check.healthy_threshold",
                      "must be an integer between 1 and 1000"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {servce: x}\n"), 4, 20,
                      "clusters[0].health_check.servce", "(did you mean \"service\"?)"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: {service: [a]}\n"), 4, 29,
                      "clusters[0].health_check.service", "must be a string"));
  EXPECT_TRUE(FailsAt(cluster_with("    health_check: yes\n"), 4, 19, "clusters[0].health_check",
                      "must be a map"));
}

TEST(ClusterConfigValidation, MalformedEndpointAddressesAreStillRejectedWhereTheyAre) {
  const std::string bad_name =
      "clusters:\n  - name: app\n    endpoints: [\"app svc:80\"]\n"
      "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
  EXPECT_TRUE(FailsAt(bad_name, 3, 17, "clusters[0].endpoints[0]",
                      "\"app svc\" is not a valid host name or address"));
  const std::string bad_v6 =
      "clusters:\n  - name: app\n    endpoints: [\"[::1:80\"]\n"
      "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
  EXPECT_TRUE(FailsAt(bad_v6, 3, 17, "clusters[0].endpoints[0]", "host:port or [ipv6]:port"));
  const std::string no_port =
      "clusters:\n  - name: app\n    endpoints: [app.svc]\n"
      "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
  EXPECT_TRUE(FailsAt(no_port, 3, 17, "clusters[0].endpoints[0]", "host:port or [ipv6]:port"));
}

}  // namespace
}  // namespace sluice
