// The validated configuration as plain structs. Loaded from YAML by load_config_file() in
// config_loader.h; every field is documented in docs/configuration.md and config/sluice.yaml.
// Defaults live here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/filter_params.h"
#include "src/core/criticality.h"
#include "src/core/time.h"
#include "src/h2/settings.h"

namespace sluice {

using namespace std::chrono_literals;

// host:port. `host` is a literal IPv4/IPv6 address, or a name (a cluster endpoint's is resolved
// to all its addresses and re-resolved every clusters[].dns_refresh).
struct SocketAddress {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;  // "127.0.0.1:8080", "[::1]:8080"
  bool operator==(const SocketAddress&) const = default;
};

// HTTP/2 settings sluice advertises (listener: to clients; cluster: to the upstream): the
// codec's own struct.
using Http2Config = h2::Settings;

// Downstream TLS (issue: hardening). Absent means h2c with prior knowledge.
struct ListenerTlsConfig {
  std::string cert_file;
  std::string key_file;
  std::string min_version = "1.2";  // "1.2" or "1.3"
  std::string ciphers;              // OpenSSL cipher list for TLS 1.2; empty = sane default

  bool operator==(const ListenerTlsConfig&) const = default;
};

// Upstream TLS per cluster. Absent means h2c.
struct ClusterTlsConfig {
  std::string ca_file;  // empty = system default trust store
  std::string sni;      // empty = endpoint host
  bool verify = true;
  std::string cert_file;  // optional client certificate
  std::string key_file;

  bool operator==(const ClusterTlsConfig&) const = default;
};

// Connection-level protections for a listener (issue: hardening).
struct ConnectionLimits {
  uint32_t max_connections = 10000;            // per listener, across workers
  Duration handshake_timeout = 10s;            // TLS handshake + connection preface
  Duration request_headers_timeout = 10s;      // HEADERS..END_HEADERS of a request
  Duration idle_timeout = 300s;                // no open streams and no frames
  std::optional<Duration> max_connection_age;  // then GOAWAY and drain the connection
  Duration stream_write_timeout = 30s;         // a stream whose window stays closed this long
  uint32_t premature_reset_limit = 500;        // streams reset before a response, per window
  double premature_reset_ratio = 0.5;          // Envoy's rule: > ratio of the last N -> close
  // Only a stream reset this soon after it opened counts as premature: a client cancelling a
  // call that waited in a queue until its deadline is not an attack (Envoy: 1 s).
  Duration premature_reset_min_stream_lifetime = 1s;
  // Flood limits (Envoy's defaults); over any of them the connection gets GOAWAY
  // ENHANCE_YOUR_CALM and is closed.
  uint32_t max_consecutive_empty_frames = 1;             // DATA/HEADERS/CONTINUATION, no payload
  uint32_t max_priority_frames_per_stream = 100;         // PRIORITY per stream opened (+1)
  uint32_t max_window_updates_per_data_frame_sent = 10;  // WINDOW_UPDATE per DATA frame we sent
  uint32_t max_outbound_frames = 10000;  // frames queued for a client that does not read

  bool operator==(const ConnectionLimits&) const = default;
};

// One entry of a listener's `filters:` list. The parameters belong to the filter's type
// (filters/<type>/); params_as<T>() gets them back as the type's struct.
struct FilterConfig {
  FilterConfig() = default;
  template <class T>
  FilterConfig(std::string filter_name, std::string filter_type, T filter_params)
      : name(std::move(filter_name)),
        type(std::move(filter_type)),
        params(std::make_shared<const FilterParamsOf<T>>(std::move(filter_params))) {}

  std::string name;  // defaults to the type, suffixed with the index when repeated
  std::string type;  // a name of the registry (filters/filter_registry.cc)
  std::shared_ptr<const FilterParams> params;

  bool operator==(const FilterConfig& o) const {
    return name == o.name && type == o.type &&
           (params == o.params || (params && o.params && params->equals(*o.params)));
  }
};

// The parameters of `f` as its type's struct. Throws std::invalid_argument naming the filter when
// they are something else.
template <class T>
const T& params_as(const FilterConfig& f) {
  if (const auto* p = dynamic_cast<const FilterParamsOf<T>*>(f.params.get())) return p->value();
  throw std::invalid_argument("filter '" + f.name + "': parameters do not match type '" + f.type +
                              "'");
}

// `match` (ConfigNode::as_path_match) against a :path: exact, or a prefix when it ends in '*'.
bool path_matches(std::string_view match, std::string_view path);

// listeners[].criticality: how a request's traffic class is chosen. A valid header value wins,
// then the first method rule that matches, then `default_class`.
struct CriticalityRule {
  std::string match;  // an exact :path, or a prefix ending in '*' ("/pkg.Reports/*")
  Criticality criticality = Criticality::Critical;

  bool operator==(const CriticalityRule&) const = default;
};

struct CriticalityConfig {
  std::string header = "x-sluice-criticality";
  Criticality default_class = Criticality::Critical;
  std::vector<CriticalityRule> methods;

  // The class of a request with this :path and header value (nullopt: no header).
  Criticality classify(std::string_view path, std::optional<std::string_view> header_value,
                       bool* invalid_header) const;
  bool operator==(const CriticalityConfig&) const = default;
};

struct ListenerConfig {
  std::string name;
  SocketAddress address;
  // Exactly one of the two is set: admitted calls go to a cluster, or are enqueued to a queue.
  std::string cluster;
  std::string queue;  // queues[].name (queue mode, frontend side)
  Http2Config http2;
  std::vector<FilterConfig> filters;
  std::optional<ListenerTlsConfig> tls;
  ConnectionLimits limits;
  // Absent: every request is critical and the header is not read.
  std::optional<CriticalityConfig> criticality;

