// Queue mode's configuration: `queues:`, listeners with `queue:` instead of `cluster:`, and
// `consumers:`. Every error asserts the file, line:column and YAML path.
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <string>

#include "src/config/config_diff.h"
#include "src/config/config_dump.h"
#include "src/config/config_loader.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

using namespace std::chrono_literals;

Config load(std::string_view yaml) {
  return load_config_string(yaml, std::string(kTestSource), builtin_filters());
}

// The issue's example: a frontend listener on a queue, a consumer pulling from it.
constexpr std::string_view kQueueMode = R"(queues:
  - name: work
    redis: 127.0.0.1:6379
    stream: sluice:work
    group: workers
    claim_after: 30s
    max_deliveries: 3
listeners:
  - name: ingress
    address: 0.0.0.0:8080
    queue: work
    filters:
      - {type: fixed_semaphore, max_concurrency: 100}
consumers:
  - name: pull
    queue: work
    cluster: app
    filters:
      - type: aimd
        latency_slo: 100ms
clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
)";

TEST(QueueConfig, LoadsTheIssueExample) {
  const Config c = load(kQueueMode);
  ASSERT_EQ(c.queues.size(), 1u);
  const QueueConfig& q = c.queues[0];
  EXPECT_EQ(q.name, "work");
  EXPECT_EQ(q.redis.to_string(), "127.0.0.1:6379");
  EXPECT_EQ(q.stream, "sluice:work");
  EXPECT_EQ(q.group, "workers");
  EXPECT_EQ(q.claim_after, 30s);
  EXPECT_EQ(q.max_deliveries, 3u);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].queue, "work");
  EXPECT_EQ(c.listeners[0].cluster, "");
  ASSERT_EQ(c.listeners[0].filters.size(), 1u);
  ASSERT_EQ(c.consumers.size(), 1u);
  const ConsumerConfig& k = c.consumers[0];
  EXPECT_EQ(k.name, "pull");
  EXPECT_EQ(k.queue, "work");
  EXPECT_EQ(k.cluster, "app");
  ASSERT_EQ(k.filters.size(), 1u);
  EXPECT_EQ(k.filters[0].type, "aimd");
  EXPECT_EQ(k.filters[0].name, "aimd");
  EXPECT_EQ(c.find_queue("work"), &c.queues[0]);
  EXPECT_EQ(c.find_queue("nope"), nullptr);
}

TEST(QueueConfig, QueueDefaults) {
  const Config c = load(R"(queues:
  - {name: jobs, redis: "redis.local:7000"}
listeners:
  - {name: l, address: 0.0.0.0:1, queue: jobs}
)");
  const QueueConfig& q = c.queues.at(0);
  EXPECT_EQ(q.redis.host, "redis.local");
  EXPECT_EQ(q.redis.port, 7000);
  EXPECT_EQ(q.stream, "sluice:jobs");
  EXPECT_EQ(q.group, "sluice");
  EXPECT_EQ(q.claim_after, 30s);
  EXPECT_EQ(q.max_deliveries, 3u);
  EXPECT_EQ(q.max_pending, 10000u);
  EXPECT_TRUE(q.shed_by_estimated_wait);
  EXPECT_EQ(q.reply_ttl, 60s);
  EXPECT_TRUE(c.clusters.empty());  // a frontend that only enqueues needs none
  EXPECT_TRUE(c.consumers.empty());
}

TEST(QueueConfig, AConsumerOnlySidecarNeedsNoListener) {
  const Config c = load(R"(queues:
  - {name: work, redis: 127.0.0.1:6379, max_pending: 5, shed_by_estimated_wait: false,
     reply_ttl: 5m}
consumers:
  - {name: pull, queue: work, cluster: app}
clusters:
  - {name: app, endpoints: [127.0.0.1:50051]}
)");
  EXPECT_TRUE(c.listeners.empty());
  EXPECT_EQ(c.consumers.at(0).cluster, "app");
  EXPECT_TRUE(c.consumers.at(0).filters.empty());
  EXPECT_EQ(c.queues.at(0).max_pending, 5u);
  EXPECT_FALSE(c.queues.at(0).shed_by_estimated_wait);
  EXPECT_EQ(c.queues.at(0).reply_ttl, 5min);
}

