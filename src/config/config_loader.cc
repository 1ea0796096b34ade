#include "src/config/config_loader.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include "src/config/config_node.h"
#include "src/config/yaml_syntax.h"

namespace sluice {
namespace {

constexpr uint32_t kMaxWorkers = 256;
constexpr uint64_t kMinWindow = 65535;       // RFC 9113 default; less only adds round trips
constexpr uint64_t kMaxWindow = 2147483647;  // 2^31-1, RFC 9113 ceiling
constexpr uint64_t kMinFrameSize = 16384;    // RFC 9113 SETTINGS_MAX_FRAME_SIZE bounds
constexpr uint64_t kMaxFrameSize = 16777215;
constexpr uint64_t kMinHeaderListSize = 1024;     // below this even a bare gRPC call cannot fit
constexpr uint64_t kMaxClientStreams = 1u << 30;  // a client's odd stream ids below 2^31

// Tracks names already used in a list so that a duplicate can point back at the first one.
class NameSet {
 public:
  void add(const std::string& name, const ConfigNode& at, std::string_view what) {
    const auto [it, inserted] = lines_.emplace(name, at.line());
    if (!inserted) {
      at.fail("duplicate " + std::string(what) + " name \"" + name + "\" (first at line " +
              std::to_string(it->second) + ")");
    }
  }