  bool operator==(const ListenerConfig&) const = default;
};

// HTTP/2 PING keepalive of one upstream connection (UpstreamConnection::on_keepalive_tick).
struct KeepaliveConfig {
  bool enabled = true;      // a sidecar should notice a frozen or vanished upstream by itself
  Duration interval = 10s;  // PING once nothing was received for this long, while streams are open
  Duration timeout = 5s;    // nothing received (not even the ACK) this long after a PING: dead

  bool operator==(const KeepaliveConfig&) const = default;
};

// clusters[].health_check: grpc.health.v1.Health/Check on every address of the cluster, from
// one checker per cluster (ClusterMembership), not per worker.
struct HealthCheckConfig {
  std::string service;     // HealthCheckRequest.service; "" asks about the server as a whole
  Duration interval = 5s;  // between the end of one check of an address and the next
  Duration timeout = 1s;   // connect + answer; later is a failure
  uint32_t unhealthy_threshold = 3;  // consecutive failures that make a healthy address unhealthy
  uint32_t healthy_threshold = 2;    // consecutive successes that make it healthy again

  bool operator==(const HealthCheckConfig&) const = default;
};

struct ClusterConfig {
  std::string name;
  std::vector<SocketAddress> endpoints;
  Duration connect_timeout = 1s;
  Http2Config http2;                           // what sluice advertises to the upstream
  uint32_t max_connections_per_endpoint = 16;  // per worker
  Duration reconnect_backoff_base = 100ms;
  Duration reconnect_backoff_max = 5s;
  std::optional<ClusterTlsConfig> tls;
  KeepaliveConfig keepalive;
  // A call that carries no grpc-timeout ends DEADLINE_EXCEEDED this long after its admission.
  std::optional<Duration> max_stream_duration;
  // Streams one connection carries before it is retired (drained, replaced): far below the
  // 2^30 stream ids an HTTP/2 client has.
  uint32_t max_requests_per_connection = 1'000'000;
  // Endpoints given by name are resolved again this often (a Kubernetes headless Service's
  // addresses follow its pods); literal addresses never are.
  Duration dns_refresh = 30s;
  std::optional<HealthCheckConfig> health_check;  // absent: every address counts as healthy

  bool operator==(const ClusterConfig&) const = default;
};

// queues[]: a Redis stream and consumer group carrying unary calls from frontends (listeners
// with `queue:`) to consumers (`consumers:`), src/queue/redis_streams.h.
struct QueueConfig {
  std::string name;
  SocketAddress redis;           // host:port of Redis >= 7
  std::string stream;            // stream key; default "sluice:<name>"
  std::string group = "sluice";  // consumer group; created if missing
  // An entry delivered but not acknowledged this long is taken over by another consumer.
  Duration claim_after = 30s;
  // Deliveries after which an entry moves to "<stream>:dead" and its caller gets an error.
  uint32_t max_deliveries = 3;
  // Entries waiting in the stream (not yet delivered) beyond which a frontend answers
  // RESOURCE_EXHAUSTED instead of enqueueing.
  uint32_t max_pending = 10000;
  // Refuse (RESOURCE_EXHAUSTED, before XADD) a call whose remaining deadline is shorter than the
  // estimated wait of a new entry (backlog / the consumers' drain rate, wait_estimator.h).
  bool shed_by_estimated_wait = true;
  // TTL of a reply list, refreshed by every push; matters only once its frontend is gone.
  Duration reply_ttl = 60s;

  bool operator==(const QueueConfig&) const = default;
};

// consumers[]: pulls calls from a queue and runs them on a cluster, as many at once as its
// limiter filters grant (queue mode, pod side).
struct ConsumerConfig {
  std::string name;
  std::string queue;    // queues[].name
  std::string cluster;  // clusters[].name
  std::vector<FilterConfig> filters;

  bool operator==(const ConsumerConfig&) const = default;
};

struct AccessLogConfig {
  bool enabled = false;
  std::string path = "/dev/stdout";

  bool operator==(const AccessLogConfig&) const = default;
};

struct AdminConfig {
  SocketAddress address{"127.0.0.1", 9901};
  AccessLogConfig access_log;  // the request access log (JSON lines)

  bool operator==(const AdminConfig&) const = default;
};

struct Config {
  std::string source_path;  // file the config came from ("" when embedded)
  std::string version;      // config_version() of the file's text ("" when embedded)
  AdminConfig admin;
  uint32_t workers = 0;  // 0 in YAML is an error; default = hardware concurrency
  std::vector<ListenerConfig> listeners;
  std::vector<ClusterConfig> clusters;
  std::vector<QueueConfig> queues;
  std::vector<ConsumerConfig> consumers;
  Duration drain_timeout = 5s;
  std::string log_level = "info";  // trace|debug|info|warn|error|off
  bool watch_config = false;       // reload when the file's content changes (polled every 1 s)

  const ClusterConfig* find_cluster(const std::string& name) const;
  const QueueConfig* find_queue(const std::string& name) const;

  bool operator==(const Config&) const = default;
};

}  // namespace sluice