TEST(QueueConfig, ListenerWithBothClusterAndQueueIsAnError) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: work, redis: 127.0.0.1:6379}
clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - name: l
    address: 0.0.0.0:1
    cluster: app
    queue: work
)",
                      9, 12, "listeners[0].queue",
                      "a listener forwards to a `cluster` or enqueues to a `queue`, not both "
                      "(cluster at line 8)"));
}

TEST(QueueConfig, ListenerWithNeitherClusterNorQueueNeedsACluster) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: work, redis: 127.0.0.1:6379}
listeners:
  - name: l
    address: 0.0.0.0:1
)",
                      4, 5, "listeners[0].cluster", "is required"));
}

TEST(QueueConfig, ListenerQueueMustExist) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: work, redis: 127.0.0.1:6379}
  - {name: batch, redis: 127.0.0.1:6379}
listeners:
  - {name: l, address: 0.0.0.0:1, queue: wrok}
)",
                      5, 42, "listeners[0].queue",
                      "no queue named \"wrok\"; defined queues: work, batch"));
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: l, address: 0.0.0.0:1, queue: work}
)",
                      4, 42, "listeners[0].queue",
                      "no queue named \"work\"; no queues are defined"));
}

TEST(QueueConfig, ListenerUnknownKeyListsQueue) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    queues: x\n", 8, 5, "listeners[0].queues",
                      "allowed keys: name, address, cluster, http2, filters, tls, limits, "
                      "criticality, queue"));
}

TEST(QueueConfig, QueueRequiredFields) {
  EXPECT_TRUE(
      FailsAt("queues:\n  - {redis: 127.0.0.1:6379}\n", 2, 5, "queues[0].name", "is required"));
  EXPECT_TRUE(FailsAt("queues:\n  - {name: work}\n", 2, 5, "queues[0].redis", "is required"));
}

TEST(QueueConfig, QueueUnknownKeyIsNamedWithTheAllowedKeys) {
  EXPECT_TRUE(FailsAt("queues:\n  - {name: work, redis: 127.0.0.1:1, maxlen: 5}\n", 2, 38,
                      "queues[0].maxlen",
                      "allowed keys: name, redis, stream, group, claim_after, max_deliveries, "
                      "max_pending, shed_by_estimated_wait, reply_ttl"));
}

TEST(QueueConfig, QueueFieldsAreValidated) {
  const std::string head = "queues:\n  - name: work\n    redis: 127.0.0.1:6379\n";
  EXPECT_TRUE(FailsAt("queues:\n  - {name: work, redis: 127.0.0.1:0}\n", 2, 25, "queues[0].redis",
                      "port must be an integer between 1 and 65535, got \"0\""));
  EXPECT_TRUE(FailsAt("queues:\n  - {name: work, redis: localhost}\n", 2, 25, "queues[0].redis",
                      "got \"localhost\""));
  EXPECT_TRUE(
      FailsAt(head + "    claim_after: 0s\n", 4, 18, "queues[0].claim_after", "got \"0s\""));
  EXPECT_TRUE(
      FailsAt(head + "    max_deliveries: 0\n", 4, 21, "queues[0].max_deliveries", "got \"0\""));
  EXPECT_TRUE(FailsAt(head + "    max_pending: 0\n", 4, 18, "queues[0].max_pending", "got \"0\""));
  EXPECT_TRUE(FailsAt(head + "    shed_by_estimated_wait: sometimes\n", 4, 29,
                      "queues[0].shed_by_estimated_wait", "sometimes"));
  EXPECT_TRUE(FailsAt(head + "    stream: \"a b\"\n", 4, 13, "queues[0].stream",
                      "must be a Redis key of printable ASCII without spaces, got \"a b\""));
  EXPECT_TRUE(FailsAt(head + "    group: \"\"\n", 4, 12, "queues[0].group", "must be"));
  EXPECT_TRUE(FailsAt("queues:\n  - {name: my.queue, redis: 127.0.0.1:1}\n", 2, 12,
                      "queues[0].name", "got \"my.queue\""));
}

