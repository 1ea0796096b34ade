#include "src/config/config_dump.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>

#include "src/config/config_loader.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

namespace json = boost::json;

TEST(ConfigDump, DumpsDefaultsWithUnitStrings) {
  const json::value dump =
      config_to_json(load_config_string(kMinimal, "t.yaml", builtin_filters()));
  const json::object& root = dump.as_object();
  EXPECT_EQ(root.at("admin").at("address"), "127.0.0.1:9901");
  EXPECT_EQ(root.at("admin").at("access_log").at("enabled"), false);
  EXPECT_EQ(root.at("admin").at("access_log").at("path"), "/dev/stdout");
  EXPECT_TRUE(root.at("workers").is_number());
  EXPECT_EQ(root.at("drain_timeout"), "5s");
  EXPECT_EQ(root.at("log_level"), "info");
  EXPECT_EQ(root.at("watch_config"), false);

  const json::object& l = root.at("listeners").at(0).as_object();
  EXPECT_EQ(l.at("name"), "ingress");
  EXPECT_EQ(l.at("address"), "0.0.0.0:8080");
  EXPECT_EQ(l.at("cluster"), "app");
  EXPECT_EQ(l.at("http2").at("max_concurrent_streams"), 100);
  EXPECT_EQ(l.at("http2").at("initial_stream_window"), "64KiB");
  EXPECT_EQ(l.at("http2").at("initial_connection_window"), "1MiB");
  EXPECT_EQ(l.at("http2").at("max_frame_size"), "16KiB");
  EXPECT_EQ(l.at("http2").at("max_header_list_size"), "60KiB");
  EXPECT_EQ(l.at("http2").at("max_headers_count"), 100);
  EXPECT_TRUE(l.at("filters").as_array().empty());
  EXPECT_TRUE(l.at("tls").is_null());
  EXPECT_EQ(l.at("limits").at("idle_timeout"), "5m");
  EXPECT_TRUE(l.at("limits").at("max_connection_age").is_null());
  EXPECT_EQ(l.at("limits").at("premature_reset_ratio"), 0.5);

  const json::object& c = root.at("clusters").at(0).as_object();
  EXPECT_EQ(c.at("endpoints"), (json::array{"127.0.0.1:50051"}));
  EXPECT_EQ(c.at("connect_timeout"), "1s");
  EXPECT_EQ(c.at("reconnect_backoff_base"), "100ms");
  EXPECT_TRUE(c.at("tls").is_null());
}

TEST(ConfigDump, NamesEveryFieldOfEverySection) {
  const json::value dump = config_to_json(load_config_string(std::string(kMinimal) + R"(    filters:
      - {type: fixed_semaphore, max_concurrency: 1}
      - {type: queue_wait_budget, budget: 1ms}
      - {type: rtt_gradient}
      - {type: aimd, latency_slo: 1s}
)",
                                                             "t.yaml", builtin_filters()));
  auto keys = [](const json::value& v) {
    std::vector<std::string> out;
    for (const auto& kv : v.as_object()) out.emplace_back(kv.key());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(keys(dump), (V{"admin", "workers", "listeners", "clusters", "drain_timeout",
                           "log_level", "watch_config", "queues", "consumers"}));
  EXPECT_EQ(keys(dump.at("admin")), (V{"address", "access_log"}));
  const json::value& l = dump.at("listeners").at(0);
  EXPECT_EQ(keys(l), (V{"name", "address", "cluster", "http2", "filters", "tls", "limits",
                        "criticality", "queue"}));
  EXPECT_EQ(keys(l.at("http2")),
            (V{"max_concurrent_streams", "initial_stream_window", "initial_connection_window",
               "max_frame_size", "max_header_list_size", "max_headers_count"}));
  EXPECT_EQ(keys(l.at("limits")),
            (V{"max_connections", "handshake_timeout", "request_headers_timeout", "idle_timeout",
               "max_connection_age", "stream_write_timeout", "premature_reset_limit",
               "premature_reset_ratio", "premature_reset_min_stream_lifetime",
               "max_consecutive_empty_frames", "max_priority_frames_per_stream",
               "max_window_updates_per_data_frame_sent", "max_outbound_frames"}));
  const json::array& f = l.at("filters").as_array();
  EXPECT_EQ(keys(f.at(0)), (V{"name", "type", "max_concurrency", "max_queue", "queue_order",
                              "retry_pushback", "streams"}));
  EXPECT_EQ(keys(f.at(1)), (V{"name", "type", "budget", "budgets", "retry_pushback"}));
  EXPECT_EQ(keys(f.at(2)), (V{"name", "type", "initial_limit", "min_limit", "max_limit",
                              "tolerance", "delay_tolerance", "smoothing", "queue_allowance",
                              "update_interval", "noload_window", "min_samples", "max_queue",
                              "queue_order", "retry_pushback", "streams"}));
  EXPECT_EQ(
      keys(f.at(3)),
      (V{"name", "type", "latency_slo", "initial_limit", "min_limit", "max_limit", "increase",
         "backoff", "p99_headroom", "fast_decrease_multiplier", "interval", "window", "min_samples",
         "noload_window", "max_queue", "queue_order", "retry_pushback", "streams"}));
  EXPECT_EQ(
      keys(dump.at("clusters").at(0)),
      (V{"name", "endpoints", "connect_timeout", "http2", "max_connections_per_endpoint",
         "reconnect_backoff_base", "reconnect_backoff_max", "tls", "keepalive",
         "max_stream_duration", "max_requests_per_connection", "dns_refresh", "health_check"}));
  EXPECT_EQ(keys(dump.at("clusters").at(0).at("keepalive")), (V{"enabled", "interval", "timeout"}));
  EXPECT_EQ(f.at(2).at("name"), "rtt_gradient");
  EXPECT_EQ(f.at(2).at("update_interval"), "50ms");
  EXPECT_TRUE(f.at(2).at("queue_allowance").is_null());
  EXPECT_EQ(f.at(3).at("latency_slo"), "1s");
  EXPECT_EQ(f.at(3).at("backoff"), 0.7);
}

