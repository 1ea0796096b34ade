// Every validation rule of the loader outside the filter entries (see
// filter_config_reader_test.cc), each asserting the file, line:column and YAML path of the error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/config/config_loader.h"
#include "tests/config/config_test_util.h"

namespace sluice {
namespace {

// --- document level ---

TEST(ConfigValidation, InvalidYamlNamesTheParserPosition) {
  EXPECT_TRUE(FailsAt("workers: 2\n  bad: x\n", 2, 6, "", "invalid YAML: illegal map value"));
  EXPECT_TRUE(FailsAt("workers: 2\n  bad: indentation: here\n", 2, 6, "", "invalid YAML"));
}

TEST(ConfigValidation, DeepNestingIsASyntaxErrorNotACrash) {
  EXPECT_TRUE(FailsAt(std::string(100000, '['), 1, 1, "", "invalid YAML: nested more than"));
}

TEST(ConfigValidation, UndefinedAliasIsASyntaxError) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: *nope\n", 8, 10, "",
                      "invalid YAML: the referenced anchor is not defined"));
}

TEST(ConfigValidation, EmptyDocumentIsAnError) {
  EXPECT_TRUE(FailsAt("", 1, 1, "", "the configuration is empty"));
  EXPECT_TRUE(FailsAt("# only a comment\n", 1, 1, "", "the configuration is empty"));
}

TEST(ConfigValidation, DocumentMustBeAMap) {
  EXPECT_TRUE(FailsAt("- a\n- b\n", 1, 1, "", "must be a map, got a list"));
}

TEST(ConfigValidation, OnlyOneDocumentIsAllowed) {
  EXPECT_TRUE(FailsAt("workers: 1\n---\nworkers: 2\n", 3, 1, "", "only one YAML document"));
  EXPECT_TRUE(FailsAt("---\n---\nworkers: 2\n", 3, 1, "", "only one YAML document"));
}

TEST(ConfigValidation, EmptyTrailingDocumentsAreIgnored) {
  EXPECT_EQ(load_config_string(std::string(kMinimal) + "---\n...\n", "t", builtin_filters())
                .listeners.size(),
            1u);
}

// yaml-cpp 0.7 loops forever on this instead of failing (jbeder/yaml-cpp#1040).
TEST(ConfigValidation, StrayCommaIsASyntaxErrorNotAHang) {
  EXPECT_TRUE(FailsAt(",\n" + std::string(kMinimal), 1, 1, "", "invalid YAML"));
  EXPECT_TRUE(FailsAt("# comment\n  ,\n", 2, 3, "", "invalid YAML"));
}

TEST(ConfigValidation, UnknownTopLevelKeyIsNamedWithTheAllowedKeys) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "listners: []\n", 8, 1, "listners",
                      "unknown key \"listners\" (did you mean \"listeners\"?); allowed keys: "
                      "admin, workers, listeners, clusters, drain_timeout, log_level"));
}

TEST(ConfigValidation, UnrelatedUnknownKeyGetsNoSuggestion) {
  const auto e = load_error(std::string(kMinimal) + "zzzzzz: 1\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message(),
            "unknown key \"zzzzzz\"; allowed keys: admin, workers, listeners, clusters, "
            "drain_timeout, log_level, watch_config, queues, consumers");
}

TEST(ConfigValidation, WatchConfigIsABooleanAndOffByDefault) {
  EXPECT_FALSE(load_config_string(kMinimal, "t.yaml", builtin_filters()).watch_config);
  EXPECT_TRUE(load_config_string(std::string(kMinimal) + "watch_config: true\n", "t.yaml",
                                 builtin_filters())
                  .watch_config);
  const auto e = load_error(std::string(kMinimal) + "watch_config: sometimes\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->yaml_path(), "watch_config");
}

TEST(ConfigValidation, DuplicateKeyIsAnError) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: 1\nworkers: 2\n", 9, 1, "workers",
                      "duplicate key \"workers\" (first at line 8)"));
}

