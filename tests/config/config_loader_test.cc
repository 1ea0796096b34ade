#include "src/config/config_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "filters/queue_wait_budget/queue_wait_budget.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::HasSubstr;

// A scratch directory removed with the test.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("sluice-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, std::string_view content) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << content;
    return file;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// The configuration shape issue 2 promises, verbatim.
constexpr std::string_view kIssueExample = R"(admin:
  address: 127.0.0.1:9901
workers: 2                  # default: number of cores
listeners:
  - name: ingress
    address: 0.0.0.0:8080
    cluster: app
    http2:                  # optional; these are the defaults
      max_concurrent_streams: 100
      initial_stream_window: 64KiB
      initial_connection_window: 1MiB
    filters: []             # the filter chain; types come in the next issue
clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    connect_timeout: 1s
drain_timeout: 5s
)";

TEST(ConfigLoader, LoadsTheIssueExample) {
  const Config c = load_config_string(kIssueExample, "issue.yaml", builtin_filters());
  EXPECT_EQ(c.admin.address, (SocketAddress{"127.0.0.1", 9901}));
  EXPECT_EQ(c.workers, 2u);
  ASSERT_EQ(c.listeners.size(), 1u);
  const ListenerConfig& l = c.listeners[0];
  EXPECT_EQ(l.name, "ingress");
  EXPECT_EQ(l.address, (SocketAddress{"0.0.0.0", 8080}));
  EXPECT_EQ(l.cluster, "app");
  EXPECT_EQ(l.http2.max_concurrent_streams, 100u);
  EXPECT_EQ(l.http2.initial_stream_window, 65536u);
  EXPECT_EQ(l.http2.initial_connection_window, 1048576u);
  EXPECT_TRUE(l.filters.empty());
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0].name, "app");
  ASSERT_EQ(c.clusters[0].endpoints.size(), 1u);
  EXPECT_EQ(c.clusters[0].endpoints[0], (SocketAddress{"127.0.0.1", 50051}));
  EXPECT_EQ(c.clusters[0].connect_timeout, seconds(1));
  EXPECT_EQ(c.drain_timeout, seconds(5));
  EXPECT_EQ(c.find_cluster("app"), &c.clusters[0]);
  EXPECT_EQ(c.find_cluster("other"), nullptr);
  EXPECT_EQ(c.source_path, "");
}