TEST(QueueConfig, DuplicateQueueNamesAreAnError) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: work, redis: 127.0.0.1:1}
  - {name: work, redis: 127.0.0.1:2}
)",
                      3, 12, "queues[1].name", "duplicate queue name \"work\" (first at line 2)"));
}

TEST(QueueConfig, TwoQueuesOnOneStreamAreAnError) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: a, redis: 127.0.0.1:1}
  - {name: b, redis: 127.0.0.1:1, stream: "sluice:a"}
)",
                      3, 43, "queues[1].stream",
                      "stream \"sluice:a\" on 127.0.0.1:1 is already used by queue \"a\""));
  // The same key on another Redis is another stream.
  EXPECT_NO_THROW(load(R"(queues:
  - {name: a, redis: 127.0.0.1:1}
  - {name: b, redis: 127.0.0.1:2, stream: "sluice:a"}
consumers:
  - {name: c, queue: b, cluster: app}
clusters:
  - {name: app, endpoints: [127.0.0.1:50051]}
)"));
}

TEST(QueueConfig, ConsumerRequiredFields) {
  const std::string head =
      "queues:\n  - {name: work, redis: 127.0.0.1:1}\nclusters:\n  - {name: app, endpoints: "
      "[127.0.0.1:2]}\nconsumers:\n";
  EXPECT_TRUE(FailsAt(head + "  - {queue: work, cluster: app}\n", 6, 5, "consumers[0].name",
                      "is required"));
  EXPECT_TRUE(
      FailsAt(head + "  - {name: c, cluster: app}\n", 6, 5, "consumers[0].queue", "is required"));
  EXPECT_TRUE(
      FailsAt(head + "  - {name: c, queue: work}\n", 6, 5, "consumers[0].cluster", "is required"));
}

TEST(QueueConfig, ConsumerReferencesMustExist) {
  const std::string head =
      "queues:\n  - {name: work, redis: 127.0.0.1:1}\nclusters:\n  - {name: app, endpoints: "
      "[127.0.0.1:2]}\nconsumers:\n";
  EXPECT_TRUE(FailsAt(head + "  - {name: c, queue: wrk, cluster: app}\n", 6, 22,
                      "consumers[0].queue", "no queue named \"wrk\"; defined queues: work"));
  EXPECT_TRUE(FailsAt(head + "  - {name: c, queue: work, cluster: ap}\n", 6, 37,
                      "consumers[0].cluster", "no cluster named \"ap\"; defined clusters: app"));
}

TEST(QueueConfig, ConsumerUnknownKeyAndBadFilters) {
  const std::string head =
      "queues:\n  - {name: work, redis: 127.0.0.1:1}\nclusters:\n  - {name: app, endpoints: "
      "[127.0.0.1:2]}\nconsumers:\n  - name: c\n    queue: work\n    cluster: app\n";
  EXPECT_TRUE(FailsAt(head + "    endpoint: x\n", 9, 5, "consumers[0].endpoint",
                      "allowed keys: name, queue, cluster, filters"));
  EXPECT_TRUE(FailsAt(head + "    filters:\n      - {type: aimd}\n", 10, 9,
                      "consumers[0].filters[0].latency_slo", "is required"));
  EXPECT_TRUE(FailsAt(head + "    filters:\n      - {type: nope}\n", 10, 16,
                      "consumers[0].filters[0].type", "must be one of"));
}