TEST(ConfigValidation, NonScalarKeyIsAnError) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "? [a, b]\n: 1\n", 8, 3, "",
                      "map keys must be plain strings"));
}

TEST(ConfigValidation, ListenersAndClustersAreRequired) {
  EXPECT_TRUE(FailsAt("workers: 1\nclusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\n", 1, 1,
                      "listeners", "is required"));
  EXPECT_TRUE(FailsAt("workers: 1\n", 1, 1, "clusters", "is required"));
}

TEST(ConfigValidation, ListenersAndClustersMustNotBeEmpty) {
  EXPECT_TRUE(FailsAt("clusters: []\nlisteners: []\n", 1, 11, "clusters",
                      "must list at least one cluster"));
  EXPECT_TRUE(FailsAt("clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners: []\n", 3,
                      12, "listeners", "must list at least one listener"));
}

TEST(ConfigValidation, ListenersMustBeAList) {
  EXPECT_TRUE(FailsAt("clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners: x\n", 3, 12,
                      "listeners", "must be a list, got \"x\""));
  EXPECT_TRUE(FailsAt("clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners:\n", 3, 1,
                      "listeners", "must be a list, got nothing"));
}

TEST(ConfigValidation, WorkersMustBeBetween1And256) {
  const std::string rule = "must be an integer between 1 and 256";
  EXPECT_TRUE(
      FailsAt(std::string(kMinimal) + "workers: 0\n", 8, 10, "workers", rule + ", got \"0\""));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: 257\n", 8, 10, "workers", rule));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: -1\n", 8, 10, "workers", rule));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: two\n", 8, 10, "workers", rule));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "workers: 2.0\n", 8, 10, "workers", rule));
  EXPECT_TRUE(
      FailsAt(std::string(kMinimal) + "workers: [2]\n", 8, 10, "workers", rule + ", got a list"));
  EXPECT_EQ(
      load_config_string(std::string(kMinimal) + "workers: 256\n", "t", builtin_filters()).workers,
      256u);
}

TEST(ConfigValidation, LogLevelMustBeKnown) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "log_level: verbose\n", 8, 12, "log_level",
                      "must be one of trace|debug|info|warn|error|off, got \"verbose\""));
}

TEST(ConfigValidation, DurationsNeedAUnit) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "drain_timeout: 5\n", 8, 16, "drain_timeout",
                      "must be a duration >= 0 with a unit (ns, us, ms, s, m, h), got \"5\""));
}

TEST(ConfigValidation, AdminKeysAreChecked) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "admin:\n  port: 9901\n", 9, 3, "admin.port",
                      "allowed keys: address, access_log"));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "admin:\n  access_log: {enabled: yes}\n", 9, 25,
                      "admin.access_log.enabled", "must be true or false, got \"yes\""));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "admin:\n  access_log: {format: json}\n", 9, 16,
                      "admin.access_log.format", "allowed keys: enabled, path"));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "admin:\n  access_log: {path: \"\"}\n", 9, 22,
                      "admin.access_log.path", "must be a non-empty string"));
}

// --- addresses ---

std::string with_listener_address(std::string_view address) {
  return "clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners:\n"
         "  - name: l\n    cluster: app\n    address: " +
         std::string(address) + "\n";
}

TEST(ConfigValidation, AddressNeedsAPort) {
  EXPECT_TRUE(FailsAt(with_listener_address("localhost"), 6, 14, "listeners[0].address",
                      "must be host:port or [ipv6]:port, got \"localhost\""));
  EXPECT_TRUE(FailsAt(with_listener_address("\"127.0.0.1:\""), 6, 14, "listeners[0].address",
                      "port must be an integer between 0 and 65535 (0 = any free port), got \"\""));
  EXPECT_TRUE(FailsAt(with_listener_address("127.0.0.1:65536"), 6, 14, "listeners[0].address",
                      "got \"65536\""));
  EXPECT_TRUE(FailsAt(with_listener_address("127.0.0.1:http"), 6, 14, "listeners[0].address",
                      "got \"http\""));
  EXPECT_TRUE(FailsAt(with_listener_address("\":8080\""), 6, 14, "listeners[0].address",
                      "must be host:port"));
}

