#include "src/config/config_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;

// A config with one listener "ingress" (a fixed_semaphore of `limit`) and one cluster "app";
// `extra` is appended at the top level.
std::string yaml(int limit = 10, const std::string& extra = "", const std::string& listener = "",
                 const std::string& cluster = "") {
  return "workers: 2\n"
         "admin: {address: \"127.0.0.1:9901\"}\n"
         "listeners:\n"
         "  - name: ingress\n"
         "    address: 127.0.0.1:8080\n"
         "    cluster: app\n" +
         listener +
         "    filters:\n"
         "      - {type: fixed_semaphore, max_concurrency: " +
         std::to_string(limit) +
         "}\n"
         "clusters:\n"
         "  - name: app\n"
         "    endpoints: [\"127.0.0.1:9000\"]\n" +
         cluster + extra;
}

Config load(const std::string& text) {
  return load_config_string(text, std::string(kTestSource), builtin_filters());
}

TEST(ConfigDiffTest, TheSameFileChangesNothing) {
  const ConfigDiff d = diff_configs(load(yaml()), load(yaml()));
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.chains, IsEmpty());
}

TEST(ConfigDiffTest, AFilterChangeIsAppliedLiveToItsListener) {
  const ConfigDiff d = diff_configs(load(yaml(10)), load(yaml(20)));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.chains, ElementsAre("ingress"));
  EXPECT_THAT(d.applied, ElementsAre("listeners[0] (\"ingress\").filters"));
}

TEST(ConfigDiffTest, CriticalityRulesAreAppliedLive) {
  const ConfigDiff d =
      diff_configs(load(yaml()), load(yaml(10, "", "    criticality: {default: sheddable}\n")));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.chains, ElementsAre("ingress"));
  EXPECT_THAT(d.applied, ElementsAre("listeners[0] (\"ingress\").criticality"));
}

TEST(ConfigDiffTest, WorkersNeedARestartAndTheMessageSaysFromWhatToWhat) {
  std::string next = yaml();
  next.replace(next.find("workers: 2"), 10, "workers: 4");
  const ConfigDiff d = diff_configs(load(yaml()), load(next));
  EXPECT_TRUE(d.refused());
  EXPECT_THAT(d.needs_restart, ElementsAre("workers: 2 -> 4"));
  EXPECT_EQ(d.refusal(), "these changes need a restart: workers: 2 -> 4");
}

TEST(ConfigDiffTest, TheAdminAddressNeedsARestart) {
  std::string next = yaml();
  next.replace(next.find("9901"), 4, "9902");
  const ConfigDiff d = diff_configs(load(yaml()), load(next));
  EXPECT_THAT(d.needs_restart, ElementsAre("admin.address: 127.0.0.1:9901 -> 127.0.0.1:9902"));
}

TEST(ConfigDiffTest, AMovedListenerIsAppliedLiveAndNamesTheField) {
  std::string moved = yaml(20);
  moved.replace(moved.find("8080"), 4, "8081");
  const ConfigDiff d = diff_configs(load(yaml()), load(moved));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.moved, ElementsAre("ingress"));
  EXPECT_THAT(d.added, IsEmpty());
  EXPECT_THAT(d.removed, IsEmpty());
  EXPECT_THAT(d.applied, ElementsAre("listeners[0] (\"ingress\").address: "
                                     "\"127.0.0.1:8080\" -> \"127.0.0.1:8081\"",
                                     "listeners[0] (\"ingress\").filters"));
  // The filter change alongside applies too.
  EXPECT_THAT(d.chains, ElementsAre("ingress"));
}

TEST(ConfigDiffTest, HttpTwoSettingsAndLimitsApplyToNewConnections) {
  ConfigDiff d = diff_configs(load(yaml()), load(yaml(10, "",
                                                      "    http2: {max_concurrent_streams: 7}\n"
                                                      "    limits: {idle_timeout: 9s}\n")));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.connections, ElementsAre("ingress"));
  EXPECT_TRUE(d.chains.empty());
  EXPECT_THAT(d.applied,
              ElementsAre("listeners[0] (\"ingress\").http2.max_concurrent_streams: 100 -> 7",
                          "listeners[0] (\"ingress\").limits.idle_timeout: \"5m\" -> \"9s\""));

  d = diff_configs(load(yaml()), load(yaml()));
  EXPECT_TRUE(d.connections.empty());
}

