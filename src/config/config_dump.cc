#include "src/config/config_dump.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include "src/config/units.h"

namespace sluice {
namespace {

namespace json = boost::json;

json::value duration(Duration d) { return dump_duration(d); }
json::value size(uint64_t bytes) { return json::string(format_size(bytes)); }
json::value optional_duration(const std::optional<Duration>& d) {
  return dump_optional_duration(d);
}
json::value http2(const Http2Config& c) {
  return json::object{
      {"max_concurrent_streams", c.max_concurrent_streams},
      {"initial_stream_window", size(c.initial_stream_window)},
      {"initial_connection_window", size(c.initial_connection_window)},
      {"max_frame_size", size(c.max_frame_size)},
      {"max_header_list_size", size(c.max_header_list_size)},
      {"max_headers_count", c.max_headers_count},
  };
}

json::value filter(const FilterConfig& f) {
  // The parameters sit next to type and name, as in the YAML.
  json::object out{{"name", f.name}, {"type", f.type}};
  if (f.params) f.params->dump(out);
  return out;
}

json::value listener_tls(const std::optional<ListenerTlsConfig>& tls) {
  if (!tls) return nullptr;
  return json::object{
      {"cert", tls->cert_file},
      {"key", tls->key_file},
      {"min_version", tls->min_version},
      {"ciphers", tls->ciphers.empty() ? json::value(nullptr) : json::value(tls->ciphers)}};
}

// Empty strings mean "not set" in the structs; the loader rejects them, so dump them as absent.
json::value optional_string(const std::string& s) {
  return s.empty() ? json::value(nullptr) : json::value(s);
}

json::value cluster_tls(const std::optional<ClusterTlsConfig>& tls) {
  if (!tls) return nullptr;
  return json::object{{"ca", optional_string(tls->ca_file)},
                      {"sni", optional_string(tls->sni)},
                      {"verify", tls->verify},
                      {"cert", optional_string(tls->cert_file)},
                      {"key", optional_string(tls->key_file)}};
}

json::value limits(const ConnectionLimits& c) {
  return json::object{
      {"max_connections", c.max_connections},
      {"handshake_timeout", duration(c.handshake_timeout)},
      {"request_headers_timeout", duration(c.request_headers_timeout)},
      {"idle_timeout", duration(c.idle_timeout)},
      {"max_connection_age", optional_duration(c.max_connection_age)},
      {"stream_write_timeout", duration(c.stream_write_timeout)},
      {"premature_reset_limit", c.premature_reset_limit},
      {"premature_reset_ratio", c.premature_reset_ratio},
      {"premature_reset_min_stream_lifetime", duration(c.premature_reset_min_stream_lifetime)},
      {"max_consecutive_empty_frames", c.max_consecutive_empty_frames},
      {"max_priority_frames_per_stream", c.max_priority_frames_per_stream},
      {"max_window_updates_per_data_frame_sent", c.max_window_updates_per_data_frame_sent},
      {"max_outbound_frames", c.max_outbound_frames},
  };
}

json::value criticality(const std::optional<CriticalityConfig>& c) {
  if (!c) return nullptr;
  json::array methods;
  for (const CriticalityRule& r : c->methods) {
    methods.push_back(json::object{{"match", r.match}, {"criticality", to_string(r.criticality)}});
  }
  return json::object{{"header", c->header},
                      {"default", to_string(c->default_class)},
                      {"methods", std::move(methods)}};
}

json::value listener(const ListenerConfig& c) {
  json::array filters;
  for (const FilterConfig& f : c.filters) filters.push_back(filter(f));
  return json::object{
      {"name", c.name},
      {"address", c.address.to_string()},
      {"cluster", optional_string(c.cluster)},
      {"http2", http2(c.http2)},
      {"filters", std::move(filters)},
      {"tls", listener_tls(c.tls)},
      {"limits", limits(c.limits)},
      {"criticality", criticality(c.criticality)},
      {"queue", optional_string(c.queue)},
  };
}

json::value queue(const QueueConfig& c) {
  return json::object{
      {"name", c.name},
      {"redis", c.redis.to_string()},
      {"stream", c.stream},
      {"group", c.group},
      {"claim_after", duration(c.claim_after)},
      {"max_deliveries", c.max_deliveries},
      {"max_pending", c.max_pending},
      {"shed_by_estimated_wait", c.shed_by_estimated_wait},
      {"reply_ttl", duration(c.reply_ttl)},
  };
}

json::value consumer(const ConsumerConfig& c) {
  json::array filters;
  for (const FilterConfig& f : c.filters) filters.push_back(filter(f));
  return json::object{
      {"name", c.name},
      {"queue", c.queue},
      {"cluster", c.cluster},
      {"filters", std::move(filters)},
  };
}

json::value health_check(const std::optional<HealthCheckConfig>& h) {
  if (!h) return nullptr;
  return json::object{
      {"service", h->service},
      {"interval", duration(h->interval)},
      {"timeout", duration(h->timeout)},
      {"unhealthy_threshold", h->unhealthy_threshold},
      {"healthy_threshold", h->healthy_threshold},
  };
}

json::value cluster(const ClusterConfig& c) {
  json::array endpoints;
  for (const SocketAddress& e : c.endpoints) endpoints.push_back(json::value(e.to_string()));
  return json::object{
      {"name", c.name},
      {"endpoints", std::move(endpoints)},
      {"connect_timeout", duration(c.connect_timeout)},
      {"http2", http2(c.http2)},
      {"max_connections_per_endpoint", c.max_connections_per_endpoint},
      {"reconnect_backoff_base", duration(c.reconnect_backoff_base)},
      {"reconnect_backoff_max", duration(c.reconnect_backoff_max)},
      {"tls", cluster_tls(c.tls)},
      {"keepalive", json::object{{"enabled", c.keepalive.enabled},
                                 {"interval", duration(c.keepalive.interval)},
                                 {"timeout", duration(c.keepalive.timeout)}}},
      {"max_stream_duration", optional_duration(c.max_stream_duration)},
      {"max_requests_per_connection", c.max_requests_per_connection},
      {"dns_refresh", duration(c.dns_refresh)},
      {"health_check", health_check(c.health_check)},
  };
}

}  // namespace

json::value dump_duration(Duration d) { return json::string(format_duration(d)); }

json::value dump_optional_duration(const std::optional<Duration>& d) {
  return d ? dump_duration(*d) : json::value(nullptr);
}

json::value config_to_json(const Config& config) {
  json::array listeners;
  for (const ListenerConfig& l : config.listeners) listeners.push_back(listener(l));
  json::array clusters;
  for (const ClusterConfig& c : config.clusters) clusters.push_back(cluster(c));
  json::array queues;
  for (const QueueConfig& q : config.queues) queues.push_back(queue(q));
  json::array consumers;
  for (const ConsumerConfig& c : config.consumers) consumers.push_back(consumer(c));
  return json::object{
      {"admin",
       json::object{{"address", config.admin.address.to_string()},
                    {"access_log", json::object{{"enabled", config.admin.access_log.enabled},
                                                {"path", config.admin.access_log.path}}}}},
      {"workers", config.workers},
      {"listeners", std::move(listeners)},
      {"clusters", std::move(clusters)},
      {"drain_timeout", duration(config.drain_timeout)},
      {"log_level", config.log_level},
      {"watch_config", config.watch_config},
      {"queues", std::move(queues)},
      {"consumers", std::move(consumers)},
  };
}

}  // namespace sluice