TEST(ConfigValidation, Ipv6AddressesNeedBrackets) {
  EXPECT_TRUE(FailsAt(with_listener_address("::1:8080"), 6, 14, "listeners[0].address",
                      "IPv6 addresses need brackets"));
  EXPECT_TRUE(FailsAt(with_listener_address("\"[::1]8080\""), 6, 14, "listeners[0].address",
                      "must be host:port or [ipv6]:port"));
  EXPECT_TRUE(FailsAt(with_listener_address("\"[::g]:8080\""), 6, 14, "listeners[0].address",
                      "\"::g\" is not an IPv6 address"));
  EXPECT_EQ(load_config_string(with_listener_address("\"[::]:8080\""), "t", builtin_filters())
                .listeners[0]
                .address,
            (SocketAddress{"::", 8080}));
}

TEST(ConfigValidation, HostsMustLookLikeHostsOrAddresses) {
  EXPECT_TRUE(FailsAt(with_listener_address("300.1.1.1:80"), 6, 14, "listeners[0].address",
                      "\"300.1.1.1\" is not an IPv4 address"));
  EXPECT_TRUE(FailsAt(with_listener_address("\"my host:80\""), 6, 14, "listeners[0].address",
                      "\"my host\" is not a valid host name or address"));
}

TEST(ConfigValidation, EndpointPortZeroIsRejected) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051, 127.0.0.1:0]
listeners:
  - {name: l, address: 0.0.0.0:80, cluster: app}
)",
                      3, 34, "clusters[0].endpoints[1]",
                      "port must be an integer between 1 and 65535, got \"0\""));
}

TEST(ConfigValidation, AdminPortZeroIsAllowedButNotOtherBadPorts) {
  EXPECT_EQ(load_config_string(std::string(kMinimal) + "admin: {address: 127.0.0.1:0}\n", "t",
                               builtin_filters())
                .admin.address.port,
            0);
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "admin: {address: 127.0.0.1:99999}\n", 8, 18,
                      "admin.address", "got \"99999\""));
}

// --- listeners ---

TEST(ConfigValidation, ListenerRequiredFields) {
  const std::string clusters = "clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\n";
  EXPECT_TRUE(FailsAt(clusters + "listeners:\n  - address: 0.0.0.0:1\n    cluster: app\n", 4, 5,
                      "listeners[0].name", "is required"));
  EXPECT_TRUE(FailsAt(clusters + "listeners:\n  - name: l\n    cluster: app\n", 4, 5,
                      "listeners[0].address", "is required"));
  EXPECT_TRUE(FailsAt(clusters + "listeners:\n  - name: l\n    address: 0.0.0.0:1\n", 4, 5,
                      "listeners[0].cluster", "is required"));
}

TEST(ConfigValidation, ListenerMustBeAMap) {
  EXPECT_TRUE(FailsAt("clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners:\n  - l\n",
                      4, 5, "listeners[0]", "must be a map, got \"l\""));
  EXPECT_TRUE(FailsAt("clusters:\n  - {name: app, endpoints: [127.0.0.1:1]}\nlisteners:\n  -\n", 4,
                      3, "listeners[0]", "must be a map, got nothing"));
}

TEST(ConfigValidation, ListenerUnknownKeyIsNamedWithTheAllowedKeys) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    port: 80\n", 8, 5, "listeners[0].port",
                      "unknown key \"port\"; allowed keys: name, address, cluster, http2, "
                      "filters, tls, limits"));
}

TEST(ConfigValidation, ListenerClusterMustExist) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
  - {name: other, endpoints: [127.0.0.1:2]}