TEST(ConfigDiffTest, ARenamedListenerIsRemovedAndAdded) {
  std::string renamed = yaml();
  renamed.replace(renamed.find("name: ingress"), 13, "name: front");
  const ConfigDiff d = diff_configs(load(yaml()), load(renamed));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.added, ElementsAre("front"));
  EXPECT_THAT(d.removed, ElementsAre("ingress"));
  EXPECT_THAT(d.moved, IsEmpty());
  EXPECT_THAT(d.chains, IsEmpty());  // the new listener's chain is built with it
  EXPECT_THAT(d.applied, ElementsAre("listeners: \"front\" added on 127.0.0.1:8080",
                                     "listeners: \"ingress\" removed from 127.0.0.1:8080"));
}

// `yaml()` with a second listener "side" on port 8090, to the same cluster.
std::string with_side_listener() {
  std::string two = yaml();
  two.replace(two.find("clusters:"), 9,
              "  - name: side\n"
              "    address: 127.0.0.1:8090\n"
              "    cluster: app\n"
              "clusters:");
  return two;
}

TEST(ConfigDiffTest, AnAddedOrRemovedListenerLeavesTheOthersAlone) {
  ConfigDiff d = diff_configs(load(yaml()), load(with_side_listener()));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.added, ElementsAre("side"));
  EXPECT_THAT(d.removed, IsEmpty());
  EXPECT_THAT(d.applied, ElementsAre("listeners: \"side\" added on 127.0.0.1:8090"));
  EXPECT_THAT(d.chains, IsEmpty());
  EXPECT_THAT(d.connections, IsEmpty());

  d = diff_configs(load(with_side_listener()), load(yaml()));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.removed, ElementsAre("side"));
  EXPECT_THAT(d.added, IsEmpty());
  EXPECT_THAT(d.applied, ElementsAre("listeners: \"side\" removed from 127.0.0.1:8090"));
}

TEST(ConfigDiffTest, AListenersClusterChangeIsAppliedLive) {
  const std::string other =
      "  - name: other\n"
      "    endpoints: [\"127.0.0.1:9001\"]\n";
  std::string next = yaml(10, other);
  next.replace(next.find("cluster: app"), 12, "cluster: other");
  const ConfigDiff d = diff_configs(load(yaml(10, other)), load(next));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.upstreams, ElementsAre("ingress"));
  EXPECT_THAT(d.connections, IsEmpty());
  EXPECT_THAT(d.applied, ElementsAre("listeners[0] (\"ingress\").cluster: \"app\" -> \"other\""));
}

TEST(ConfigDiffTest, ATlsChangeReachesNewConnections) {
  // The loader checks that certificate files can be read; their content is not looked at here.
  const std::string cert = testing::TempDir() + "config_diff_test.pem";
  std::ofstream(cert) << "not parsed by the diff\n";
  const std::string tls = "    tls: {cert: " + cert + ", key: " + cert;
  const ConfigDiff d = diff_configs(load(yaml(10, "", tls + "}\n")),
                                    load(yaml(10, "", tls + ", min_version: \"1.3\"}\n")));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.connections, ElementsAre("ingress"));
  EXPECT_THAT(d.applied,
              ElementsAre("listeners[0] (\"ingress\").tls.min_version: \"1.2\" -> \"1.3\""));

  const ConfigDiff on = diff_configs(load(yaml()), load(yaml(10, "", tls + "}\n")));
  EXPECT_THAT(on.connections, ElementsAre("ingress"));
  ASSERT_EQ(on.applied.size(), 1u);
  EXPECT_THAT(on.applied[0], testing::StartsWith("listeners[0] (\"ingress\").tls: null -> {"));
}

TEST(ConfigDiffTest, WorkersAndTheAdminAddressAreStillRefusedBesideListenerChanges) {
  std::string next = with_side_listener();
  next.replace(next.find("workers: 2"), 10, "workers: 3");
  next.replace(next.find("9901"), 4, "9902");
  next.replace(next.find("8080"), 4, "8081");
  const ConfigDiff d = diff_configs(load(yaml()), load(next));
  EXPECT_TRUE(d.refused());
  EXPECT_THAT(d.needs_restart,
              ElementsAre("workers: 2 -> 3", "admin.address: 127.0.0.1:9901 -> 127.0.0.1:9902"));
}