TEST(ConfigLoader, FillsEveryTopLevelDefault) {
  const Config c = load_config_string(kMinimal, "t.yaml", builtin_filters());
  EXPECT_EQ(c.admin.address, (SocketAddress{"127.0.0.1", 9901}));
  EXPECT_FALSE(c.admin.access_log.enabled);
  EXPECT_EQ(c.admin.access_log.path, "/dev/stdout");
  EXPECT_EQ(c.workers, std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
  EXPECT_EQ(c.drain_timeout, seconds(5));
  EXPECT_EQ(c.log_level, "info");
}

TEST(ConfigLoader, FillsEveryListenerDefault) {
  const ListenerConfig l =
      load_config_string(kMinimal, "t.yaml", builtin_filters()).listeners.at(0);
  EXPECT_EQ(l.http2.max_concurrent_streams, 100u);
  EXPECT_EQ(l.http2.initial_stream_window, 64u * 1024);
  EXPECT_EQ(l.http2.initial_connection_window, 1024u * 1024);
  EXPECT_EQ(l.http2.max_frame_size, 16u * 1024);
  EXPECT_EQ(l.http2.max_header_list_size, 60u * 1024);
  EXPECT_EQ(l.http2.max_headers_count, 100u);
  EXPECT_TRUE(l.filters.empty());
  EXPECT_FALSE(l.tls.has_value());
  EXPECT_EQ(l.limits.max_connections, 10000u);
  EXPECT_EQ(l.limits.handshake_timeout, seconds(10));
  EXPECT_EQ(l.limits.request_headers_timeout, seconds(10));
  EXPECT_EQ(l.limits.idle_timeout, seconds(300));
  EXPECT_FALSE(l.limits.max_connection_age.has_value());
  EXPECT_EQ(l.limits.stream_write_timeout, seconds(30));
  EXPECT_EQ(l.limits.premature_reset_limit, 500u);
  EXPECT_DOUBLE_EQ(l.limits.premature_reset_ratio, 0.5);
  EXPECT_EQ(l.limits.premature_reset_min_stream_lifetime, seconds(1));
}

TEST(ConfigLoader, FillsEveryClusterDefault) {
  const ClusterConfig c = load_config_string(kMinimal, "t.yaml", builtin_filters()).clusters.at(0);
  EXPECT_EQ(c.connect_timeout, seconds(1));
  EXPECT_EQ(c.http2.max_concurrent_streams, 100u);
  EXPECT_EQ(c.http2.initial_stream_window, 64u * 1024);
  EXPECT_EQ(c.http2.initial_connection_window, 1024u * 1024);
  EXPECT_EQ(c.max_connections_per_endpoint, 16u);
  EXPECT_EQ(c.reconnect_backoff_base, milliseconds(100));
  EXPECT_EQ(c.reconnect_backoff_max, seconds(5));
  EXPECT_FALSE(c.tls.has_value());
  EXPECT_TRUE(c.keepalive.enabled);  // dead-peer detection is on unless turned off
  EXPECT_EQ(c.keepalive.interval, seconds(10));
  EXPECT_EQ(c.keepalive.timeout, seconds(5));
  EXPECT_FALSE(c.max_stream_duration.has_value());
  EXPECT_EQ(c.max_requests_per_connection, 1'000'000u);
}

TEST(ConfigLoader, ReadsKeepaliveMaxStreamDurationAndMaxRequestsPerConnection) {
  const ClusterConfig c = load_config_string(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    keepalive: {interval: 200ms, timeout: 300ms}
    max_stream_duration: 2s
    max_requests_per_connection: 50
listeners:
  - {name: ingress, address: 0.0.0.0:8080, cluster: app}
)",
                                             "t.yaml", builtin_filters())
                              .clusters.at(0);
  EXPECT_TRUE(c.keepalive.enabled);
  EXPECT_EQ(c.keepalive.interval, milliseconds(200));
  EXPECT_EQ(c.keepalive.timeout, milliseconds(300));
  EXPECT_EQ(c.max_stream_duration, seconds(2));
  EXPECT_EQ(c.max_requests_per_connection, 50u);
  const ClusterConfig off = load_config_string(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:50051], keepalive: {enabled: false}, max_stream_duration: ~}
listeners:
  - {name: ingress, address: 0.0.0.0:8080, cluster: app}
)",
                                               "t.yaml", builtin_filters())
                                .clusters.at(0);
  EXPECT_FALSE(off.keepalive.enabled);
  EXPECT_FALSE(off.max_stream_duration.has_value());
}

