#include "src/config/config_diff.h"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "src/config/config_dump.h"

namespace sluice {
namespace {

namespace json = boost::json;

std::string show(const json::value* v) { return v == nullptr ? "(absent)" : json::serialize(*v); }

// Appends "PATH: OLD -> NEW" for every leaf where `a` and `b` differ (objects by key, arrays of
// the same length by index; anything else as a whole).
void leaf_changes(const json::value* a, const json::value* b, const std::string& path,
                  std::vector<std::string>& out) {
  if (a == nullptr && b == nullptr) return;
  if (a != nullptr && b != nullptr && *a == *b) return;
  if (a != nullptr && b != nullptr && a->is_object() && b->is_object()) {
    for (const auto& [key, value] : a->as_object()) {
      leaf_changes(&value, b->as_object().if_contains(key), path + "." + std::string(key), out);
    }
    for (const auto& [key, value] : b->as_object()) {
      if (!a->as_object().contains(key)) {
        leaf_changes(nullptr, &value, path + "." + std::string(key), out);
      }
    }
    return;
  }
  if (a != nullptr && b != nullptr && a->is_array() && b->is_array() &&
      a->as_array().size() == b->as_array().size()) {
    for (std::size_t i = 0; i < a->as_array().size(); ++i) {
      leaf_changes(&a->as_array()[i], &b->as_array()[i], path + "[" + std::to_string(i) + "]", out);
    }
    return;
  }
  out.push_back(path + ": " + show(a) + " -> " + show(b));
}

const json::value* field(const json::value& object, std::string_view key) {
  return object.as_object().if_contains(key);
}

std::string listener_path(std::size_t index, const std::string& name) {
  return "listeners[" + std::to_string(index) + "] (\"" + name + "\")";
}

template <class T>
const T* find_named(const std::vector<T>& list, const std::string& name) {
  for (const T& item : list) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

// Listeners: matched by name. The address, cluster and TLS are fixed at bind time; HTTP/2
// settings and limits are taken by each connection when it is accepted; the filter chain and the
// criticality rules are looked up per call.
void diff_listeners(const Config& running, const Config& next, const json::value& old_json,
                    const json::value& new_json, ConfigDiff& d) {
  const json::array& old_list = field(old_json, "listeners")->as_array();
  const json::array& new_list = field(new_json, "listeners")->as_array();
  for (std::size_t i = 0; i < next.listeners.size(); ++i) {
    const ListenerConfig& l = next.listeners[i];
    const ListenerConfig* before = find_named(running.listeners, l.name);
    if (before == nullptr) {
      d.needs_restart.push_back("listeners: \"" + l.name + "\" added");
      continue;
    }
    const std::size_t old_index = static_cast<std::size_t>(before - running.listeners.data());
    const std::string path = listener_path(i, l.name);
    for (const char* key : {"address", "cluster", "queue", "tls"}) {
      leaf_changes(field(old_list[old_index], key), field(new_list[i], key), path + "." + key,
                   d.needs_restart);
    }
    const std::size_t applied_before = d.applied.size();
    for (const char* key : {"http2", "limits"}) {
      leaf_changes(field(old_list[old_index], key), field(new_list[i], key), path + "." + key,
                   d.applied);
    }
    if (d.applied.size() != applied_before) d.connections.push_back(l.name);
    const bool filters = before->filters != l.filters;
    const bool criticality = before->criticality != l.criticality;
    if (filters || criticality) {
      d.chains.push_back(l.name);
      if (filters) d.applied.push_back(path + ".filters");
      if (criticality) d.applied.push_back(path + ".criticality");
    }
  }
  for (const ListenerConfig& l : running.listeners) {
    if (find_named(next.listeners, l.name) == nullptr) {
      d.needs_restart.push_back("listeners: \"" + l.name + "\" removed");
    }
  }
}

// Clusters: every setting applies live (ClusterSet). A cluster may be added, or removed once no
// listener or consumer names it (the loader checks that every name refers to a cluster).
void diff_clusters(const Config& running, const Config& next, const json::value& old_json,
                   const json::value& new_json, ConfigDiff& d) {
  const json::array& old_list = field(old_json, "clusters")->as_array();
  const json::array& new_list = field(new_json, "clusters")->as_array();
  for (std::size_t i = 0; i < next.clusters.size(); ++i) {
    const ClusterConfig& c = next.clusters[i];
    const ClusterConfig* before = find_named(running.clusters, c.name);
    if (before == nullptr) {
      d.applied.push_back("clusters: \"" + c.name + "\" added");
      d.clusters.push_back(c.name);
      continue;
    }
    if (*before == c) continue;
    const auto old_index = static_cast<std::size_t>(before - running.clusters.data());
    leaf_changes(&old_list[old_index], &new_list[i],
                 "clusters[" + std::to_string(i) + "] (\"" + c.name + "\")", d.applied);
    d.clusters.push_back(c.name);
  }
  for (const ClusterConfig& c : running.clusters) {
    if (find_named(next.clusters, c.name) == nullptr) {
      d.applied.push_back("clusters: \"" + c.name + "\" removed");
      d.clusters.push_back(c.name);
    }
  }
}

}  // namespace

std::string ConfigDiff::refusal() const {
  std::string out = "these changes need a restart: ";
  for (std::size_t i = 0; i < needs_restart.size(); ++i) {
    out += (i == 0 ? "" : "; ") + needs_restart[i];
  }
  return out;
}

ConfigDiff diff_configs(const Config& running, const Config& next) {
  ConfigDiff d;
  const json::value old_json = config_to_json(running);
  const json::value new_json = config_to_json(next);
  if (running.workers != next.workers) {
    d.needs_restart.push_back("workers: " + std::to_string(running.workers) + " -> " +
                              std::to_string(next.workers));
  }
  if (running.admin.address != next.admin.address) {
    d.needs_restart.push_back("admin.address: " + running.admin.address.to_string() + " -> " +
                              next.admin.address.to_string());
  }
  diff_listeners(running, next, old_json, new_json, d);
  diff_clusters(running, next, old_json, new_json, d);
  // Queue mode: Redis connections, inboxes and consumer loops are built at startup.
  for (const char* key : {"queues", "consumers"}) {
    leaf_changes(field(old_json, key), field(new_json, key), key, d.needs_restart);
  }

  const json::value& old_admin = *field(old_json, "admin");
  const json::value& new_admin = *field(new_json, "admin");
  if (running.admin.access_log != next.admin.access_log) {
    d.access_log = true;
    leaf_changes(field(old_admin, "access_log"), field(new_admin, "access_log"), "admin.access_log",
                 d.applied);
  }
  for (const char* key : {"log_level", "drain_timeout", "watch_config"}) {
    const std::size_t before = d.applied.size();
    leaf_changes(field(old_json, key), field(new_json, key), key, d.applied);
    if (d.applied.size() == before) continue;
    const std::string_view k = key;
    (k == "log_level"       ? d.log_level
     : k == "drain_timeout" ? d.drain_timeout
                            : d.watch_config) = true;
  }
  return d;
}

}  // namespace sluice