listeners:
  - name: l
    address: 0.0.0.0:80
    cluster: ap
)",
                      7, 14, "listeners[0].cluster",
                      "no cluster named \"ap\"; defined clusters: app, other"));
}

TEST(ConfigValidation, NamesAreRestrictedToStatFriendlyCharacters) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - name: my.listener
    address: 0.0.0.0:80
    cluster: app
)",
                      4, 11, "listeners[0].name",
                      "must be a name of letters, digits, '_' and '-', got \"my.listener\""));
}

TEST(ConfigValidation, DuplicateListenerNamesPointAtTheSecond) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: l, address: 0.0.0.0:80, cluster: app}
  - {name: l, address: 0.0.0.0:81, cluster: app}
)",
                      5, 12, "listeners[1].name",
                      "duplicate listener name \"l\" (first at line 4)"));
}

TEST(ConfigValidation, TwoListenersOnTheSameAddressConflict) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: a, address: 127.0.0.1:80, cluster: app}
  - {name: b, address: 127.0.0.1:80, cluster: app}
)",
                      5, 24, "listeners[1].address",
                      "address 127.0.0.1:80 overlaps listener \"a\" on 127.0.0.1:80"));
}

TEST(ConfigValidation, AWildcardListenerConflictsWithAnyHostOnItsPort) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: a, address: 127.0.0.1:80, cluster: app}
  - {name: b, address: "[::]:80", cluster: app}
)",
                      5, 24, "listeners[1].address", "overlaps listener \"a\""));
}

TEST(ConfigValidation, AListenerMustNotTakeTheAdminAddress) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
listeners:
  - {name: a, address: 0.0.0.0:9901, cluster: app}
)",
                      4, 24, "listeners[0].address", "overlaps the admin address 127.0.0.1:9901"));
}

// --- http2 ---

std::string with_listener_http2(std::string_view line) {
  return std::string(kMinimal) + "    http2:\n      " + std::string(line) + "\n";
}

TEST(ConfigValidation, Http2UnknownKey) {
  EXPECT_TRUE(FailsAt(with_listener_http2("max_streams: 10"), 9, 7,
                      "listeners[0].http2.max_streams",
                      "allowed keys: max_concurrent_streams, initial_stream_window, "
                      "initial_connection_window, max_frame_size, max_header_list_size, "
                      "max_headers_count"));
}

TEST(ConfigValidation, WindowsMustBeBetween65535And2To31Minus1) {
  const std::string rule = "must be a size between 65535 and 2147483647";
  EXPECT_TRUE(FailsAt(with_listener_http2("initial_stream_window: 65534"), 9, 30,
                      "listeners[0].http2.initial_stream_window", rule + " (bytes"));
  EXPECT_TRUE(FailsAt(with_listener_http2("initial_stream_window: 2GiB"), 9, 30,
                      "listeners[0].http2.initial_stream_window", rule));
  EXPECT_TRUE(FailsAt(with_listener_http2("initial_connection_window: 64KB"), 9, 34,
                      "listeners[0].http2.initial_connection_window", rule + " (bytes"));
  EXPECT_TRUE(FailsAt(with_listener_http2("initial_connection_window: lots"), 9, 34,
                      "listeners[0].http2.initial_connection_window", "got \"lots\""));
  const Config c = load_config_string(with_listener_http2("initial_stream_window: 2147483647"), "t",
                                      builtin_filters());
  EXPECT_EQ(c.listeners[0].http2.initial_stream_window, 2147483647u);
}

TEST(ConfigValidation, MaxFrameSizeMustBeWithinRfcBounds) {
  const std::string rule = "must be a size between 16384 and 16777215";
  EXPECT_TRUE(FailsAt(with_listener_http2("max_frame_size: 16383"), 9, 23,
                      "listeners[0].http2.max_frame_size", rule));
  EXPECT_TRUE(FailsAt(with_listener_http2("max_frame_size: 16MiB"), 9, 23,
                      "listeners[0].http2.max_frame_size", rule));
  EXPECT_EQ(
      load_config_string(with_listener_http2("max_frame_size: 16777215"), "t", builtin_filters())
          .listeners[0]
          .http2.max_frame_size,
      16777215u);
}