// Every field away from its default, so that a field the dump forgets cannot hide behind a
// default on reload.
TEST(ConfigDump, LoadingTheDumpGivesBackTheSameConfig) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sluice-dump-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string pem = (dir / "x.pem").string();
  std::ofstream(pem) << "x";
  const Config original = load_config_string(R"(admin:
  address: "[::1]:9999"
  access_log: {enabled: true, path: /tmp/access.log}
workers: 3
drain_timeout: 1500ms
log_level: warn
clusters:
  - name: app
    endpoints: [127.0.0.1:50051, "[fe80::1]:7", svc.local:9]
    connect_timeout: 2s
    http2: {max_concurrent_streams: 9, initial_stream_window: 65535,
            initial_connection_window: 64000000, max_frame_size: 20000,
            max_header_list_size: 4KiB, max_headers_count: 20}
    max_connections_per_endpoint: 3
    reconnect_backoff_base: 1ms
    reconnect_backoff_max: 1h
    keepalive: {enabled: false, interval: 3s, timeout: 250ms}
    max_stream_duration: 90s
    max_requests_per_connection: 77
    dns_refresh: 7s
    health_check: {service: pkg.S, interval: 2s, timeout: 3s, unhealthy_threshold: 4,
                   healthy_threshold: 5}
    tls: {ca: )" + pem + ", sni: app.example, verify: false, cert: " +
                                                 pem + ", key: " + pem + R"(}
  - name: other
    endpoints: [10.0.0.1:1]
listeners:
  - name: ingress
    address: 0.0.0.0:0
    cluster: app
    http2: {max_concurrent_streams: 1, initial_stream_window: 1MiB}
    tls: {cert: )" + pem + ", key: " + pem + R"(, min_version: "1.3", ciphers: HIGH}
    limits: {max_connections: 5, handshake_timeout: 1ms, request_headers_timeout: 2ms,
             idle_timeout: 3ms, max_connection_age: 4ms, stream_write_timeout: 5ms,
             premature_reset_limit: 6, premature_reset_ratio: 0.3,
             max_consecutive_empty_frames: 2, max_priority_frames_per_stream: 3,
             max_window_updates_per_data_frame_sent: 4, max_outbound_frames: 500}
    filters:
      - {type: fixed_semaphore, max_concurrency: 3, max_queue: 0, queue_order: lifo,
         retry_pushback: 7ms, streams: [{match: /a.B/Watch, permit: none}]}
      - {type: queue_wait_budget, name: qwb, budget: 250us, retry_pushback: 1us,
         budgets: {sheddable: 1ms, critical_plus: 2s}}
      - {type: rtt_gradient, initial_limit: 3, min_limit: 2, max_limit: 4, tolerance: 0.123,
         delay_tolerance: 1500us, smoothing: 0.9, queue_allowance: 2.5, update_interval: 1s, noload_window: 2m,
         min_samples: 3, max_queue: 1, queue_order: adaptive_lifo, retry_pushback: 1ns,
         streams: [{match: "/a.B/*", permit: first_message}, {match: /c.D/E, permit: end}]}
      - {type: aimd, latency_slo: 3ms, initial_limit: 2, min_limit: 2, max_limit: 2,
         increase: 0.5, backoff: 0.1, p99_headroom: 0.99, fast_decrease_multiplier: 10,
         interval: 3s, window: 4s, min_samples: 7, noload_window: 9s, max_queue: 5,
         queue_order: lifo, retry_pushback: 2s}
      - {type: fixed_semaphore, max_concurrency: 1}
    criticality:
      header: X-Priority
      default: sheddable_plus
      methods:
        - {match: /a.B/Report, criticality: sheddable}
        - {match: "/a.Pay/*", criticality: critical_plus}
  - name: second
    address: 127.0.0.1:8081
    cluster: other
)",
                                             "original.yaml", builtin_filters());
  const std::string dumped = json::serialize(config_to_json(original));
  const Config reloaded = load_config_string(dumped, "dump.json", builtin_filters());
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(reloaded == original) << dumped;
  EXPECT_EQ(json::serialize(config_to_json(reloaded)), dumped);
  EXPECT_EQ(reloaded.listeners[0].filters[4].name, "fixed_semaphore_4");
  ASSERT_TRUE(reloaded.listeners[0].criticality.has_value());
  EXPECT_EQ(reloaded.listeners[0].criticality->header, "x-priority");
  EXPECT_EQ(reloaded.listeners[0].criticality->methods.size(), 2u);
  EXPECT_FALSE(reloaded.listeners[1].criticality.has_value());
}

}  // namespace
}  // namespace sluice