TEST(ConfigLoader, ReadsEveryNonFilterField) {
  const Config c = load_config_string(R"(admin:
  address: "[::1]:0"
  access_log: {enabled: true, path: /var/log/sluice.jsonl}
workers: 4
log_level: debug
drain_timeout: 0s
clusters:
  - name: app
    endpoints: [127.0.0.1:50051, "[::1]:50052", app.local:50053]
    connect_timeout: 250ms
    http2: {max_concurrent_streams: 7, initial_stream_window: 65535,
            initial_connection_window: 2MiB, max_frame_size: 32KiB,
            max_header_list_size: 8KiB, max_headers_count: 50}
    max_connections_per_endpoint: 2
    reconnect_backoff_base: 10ms
    reconnect_backoff_max: 10ms
listeners:
  - name: ingress
    address: 0.0.0.0:0
    cluster: app
    limits:
      max_connections: 10
      handshake_timeout: 1s
      request_headers_timeout: 2s
      idle_timeout: 3m
      max_connection_age: 1h
      stream_write_timeout: 4s
      premature_reset_limit: 20
      premature_reset_ratio: 1
      premature_reset_min_stream_lifetime: 250ms
      max_consecutive_empty_frames: 3
      max_priority_frames_per_stream: 7
      max_window_updates_per_data_frame_sent: 9
      max_outbound_frames: 100
)",
                                      "t.yaml", builtin_filters());
  EXPECT_EQ(c.admin.address, (SocketAddress{"::1", 0}));
  EXPECT_TRUE(c.admin.access_log.enabled);
  EXPECT_EQ(c.admin.access_log.path, "/var/log/sluice.jsonl");
  EXPECT_EQ(c.workers, 4u);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.drain_timeout, seconds(0));
  const ClusterConfig& cl = c.clusters.at(0);
  EXPECT_EQ(cl.endpoints, (std::vector<SocketAddress>{
                              {"127.0.0.1", 50051}, {"::1", 50052}, {"app.local", 50053}}));
  EXPECT_EQ(cl.connect_timeout, milliseconds(250));
  EXPECT_EQ(cl.http2.max_concurrent_streams, 7u);
  EXPECT_EQ(cl.http2.initial_stream_window, 65535u);
  EXPECT_EQ(cl.http2.initial_connection_window, 2u * 1024 * 1024);
  EXPECT_EQ(cl.http2.max_frame_size, 32u * 1024);
  EXPECT_EQ(cl.http2.max_header_list_size, 8u * 1024);
  EXPECT_EQ(cl.http2.max_headers_count, 50u);
  EXPECT_EQ(cl.max_connections_per_endpoint, 2u);
  EXPECT_EQ(cl.reconnect_backoff_base, milliseconds(10));
  EXPECT_EQ(cl.reconnect_backoff_max, milliseconds(10));
  const ConnectionLimits& lim = c.listeners.at(0).limits;
  EXPECT_EQ(c.listeners.at(0).address, (SocketAddress{"0.0.0.0", 0}));
  EXPECT_EQ(lim.max_connections, 10u);
  EXPECT_EQ(lim.handshake_timeout, seconds(1));
  EXPECT_EQ(lim.request_headers_timeout, seconds(2));
  EXPECT_EQ(lim.idle_timeout, seconds(180));
  EXPECT_EQ(lim.max_connection_age, seconds(3600));
  EXPECT_EQ(lim.stream_write_timeout, seconds(4));
  EXPECT_EQ(lim.premature_reset_limit, 20u);
  EXPECT_DOUBLE_EQ(lim.premature_reset_ratio, 1.0);
  EXPECT_EQ(lim.premature_reset_min_stream_lifetime, milliseconds(250));
  EXPECT_EQ(lim.max_consecutive_empty_frames, 3u);
  EXPECT_EQ(lim.max_priority_frames_per_stream, 7u);
  EXPECT_EQ(lim.max_window_updates_per_data_frame_sent, 9u);
  EXPECT_EQ(lim.max_outbound_frames, 100u);
}

TEST(ConfigLoader, ExplicitNullMeansAbsentForOptionalFields) {
  const Config c = load_config_string(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    tls: ~
listeners:
  - name: ingress
    address: 0.0.0.0:8080
    cluster: app
    tls: null
    limits: {max_connection_age: ~}
    filters:
      - {type: queue_wait_budget, budget: 8ms, retry_pushback: ~}
)",
                                      "t.yaml", builtin_filters());
  EXPECT_FALSE(c.clusters[0].tls.has_value());
  EXPECT_FALSE(c.listeners[0].tls.has_value());
  EXPECT_FALSE(c.listeners[0].limits.max_connection_age.has_value());
  EXPECT_FALSE(params_as<QueueWaitBudgetConfig>(c.listeners[0].filters[0]).retry_pushback);
}

TEST(ConfigLoader, SocketAddressPrintsIpv6InBrackets) {
  EXPECT_EQ((SocketAddress{"::1", 8080}).to_string(), "[::1]:8080");
  EXPECT_EQ((SocketAddress{"127.0.0.1", 80}).to_string(), "127.0.0.1:80");
  EXPECT_EQ((SocketAddress{"app.local", 1}).to_string(), "app.local:1");
}

TEST(ConfigLoader, LoadsAFileAndRecordsItsAbsolutePath) {
  const TempDir dir;
  const auto file = dir.write("sluice.yaml", kMinimal);
  const Config c = load_config_file(file.string(), builtin_filters());
  EXPECT_EQ(c.source_path, file.string());
  EXPECT_EQ(c.listeners.at(0).name, "ingress");
}

TEST(ConfigLoader, ErrorsInAFileNameThatFile) {
  const TempDir dir;
  const auto file = dir.write("bad.yaml", "workers: 0\n");
  try {
    load_config_file(file.string(), builtin_filters());
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), file.string());
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(e.column(), 10);
    EXPECT_EQ(e.yaml_path(), "workers");
  }
}