TEST(ConfigDiffTest, ClusterSettingsAndEndpointsApplyLive) {
  const ConfigDiff d = diff_configs(load(yaml()), load(yaml(10, "", "",
                                                            "    connect_timeout: 2s\n"
                                                            "    health_check: {service: pkg.S}\n"
                                                            "    dns_refresh: 5s\n")));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.clusters, ElementsAre("app"));
  EXPECT_THAT(d.applied,
              ElementsAre("clusters[0] (\"app\").connect_timeout: \"1s\" -> \"2s\"",
                          "clusters[0] (\"app\").dns_refresh: \"30s\" -> \"5s\"",
                          "clusters[0] (\"app\").health_check: null -> {\"service\":\"pkg.S\","
                          "\"interval\":\"5s\",\"timeout\":\"1s\",\"unhealthy_threshold\":3,"
                          "\"healthy_threshold\":2}"));

  std::string moved = yaml();
  moved.replace(moved.find("127.0.0.1:9000"), 14, "app.svc:9000\", \"[::1]:9001");
  const ConfigDiff e = diff_configs(load(yaml()), load(moved));
  EXPECT_FALSE(e.refused());
  EXPECT_THAT(e.clusters, ElementsAre("app"));
  EXPECT_THAT(e.applied, ElementsAre("clusters[0] (\"app\").endpoints: [\"127.0.0.1:9000\"] -> "
                                     "[\"app.svc:9000\",\"[::1]:9001\"]"));
}

TEST(ConfigDiffTest, ClustersCanBeAddedAndRemovedWhileEveryListenerNamesOne) {
  const std::string two = yaml(10, "  - name: spare\n    endpoints: [\"127.0.0.1:9001\"]\n");
  ConfigDiff d = diff_configs(load(yaml()), load(two));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.clusters, ElementsAre("spare"));
  EXPECT_THAT(d.applied, ElementsAre("clusters: \"spare\" added"));
  d = diff_configs(load(two), load(yaml()));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.clusters, ElementsAre("spare"));
  EXPECT_THAT(d.applied, ElementsAre("clusters: \"spare\" removed"));
  // Reordered, nothing else: no change.
  const std::string reordered =
      "workers: 2\nadmin: {address: \"127.0.0.1:9901\"}\nlisteners:\n  - name: ingress\n"
      "    address: 127.0.0.1:8080\n    cluster: app\n    filters:\n"
      "      - {type: fixed_semaphore, max_concurrency: 10}\nclusters:\n"
      "  - name: spare\n    endpoints: [\"127.0.0.1:9001\"]\n"
      "  - name: app\n    endpoints: [\"127.0.0.1:9000\"]\n";
  EXPECT_TRUE(diff_configs(load(two), load(reordered)).empty());
}

TEST(ConfigDiffTest, AListenerMovedToAClusterAddedInTheSameReloadAppliesLive) {
  std::string next = yaml(10, "  - name: spare\n    endpoints: [\"127.0.0.1:9001\"]\n");
  next.replace(next.find("cluster: app"), 12, "cluster: spare");
  const ConfigDiff d = diff_configs(load(yaml()), load(next));
  EXPECT_FALSE(d.refused());
  EXPECT_THAT(d.clusters, ElementsAre("spare"));
  EXPECT_THAT(d.upstreams, ElementsAre("ingress"));
  EXPECT_THAT(d.applied, ElementsAre("listeners[0] (\"ingress\").cluster: \"app\" -> \"spare\"",
                                     "clusters: \"spare\" added"));
}

TEST(ConfigDiffTest, LogLevelDrainTimeoutAndAccessLogApplyLive) {
  const ConfigDiff d =
      diff_configs(load(yaml()), load(yaml(10, "log_level: debug\ndrain_timeout: 9s\n")));
  EXPECT_FALSE(d.refused());
  EXPECT_TRUE(d.log_level);
  EXPECT_TRUE(d.drain_timeout);
  EXPECT_FALSE(d.access_log);
  EXPECT_THAT(d.applied,
              ElementsAre("log_level: \"info\" -> \"debug\"", "drain_timeout: \"5s\" -> \"9s\""));

  std::string logged = yaml();
  logged.replace(logged.find("admin: {"), 8, "admin: {access_log: {enabled: true}, ");
  const ConfigDiff a = diff_configs(load(yaml()), load(logged));
  EXPECT_FALSE(a.refused());
  EXPECT_TRUE(a.access_log);
  EXPECT_THAT(a.applied, ElementsAre("admin.access_log.enabled: false -> true"));
}

TEST(ConfigDiffTest, EveryRefusalIsListed) {
  std::string next = yaml();
  next.replace(next.find("workers: 2"), 10, "workers: 3");
  next.replace(next.find("127.0.0.1:9901"), 14, "127.0.0.1:9902");
  next.replace(next.find("127.0.0.1:8080"), 14, "127.0.0.1:8081");  // live: not listed
  const ConfigDiff d = diff_configs(load(yaml()), load(next));
  EXPECT_EQ(d.needs_restart.size(), 2u);
  EXPECT_THAT(d.refusal(), HasSubstr("workers: 2 -> 3; admin.address"));
}

}  // namespace
}  // namespace sluice