TEST(ConfigValidation, StreamAndHeaderCountsMustBePositive) {
  EXPECT_TRUE(FailsAt(with_listener_http2("max_concurrent_streams: 0"), 9, 31,
                      "listeners[0].http2.max_concurrent_streams", "must be an integer >= 1"));
  EXPECT_TRUE(FailsAt(with_listener_http2("max_headers_count: 0"), 9, 26,
                      "listeners[0].http2.max_headers_count", "must be an integer >= 1"));
  EXPECT_TRUE(FailsAt(with_listener_http2("max_header_list_size: 1000"), 9, 29,
                      "listeners[0].http2.max_header_list_size", "must be a size >= 1024"));
}

TEST(ConfigValidation, ClusterHttp2IsCheckedToo) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:1]
    http2: {initial_stream_window: 1KiB}
listeners:
  - {name: a, address: 0.0.0.0:80, cluster: app}
)",
                      4, 36, "clusters[0].http2.initial_stream_window",
                      "must be a size between 65535"));
}

std::string with_cluster_line(std::string_view line) {
  return "clusters:\n  - name: app\n    endpoints: [127.0.0.1:1]\n    " + std::string(line) +
         "\nlisteners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
}

TEST(ConfigValidation, KeepaliveMaxStreamDurationAndMaxRequestsAreChecked) {
  EXPECT_TRUE(FailsAt(with_cluster_line("keepalive: {interval: 0s}"), 4, 27,
                      "clusters[0].keepalive.interval", "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_cluster_line("keepalive: {timeout: 5}"), 4, 26,
                      "clusters[0].keepalive.timeout", "must be a duration > 0 with a unit"));
  EXPECT_TRUE(FailsAt(with_cluster_line("keepalive: {intervall: 1s}"), 4, 17,
                      "clusters[0].keepalive.intervall", "(did you mean \"interval\"?)"));
  EXPECT_TRUE(FailsAt(with_cluster_line("keepalive: {enabled: maybe}"), 4, 26,
                      "clusters[0].keepalive.enabled", "must be true or false"));
  EXPECT_TRUE(FailsAt(with_cluster_line("max_stream_duration: 0s"), 4, 26,
                      "clusters[0].max_stream_duration", "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_cluster_line("max_requests_per_connection: 0"), 4, 34,
                      "clusters[0].max_requests_per_connection",
                      "must be an integer between 1 and 1073741824"));
  EXPECT_TRUE(FailsAt(with_cluster_line("max_requests_per_connection: 2000000000"), 4, 34,
                      "clusters[0].max_requests_per_connection", "between 1 and 1073741824"));
}

// --- connection limits ---

std::string with_limits(std::string_view line) {
  return std::string(kMinimal) + "    limits:\n      " + std::string(line) + "\n";
}

TEST(ConfigValidation, LimitsAreChecked) {
  EXPECT_TRUE(FailsAt(with_limits("max_conections: 1"), 9, 7, "listeners[0].limits.max_conections",
                      "(did you mean \"max_connections\"?)"));
  EXPECT_TRUE(FailsAt(with_limits("max_connections: 0"), 9, 24,
                      "listeners[0].limits.max_connections", "must be an integer >= 1"));
  EXPECT_TRUE(FailsAt(with_limits("idle_timeout: 0s"), 9, 21, "listeners[0].limits.idle_timeout",
                      "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_limits("max_connection_age: 0ms"), 9, 27,
                      "listeners[0].limits.max_connection_age", "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_limits("premature_reset_ratio: 0"), 9, 30,
                      "listeners[0].limits.premature_reset_ratio", "must be a number in (0, 1]"));
  EXPECT_TRUE(FailsAt(with_limits("premature_reset_ratio: 1.5"), 9, 30,
                      "listeners[0].limits.premature_reset_ratio", "got \"1.5\""));
  EXPECT_TRUE(FailsAt(with_limits("premature_reset_min_stream_lifetime: 0s"), 9, 44,
                      "listeners[0].limits.premature_reset_min_stream_lifetime",
                      "must be a duration > 0"));
  EXPECT_TRUE(FailsAt(with_limits("premature_reset_limit: 0"), 9, 30,
                      "listeners[0].limits.premature_reset_limit", "must be an integer >= 1"));
}