TEST(ConfigLoader, MissingFileIsAClearErrorNamingTheFile) {
  try {
    load_config_file("/nonexistent/sluice.yaml", builtin_filters());
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/sluice.yaml");
    EXPECT_EQ(e.line(), 0);
    EXPECT_STREQ(e.what(),
                 "/nonexistent/sluice.yaml: cannot read configuration file: No such file or "
                 "directory");
  }
}

TEST(ConfigLoader, DirectoryInsteadOfFileIsAClearError) {
  const TempDir dir;
  try {
    load_config_file(dir.path().string(), builtin_filters());
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.file(), dir.path().string());
    EXPECT_THAT(e.message(), HasSubstr("is a directory"));
  }
}

TEST(ConfigLoader, RelativeTlsPathsAreTakenFromTheConfigFileDirectory) {
  const TempDir dir;
  dir.write("tls/server.crt", "cert");
  dir.write("tls/server.key", "key");
  dir.write("tls/ca.pem", "ca");
  const auto file = dir.write("conf/../sluice.yaml", R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    tls: {ca: tls/ca.pem}
listeners:
  - name: ingress
    address: 0.0.0.0:8443
    cluster: app
    tls: {cert: tls/server.crt, key: tls/server.key}
)");
  const Config c = load_config_file(file.string(), builtin_filters());
  EXPECT_EQ(c.listeners[0].tls->cert_file, (dir.path() / "tls/server.crt").string());
  EXPECT_EQ(c.listeners[0].tls->key_file, (dir.path() / "tls/server.key").string());
  EXPECT_EQ(c.clusters[0].tls->ca_file, (dir.path() / "tls/ca.pem").string());
}

TEST(ConfigLoader, ReadsEveryTlsField) {
  const TempDir dir;
  const auto cert = dir.write("c.pem", "x").string();
  const auto key = dir.write("k.pem", "x").string();
  const Config c = load_config_string(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    tls:
      ca: )" + cert + R"(
      sni: app.internal
      verify: false
      cert: )" + cert + R"(
      key: )" + key + R"(
listeners:
  - name: ingress
    address: 0.0.0.0:8443
    cluster: app
    tls:
      cert: )" + cert + R"(
      key: )" + key + R"(
      min_version: "1.3"
      ciphers: ECDHE-ECDSA-AES128-GCM-SHA256
)",
                                      "t.yaml", builtin_filters());
  const ListenerTlsConfig& lt = *c.listeners[0].tls;
  EXPECT_EQ(lt.cert_file, cert);
  EXPECT_EQ(lt.key_file, key);
  EXPECT_EQ(lt.min_version, "1.3");
  EXPECT_EQ(lt.ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256");
  const ClusterTlsConfig& ct = *c.clusters[0].tls;
  EXPECT_EQ(ct.ca_file, cert);
  EXPECT_EQ(ct.sni, "app.internal");
  EXPECT_FALSE(ct.verify);
  EXPECT_EQ(ct.cert_file, cert);
  EXPECT_EQ(ct.key_file, key);
}

TEST(ConfigLoader, TlsDefaults) {
  const TempDir dir;
  const auto cert = dir.write("c.pem", "x").string();
  const Config c = load_config_string(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
    tls: {}
listeners:
  - name: ingress
    address: 0.0.0.0:8443
    cluster: app
    tls: {cert: )" + cert + ", key: " + cert +
                                          R"(}
)",
                                      "t.yaml", builtin_filters());
  EXPECT_EQ(c.listeners[0].tls->min_version, "1.2");
  EXPECT_EQ(c.listeners[0].tls->ciphers, "");
  const ClusterTlsConfig& ct = *c.clusters[0].tls;
  EXPECT_EQ(ct.ca_file, "");
  EXPECT_EQ(ct.sni, "");
  EXPECT_TRUE(ct.verify);
  EXPECT_EQ(ct.cert_file, "");
  EXPECT_EQ(ct.key_file, "");
}

TEST(ConfigLoader, ListenersOnEphemeralPortsDoNotConflict) {
  const Config c = load_config_string(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
listeners:
  - {name: a, address: 127.0.0.1:0, cluster: app}
  - {name: b, address: 127.0.0.1:0, cluster: app}
  - {name: c, address: 127.0.0.1:8081, cluster: app}
  - {name: d, address: 127.0.0.2:8081, cluster: app}
)",
                                      "t.yaml", builtin_filters());
  EXPECT_EQ(c.listeners.size(), 4u);
}

}  // namespace
}  // namespace sluice