 private:
  std::map<std::string, int> lines_;
};

void read_http2(const ConfigNode& node, Http2Config& c) {
  node.check_keys({"max_concurrent_streams", "initial_stream_window", "initial_connection_window",
                   "max_frame_size", "max_header_list_size", "max_headers_count"});
  if (auto n = node.find("max_concurrent_streams")) c.max_concurrent_streams = n->as_uint(1);
  if (auto n = node.find("initial_stream_window")) {
    c.initial_stream_window = n->as_size(kMinWindow, kMaxWindow);
  }
  if (auto n = node.find("initial_connection_window")) {
    c.initial_connection_window = n->as_size(kMinWindow, kMaxWindow);
  }
  if (auto n = node.find("max_frame_size")) {
    c.max_frame_size = n->as_size(kMinFrameSize, kMaxFrameSize);
  }
  if (auto n = node.find("max_header_list_size")) {
    c.max_header_list_size = n->as_size(kMinHeaderListSize);
  }
  if (auto n = node.find("max_headers_count")) c.max_headers_count = n->as_uint(1);
}

ListenerTlsConfig read_listener_tls(const ConfigNode& node, const std::filesystem::path& base) {
  node.check_keys({"cert", "key", "min_version", "ciphers"});
  ListenerTlsConfig c;
  c.cert_file = node.require("cert").as_readable_file(base);
  c.key_file = node.require("key").as_readable_file(base);
  if (auto n = node.find("min_version")) c.min_version = n->as_one_of({"1.2", "1.3"});
  if (auto n = node.find_optional("ciphers")) c.ciphers = n->as_string();
  return c;
}

ClusterTlsConfig read_cluster_tls(const ConfigNode& node, const std::filesystem::path& base) {
  node.check_keys({"ca", "sni", "verify", "cert", "key"});
  ClusterTlsConfig c;
  if (auto n = node.find_optional("ca")) c.ca_file = n->as_readable_file(base);
  if (auto n = node.find_optional("sni")) c.sni = n->as_string();
  if (auto n = node.find("verify")) c.verify = n->as_bool();
  const auto cert = node.find_optional("cert");
  const auto key = node.find_optional("key");
  // A client certificate is useless without its key and the other way round.
  if (cert && !key) node.require("key");
  if (key && !cert) node.require("cert");
  if (cert) c.cert_file = cert->as_readable_file(base);
  if (key) c.key_file = key->as_readable_file(base);
  return c;
}

KeepaliveConfig read_keepalive(const ConfigNode& node) {
  node.check_keys({"enabled", "interval", "timeout"});
  KeepaliveConfig c;
  if (auto n = node.find("enabled")) c.enabled = n->as_bool();
  if (auto n = node.find("interval")) c.interval = n->as_duration();
  if (auto n = node.find("timeout")) c.timeout = n->as_duration();
  return c;
}

HealthCheckConfig read_health_check(const ConfigNode& node) {
  node.check_keys({"service", "interval", "timeout", "unhealthy_threshold", "healthy_threshold"});
  HealthCheckConfig c;
  if (auto n = node.find_optional("service")) c.service = n->as_text();
  if (auto n = node.find("interval")) c.interval = n->as_duration();
  if (auto n = node.find("timeout")) c.timeout = n->as_duration();
  if (auto n = node.find("unhealthy_threshold")) c.unhealthy_threshold = n->as_uint(1, 1000);
  if (auto n = node.find("healthy_threshold")) c.healthy_threshold = n->as_uint(1, 1000);
  return c;
}

ConnectionLimits read_limits(const ConfigNode& node) {
  node.check_keys({"max_connections", "handshake_timeout", "request_headers_timeout",
                   "idle_timeout", "max_connection_age", "stream_write_timeout",
                   "premature_reset_limit", "premature_reset_ratio",
                   "premature_reset_min_stream_lifetime", "max_consecutive_empty_frames",
                   "max_priority_frames_per_stream", "max_window_updates_per_data_frame_sent",
                   "max_outbound_frames"});
  ConnectionLimits c;
  if (auto n = node.find("max_connections")) c.max_connections = n->as_uint(1);
  if (auto n = node.find("handshake_timeout")) c.handshake_timeout = n->as_duration();
  if (auto n = node.find("request_headers_timeout")) c.request_headers_timeout = n->as_duration();
  if (auto n = node.find("idle_timeout")) c.idle_timeout = n->as_duration();
  if (auto n = node.find_optional("max_connection_age")) c.max_connection_age = n->as_duration();
  if (auto n = node.find("stream_write_timeout")) c.stream_write_timeout = n->as_duration();
  if (auto n = node.find("premature_reset_limit")) c.premature_reset_limit = n->as_uint(1);
  if (auto n = node.find("premature_reset_ratio")) {
    c.premature_reset_ratio = n->as_double(kUnitIntervalOpenLow);
  }
  if (auto n = node.find("premature_reset_min_stream_lifetime")) {
    c.premature_reset_min_stream_lifetime = n->as_duration();
  }
  if (auto n = node.find("max_consecutive_empty_frames")) {
    c.max_consecutive_empty_frames = n->as_uint(1);
  }
  if (auto n = node.find("max_priority_frames_per_stream")) {
    c.max_priority_frames_per_stream = n->as_uint(1);
  }
  if (auto n = node.find("max_window_updates_per_data_frame_sent")) {
    c.max_window_updates_per_data_frame_sent = n->as_uint(1);
  }
  if (auto n = node.find("max_outbound_frames")) c.max_outbound_frames = n->as_uint(16);
  return c;
}

// One `filters:` entry; its parameters are read by its type. `name` is left empty when the
// entry does not set one: the default depends on the rest of the list.
FilterConfig read_filter(const ConfigNode& node, const FilterTypes& types) {
  // Keys are checked by the type: `type` must be read first to know which keys are allowed.
  if (node.is_null()) node.fail("must be a map with a type, got nothing");
  FilterConfig filter;
  const std::vector<std::string_view> names = types.names();
  filter.type = node.require("type").as_one_of(names);
  if (auto n = node.find("name")) filter.name = n->as_name();
  filter.params = types.read(filter.type, node);
  return filter;
}

// Default names: the type, plus "_<index in the list>" when the type occurs more than once, so
// the name also tells which entry it is.
void read_filters(const ConfigNode& list, const FilterTypes& types,
                  std::vector<FilterConfig>& filters) {
  const std::vector<ConfigNode> entries = list.elements();
  for (const ConfigNode& entry : entries) filters.push_back(read_filter(entry, types));
  NameSet names;
  for (size_t i = 0; i < filters.size(); ++i) {
    FilterConfig& f = filters[i];
    const auto name_node = entries[i].find("name");
    if (!name_node) {
      const auto same_type = std::count_if(filters.begin(), filters.end(),
                                           [&](const FilterConfig& g) { return g.type == f.type; });
      f.name = same_type > 1 ? f.type + "_" + std::to_string(i) : f.type;
    }
    // Without an explicit name the entry itself is the thing to point at.
    names.add(f.name, name_node ? *name_node : entries[i], "filter");
  }
}

ClusterConfig read_cluster(const ConfigNode& node, const std::filesystem::path& base) {
  node.check_keys({"name", "endpoints", "connect_timeout", "http2", "max_connections_per_endpoint",
                   "reconnect_backoff_base", "reconnect_backoff_max", "tls", "keepalive",
                   "max_stream_duration", "max_requests_per_connection", "dns_refresh",
                   "health_check"});
  ClusterConfig c;
  c.name = node.require("name").as_name();
  const ConfigNode endpoints = node.require("endpoints");
  for (const ConfigNode& e : endpoints.elements()) {
    SocketAddress address = e.as_address(false);
    if (std::find(c.endpoints.begin(), c.endpoints.end(), address) != c.endpoints.end()) {
      e.fail("duplicate endpoint " + address.to_string());
    }
    c.endpoints.push_back(std::move(address));
  }
  if (c.endpoints.empty()) endpoints.fail("must list at least one endpoint");
  if (auto n = node.find("connect_timeout")) c.connect_timeout = n->as_duration();
  if (auto n = node.find("http2")) read_http2(*n, c.http2);
  if (auto n = node.find("max_connections_per_endpoint")) {
    c.max_connections_per_endpoint = n->as_uint(1);
  }
  if (auto n = node.find("reconnect_backoff_base")) c.reconnect_backoff_base = n->as_duration();
  if (auto n = node.find("reconnect_backoff_max")) c.reconnect_backoff_max = n->as_duration();
  if (c.reconnect_backoff_max < c.reconnect_backoff_base) {
    const auto at = node.find("reconnect_backoff_max");
    (at ? *at : node.require("reconnect_backoff_base"))
        .fail("reconnect_backoff_max must be >= reconnect_backoff_base");
  }
  if (auto n = node.find_optional("tls")) c.tls = read_cluster_tls(*n, base);
  if (auto n = node.find("keepalive")) c.keepalive = read_keepalive(*n);
  if (auto n = node.find_optional("max_stream_duration")) c.max_stream_duration = n->as_duration();
  if (auto n = node.find("max_requests_per_connection")) {
    c.max_requests_per_connection = n->as_uint(1, kMaxClientStreams);
  }
  if (auto n = node.find("dns_refresh")) c.dns_refresh = n->as_duration();
  if (auto n = node.find_optional("health_check")) c.health_check = read_health_check(*n);
  return c;
}

Criticality read_criticality_name(const ConfigNode& node) {
  std::vector<std::string_view> names;
  names.reserve(kCriticalities.size());
  for (const Criticality c : kCriticalities) names.emplace_back(to_string(c));
  return *parse_criticality(node.as_one_of(names));
}

CriticalityConfig read_criticality(const ConfigNode& node) {
  node.check_keys({"header", "default", "methods"});
  CriticalityConfig c;
  if (auto n = node.find("header")) {
    c.header = n->as_string();
    for (char& ch : c.header) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');  // HTTP/2: lower case
    }
  }
  if (auto n = node.find("default")) c.default_class = read_criticality_name(*n);
  if (auto methods = node.find("methods")) {
    for (const ConfigNode& m : methods->elements()) {
      m.check_keys({"match", "criticality"});
      CriticalityRule rule;
      rule.match = m.require("match").as_path_match();
      rule.criticality = read_criticality_name(m.require("criticality"));
      c.methods.push_back(std::move(rule));
    }
  }
  return c;
}

// "no cluster named "ap"; defined clusters: app, other" for a reference that names nothing.
template <class T>
std::string unknown_name(std::string_view what, const std::string& name,
                         const std::vector<T>& defined) {
  std::string known;
  for (const T& k : defined) known += (known.empty() ? "" : ", ") + k.name;
  return "no " + std::string(what) + " named \"" + name + "\"; " +
         (known.empty() ? "no " + std::string(what) + "s are defined"
                        : "defined " + std::string(what) + "s: " + known);
}

std::string read_cluster_ref(const ConfigNode& node, const Config& config) {
  std::string name = node.as_name();
  if (config.find_cluster(name) == nullptr)
    node.fail(unknown_name("cluster", name, config.clusters));
  return name;
}

std::string read_queue_ref(const ConfigNode& node, const Config& config) {
  std::string name = node.as_name();
  if (config.find_queue(name) == nullptr) node.fail(unknown_name("queue", name, config.queues));
  return name;
}

ListenerConfig read_listener(const ConfigNode& node, const Config& config,
                             const std::filesystem::path& base, const FilterTypes& types) {
  node.check_keys(
      {"name", "address", "cluster", "http2", "filters", "tls", "limits", "criticality", "queue"});
  ListenerConfig c;
  c.name = node.require("name").as_name();
  c.address = node.require("address").as_address(true);
  // Where admitted calls go: forwarded to a cluster, or enqueued (queue mode); exactly one.
  const auto cluster = node.find_optional("cluster");
  const auto queue = node.find_optional("queue");
  if (cluster && queue) {
    queue->fail(
        "a listener forwards to a `cluster` or enqueues to a `queue`, not both (cluster "
        "at line " +
        std::to_string(cluster->line()) + ")");
  }
  if (queue) {
    c.queue = read_queue_ref(*queue, config);
  } else {
    c.cluster = read_cluster_ref(node.require("cluster"), config);
  }
  if (auto n = node.find("http2")) read_http2(*n, c.http2);
  if (auto n = node.find("filters")) read_filters(*n, types, c.filters);
  if (auto n = node.find_optional("tls")) c.tls = read_listener_tls(*n, base);
  if (auto n = node.find("limits")) c.limits = read_limits(*n);
  if (auto n = node.find_optional("criticality")) c.criticality = read_criticality(*n);
  return c;
}

// Redis keys are binary-safe, but a stream key also names the dead-letter stream and reply
// lists derived from it and shows in logs: printable ASCII without spaces.
std::string read_stream_key(const ConfigNode& node) {
  std::string key = node.as_string();
  for (const char ch : key) {
    if (ch <= ' ' || ch > '~') {
      node.fail("must be a Redis key of printable ASCII without spaces, got \"" + key + "\"");
    }
  }
  return key;
}

QueueConfig read_queue(const ConfigNode& node) {
  node.check_keys({"name", "redis", "stream", "group", "claim_after", "max_deliveries",
                   "max_pending", "shed_by_estimated_wait", "reply_ttl"});
  QueueConfig c;
  c.name = node.require("name").as_name();
  c.redis = node.require("redis").as_address(false);
  c.stream = "sluice:" + c.name;
  if (auto n = node.find_optional("stream")) c.stream = read_stream_key(*n);
  if (auto n = node.find_optional("group")) c.group = read_stream_key(*n);
  if (auto n = node.find("claim_after")) c.claim_after = n->as_duration();
  if (auto n = node.find("max_deliveries")) c.max_deliveries = n->as_uint(1, 1000);
  if (auto n = node.find("max_pending")) c.max_pending = n->as_uint(1);
  if (auto n = node.find("shed_by_estimated_wait")) c.shed_by_estimated_wait = n->as_bool();
  if (auto n = node.find("reply_ttl")) c.reply_ttl = n->as_duration();
  return c;
}

ConsumerConfig read_consumer(const ConfigNode& node, const Config& config,
                             const FilterTypes& types) {
  node.check_keys({"name", "queue", "cluster", "filters"});
  ConsumerConfig c;
  c.name = node.require("name").as_name();
  c.queue = read_queue_ref(node.require("queue"), config);
  c.cluster = read_cluster_ref(node.require("cluster"), config);
  if (auto n = node.find("filters")) read_filters(*n, types, c.filters);
  return c;
}

AdminConfig read_admin(const ConfigNode& node) {
  node.check_keys({"address", "access_log"});
  AdminConfig c;
  if (auto n = node.find("address")) c.address = n->as_address(true);
  if (auto log = node.find("access_log")) {
    log->check_keys({"enabled", "path"});
    if (auto n = log->find("enabled")) c.access_log.enabled = n->as_bool();
    if (auto n = log->find("path")) c.access_log.path = n->as_string();
  }
  return c;
}

bool is_wildcard(const std::string& host) { return host == "0.0.0.0" || host == "::"; }

// Two sockets that would fight over a port: same port (not ephemeral) and the same host, or one
// of them bound to every address. SO_REUSEPORT would let both bind and split traffic silently.
bool overlaps(const SocketAddress& a, const SocketAddress& b) {
  if (a.port == 0 || a.port != b.port) return false;
  return a.host == b.host || is_wildcard(a.host) || is_wildcard(b.host);
}

uint32_t default_workers() {
  const unsigned cores = std::thread::hardware_concurrency();  // 0 when unknown
  return std::clamp<uint32_t>(cores, 1, kMaxWorkers);
}

Config read_config(const ConfigNode& root, const std::filesystem::path& base,
                   const FilterTypes& types) {
  if (root.is_null()) {
    root.fail("the configuration is empty; it needs at least `listeners:` and `clusters:`");
  }
  root.check_keys({"admin", "workers", "listeners", "clusters", "drain_timeout", "log_level",
                   "watch_config", "queues", "consumers"});
  Config config;
  if (auto n = root.find("admin")) config.admin = read_admin(*n);
  config.workers = default_workers();
  if (auto n = root.find("workers")) config.workers = n->as_uint(1, kMaxWorkers);

  // Queues and clusters first: listeners and consumers refer to them by name.
  const auto queues = root.find("queues");
  if (queues) {
    NameSet queue_names;
    for (const ConfigNode& n : queues->elements()) {
      QueueConfig queue = read_queue(n);
      queue_names.add(queue.name, n.require("name"), "queue");
      // Two queues on one stream would read each other's calls under different rules.
      for (const QueueConfig& other : config.queues) {
        if (other.redis == queue.redis && other.stream == queue.stream) {
          const auto at = n.find_optional("stream");
          (at ? *at : n.require("name"))
              .fail("stream \"" + queue.stream + "\" on " + queue.redis.to_string() +
                    " is already used by queue \"" + other.name + "\"");
        }
      }
      config.queues.push_back(std::move(queue));
    }
  }
  // A frontend that only enqueues needs no cluster: with queues, `clusters:` may be absent.
  const auto clusters = config.queues.empty() ? root.require("clusters") : root.find("clusters");
  if (clusters) {
    NameSet cluster_names;
    for (const ConfigNode& n : clusters->elements()) {
      config.clusters.push_back(read_cluster(n, base));
      cluster_names.add(config.clusters.back().name, n.require("name"), "cluster");
    }
    if (config.clusters.empty()) clusters->fail("must list at least one cluster");
  }

  // A pod sidecar that only pulls from a queue needs no listener: with consumers, `listeners:`
  // may be absent.
  const auto consumers = root.find("consumers");
  const bool has_consumers = consumers && !consumers->is_null() && !consumers->elements().empty();
  const auto listeners = has_consumers ? root.find("listeners") : root.require("listeners");
  if (listeners) {
    NameSet listener_names;
    for (const ConfigNode& n : listeners->elements()) {
      ListenerConfig listener = read_listener(n, config, base, types);
      listener_names.add(listener.name, n.require("name"), "listener");
      const ConfigNode address = n.require("address");
      if (overlaps(listener.address, config.admin.address)) {
        address.fail("address " + listener.address.to_string() + " overlaps the admin address " +
                     config.admin.address.to_string());
      }
      for (const ListenerConfig& other : config.listeners) {
        if (overlaps(listener.address, other.address)) {
          address.fail("address " + listener.address.to_string() + " overlaps listener \"" +
                       other.name + "\" on " + other.address.to_string());
        }
      }
      config.listeners.push_back(std::move(listener));
    }
    if (config.listeners.empty()) listeners->fail("must list at least one listener");
  }

  if (consumers) {
    NameSet consumer_names;
    for (const ConfigNode& n : consumers->elements()) {
      config.consumers.push_back(read_consumer(n, config, types));
      consumer_names.add(config.consumers.back().name, n.require("name"), "consumer");
    }
  }

  if (auto n = root.find("drain_timeout")) config.drain_timeout = n->as_duration(true);
  if (auto n = root.find("log_level")) {
    config.log_level = n->as_one_of({"trace", "debug", "info", "warn", "error", "off"});
  }
  if (auto n = root.find("watch_config")) config.watch_config = n->as_bool();
  return config;
}

[[noreturn]] void throw_at(const std::string& source, const YAML::Mark& mark,
                           const std::string& message) {
  // yaml-cpp marks are 0-based; a null mark (-1) means it did not say where.
  throw ConfigError(source, mark.line + 1, mark.column + 1, "", message);
}

Config load(std::string_view yaml, const std::string& source, const std::filesystem::path& base,
            const FilterTypes& types) {
  const std::string text(yaml);
  YAML::Node document;
  try {
    check_yaml_syntax(text, source);
    document = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    // Its message says "bad file", which would send the reader looking in the wrong place.
    throw_at(source, e.mark,
             "invalid YAML: nested more than " + std::to_string(e.depth()) + " levels deep");
  } catch (const YAML::Exception& e) {
    throw_at(source, e.mark, "invalid YAML: " + e.msg);
  }
  try {
    return read_config(ConfigNode::root(document, source), base, types);
  } catch (const YAML::Exception& e) {
    // Not expected once the document parsed; kept so that no yaml-cpp type escapes the API.
    throw_at(source, e.mark, e.msg);
  }
}

}  // namespace

Config load_config_file(const std::string& path, const FilterTypes& filters) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path, 0, 0, "", "cannot read configuration file: it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw ConfigError(path, 0, 0, "",
                      "cannot read configuration file: " + std::generic_category().message(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ConfigError(path, 0, 0, "", "cannot read configuration file: read error");
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
  Config config = load(text.str(), path, absolute.parent_path(), filters);
  config.source_path = absolute.string();
  config.version = config_version(text.str());
  return config;
}

std::string config_version(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

Config load_config_string(std::string_view yaml, const std::string& source_name,
                          const FilterTypes& filters) {
  return load(yaml, source_name, {}, filters);
}

}  // namespace sluice