// --- TLS ---

class TlsValidation : public testing::Test {
 protected:
  void SetUp() override {
    // ctest runs each test in its own process, possibly in parallel: keep directories apart.
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-tls-validation-" + std::to_string(::getpid()) + "-" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "c.pem") << "x";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file() const { return (dir_ / "c.pem").string(); }
  std::string missing() const { return (dir_ / "missing.pem").string(); }

  std::filesystem::path dir_;
};

TEST_F(TlsValidation, ListenerCertMustExist) {
  const std::string yaml = std::string(kMinimal) + "    tls:\n      cert: " + missing() +
                           "\n      key: " + file() + "\n";
  EXPECT_TRUE(FailsAt(yaml, 9, 13, "listeners[0].tls.cert",
                      "cannot read \"" + missing() + "\": No such file or directory"));
}

TEST_F(TlsValidation, ListenerKeyMustExist) {
  const std::string yaml = std::string(kMinimal) + "    tls:\n      cert: " + file() +
                           "\n      key: " + missing() + "\n";
  EXPECT_TRUE(FailsAt(yaml, 10, 12, "listeners[0].tls.key", "cannot read"));
}

TEST_F(TlsValidation, ListenerCertMustNotBeADirectory) {
  const std::string yaml = std::string(kMinimal) + "    tls:\n      cert: " + dir_.string() +
                           "\n      key: " + file() + "\n";
  EXPECT_TRUE(FailsAt(yaml, 9, 13, "listeners[0].tls.cert", "is a directory"));
}

TEST_F(TlsValidation, ListenerCertAndKeyAreRequired) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    tls: {key: " + file() + "}\n", 8, 10,
                      "listeners[0].tls.cert", "is required"));
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    tls: {cert: " + file() + "}\n", 8, 10,
                      "listeners[0].tls.key", "is required"));
}

TEST_F(TlsValidation, ListenerMinVersionIs12Or13) {
  const std::string yaml = std::string(kMinimal) + "    tls: {cert: " + file() +
                           ", key: " + file() + ", min_version: \"1.1\"}\n";
  const auto e = load_error(yaml);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->yaml_path(), "listeners[0].tls.min_version");
  EXPECT_EQ(e->message(), "must be one of 1.2|1.3, got \"1.1\"");
}

TEST_F(TlsValidation, ListenerTlsUnknownKey) {
  EXPECT_TRUE(FailsAt(std::string(kMinimal) + "    tls: {certificate: x}\n", 8, 11,
                      "listeners[0].tls.certificate",
                      "allowed keys: cert, key, min_version, ciphers"));
}

std::string with_cluster_tls(std::string_view tls) {
  return "clusters:\n  - name: app\n    endpoints: [127.0.0.1:1]\n    tls: " + std::string(tls) +
         "\nlisteners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
}

TEST_F(TlsValidation, ClusterCaMustExist) {
  EXPECT_TRUE(FailsAt(with_cluster_tls("{ca: " + missing() + "}"), 4, 15, "clusters[0].tls.ca",
                      "cannot read"));
}