TEST(QueueConfig, DuplicateConsumerNamesAreAnError) {
  EXPECT_TRUE(FailsAt(R"(queues:
  - {name: work, redis: 127.0.0.1:1}
clusters:
  - {name: app, endpoints: [127.0.0.1:2]}
consumers:
  - {name: c, queue: work, cluster: app}
  - {name: c, queue: work, cluster: app}
)",
                      7, 12, "consumers[1].name",
                      "duplicate consumer name \"c\" (first at line 6)"));
}

TEST(QueueConfig, ClustersAndListenersStayRequiredWithoutQueueMode) {
  // Without queues a config still needs clusters; without consumers it still needs listeners.
  EXPECT_TRUE(FailsAt("workers: 1\n", 1, 1, "clusters", "is required"));
  EXPECT_TRUE(FailsAt("queues: []\nworkers: 1\n", 1, 1, "clusters", "is required"));
  EXPECT_TRUE(
      FailsAt("queues:\n  - {name: work, redis: 127.0.0.1:1}\n", 1, 1, "listeners", "is required"));
  EXPECT_TRUE(FailsAt("queues:\n  - {name: work, redis: 127.0.0.1:1}\nconsumers: []\n", 1, 1,
                      "listeners", "is required"));
}

TEST(QueueConfig, DumpRoundTrips) {
  const Config original = load(R"(queues:
  - {name: work, redis: 127.0.0.1:6379, stream: "s:w", group: g, claim_after: 2s,
     max_deliveries: 5, max_pending: 7, shed_by_estimated_wait: false, reply_ttl: 9s}
listeners:
  - {name: ingress, address: 0.0.0.0:0, queue: work}
  - {name: direct, address: 127.0.0.1:0, cluster: app}
consumers:
  - name: pull
    queue: work
    cluster: app
    filters: [{type: aimd, latency_slo: 100ms}]
clusters:
  - {name: app, endpoints: [127.0.0.1:50051]}
)");
  const boost::json::value dump = config_to_json(original);
  const boost::json::object& l0 = dump.at("listeners").at(0).as_object();
  EXPECT_TRUE(l0.at("cluster").is_null());
  EXPECT_EQ(l0.at("queue"), "work");
  EXPECT_TRUE(dump.at("listeners").at(1).at("queue").is_null());
  EXPECT_EQ(dump.at("queues").at(0).at("claim_after"), "2s");
  EXPECT_EQ(dump.at("consumers").at(0).at("filters").at(0).at("type"), "aimd");
  const std::string dumped = boost::json::serialize(dump);
  const Config reloaded = load_config_string(dumped, "dump.json", builtin_filters());
  EXPECT_TRUE(reloaded == original) << dumped;
}

TEST(QueueConfig, QueueModeChangesNeedARestart) {
  const Config running = load(kQueueMode);
  std::string changed(kQueueMode);
  changed.replace(changed.find("claim_after: 30s"), 16, "claim_after: 10s");
  const ConfigDiff d = diff_configs(running, load(changed));
  ASSERT_EQ(d.needs_restart.size(), 1u);
  EXPECT_EQ(d.needs_restart[0], "queues[0].claim_after: \"30s\" -> \"10s\"");

  std::string consumer_filter(kQueueMode);
  consumer_filter.replace(consumer_filter.find("latency_slo: 100ms"), 18, "latency_slo: 200ms");
  EXPECT_EQ(diff_configs(running, load(consumer_filter)).needs_restart.size(), 1u);

  // A listener moved from its queue to a cluster: its cluster would apply live, its queue not.
  std::string to_cluster(kQueueMode);
  to_cluster.replace(to_cluster.find("    queue: work\n    filters"), 15, "    cluster: app");
  const ConfigDiff moved = diff_configs(running, load(to_cluster));
  EXPECT_TRUE(moved.refused());
  ASSERT_EQ(moved.needs_restart.size(), 1u);
  EXPECT_EQ(moved.needs_restart[0], "listeners[0] (\"ingress\").queue: \"work\" -> null");
}

}  // namespace
}  // namespace sluice