TEST_F(TlsValidation, ClusterClientCertAndKeyComeTogether) {
  EXPECT_TRUE(FailsAt(with_cluster_tls("{cert: " + file() + "}"), 4, 10, "clusters[0].tls.key",
                      "is required"));
  EXPECT_TRUE(FailsAt(with_cluster_tls("{key: " + file() + "}"), 4, 10, "clusters[0].tls.cert",
                      "is required"));
  EXPECT_TRUE(FailsAt(with_cluster_tls("{cert: " + file() + ", key: " + missing() + "}"), 4,
                      24 + static_cast<int>(file().size()), "clusters[0].tls.key", "cannot read"));
}

TEST_F(TlsValidation, ClusterVerifyIsABoolean) {
  EXPECT_TRUE(FailsAt(with_cluster_tls("{verify: off}"), 4, 19, "clusters[0].tls.verify",
                      "must be true or false, got \"off\""));
}

// --- clusters ---

TEST(ConfigValidation, ClusterRequiredFields) {
  const std::string listeners = "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
  EXPECT_TRUE(FailsAt("clusters:\n  - endpoints: [127.0.0.1:1]\n" + listeners, 2, 5,
                      "clusters[0].name", "is required"));
  EXPECT_TRUE(FailsAt("clusters:\n  - name: app\n" + listeners, 2, 5, "clusters[0].endpoints",
                      "is required"));
  EXPECT_TRUE(FailsAt("clusters:\n  - name: app\n    endpoints: []\n" + listeners, 3, 16,
                      "clusters[0].endpoints", "must list at least one endpoint"));
}

TEST(ConfigValidation, ClusterUnknownKey) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - name: app
    endpoints: [127.0.0.1:1]
    lb_policy: round_robin
listeners:
  - {name: a, address: 0.0.0.0:80, cluster: app}
)",
                      4, 5, "clusters[0].lb_policy",
                      "allowed keys: name, endpoints, connect_timeout, http2, "
                      "max_connections_per_endpoint, reconnect_backoff_base, "
                      "reconnect_backoff_max, tls"));
}

TEST(ConfigValidation, DuplicateClusterNamesPointAtTheSecond) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1]}
  - {name: app, endpoints: [127.0.0.1:2]}
listeners:
  - {name: a, address: 0.0.0.0:80, cluster: app}
)",
                      3, 12, "clusters[1].name",
                      "duplicate cluster name \"app\" (first at line 2)"));
}

TEST(ConfigValidation, DuplicateEndpointIsAnError) {
  EXPECT_TRUE(FailsAt(R"(clusters:
  - {name: app, endpoints: [127.0.0.1:1, 127.0.0.1:1]}
listeners:
  - {name: a, address: 0.0.0.0:80, cluster: app}
)",
                      2, 42, "clusters[0].endpoints[1]", "duplicate endpoint 127.0.0.1:1"));
}

TEST(ConfigValidation, ClusterTimingsAreChecked) {
  const std::string listeners = "listeners:\n  - {name: a, address: 0.0.0.0:80, cluster: app}\n";
  const std::string head = "clusters:\n  - name: app\n    endpoints: [127.0.0.1:1]\n";
  EXPECT_TRUE(FailsAt(head + "    connect_timeout: 1\n" + listeners, 4, 22,
                      "clusters[0].connect_timeout", "must be a duration > 0 with a unit"));
  EXPECT_TRUE(FailsAt(head + "    max_connections_per_endpoint: 0\n" + listeners, 4, 35,
                      "clusters[0].max_connections_per_endpoint", "must be an integer >= 1"));
  EXPECT_TRUE(FailsAt(head + "    reconnect_backoff_max: 50ms\n" + listeners, 4, 28,
                      "clusters[0].reconnect_backoff_max",
                      "reconnect_backoff_max must be >= reconnect_backoff_base"));
  EXPECT_TRUE(FailsAt(head + "    reconnect_backoff_base: 10s\n" + listeners, 4, 29,
                      "clusters[0].reconnect_backoff_base",
                      "reconnect_backoff_max must be >= reconnect_backoff_base"));
}

}  // namespace
}  // namespace sluice
