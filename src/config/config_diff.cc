#include "src/config/config_diff.h"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <initializer_list>

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

// Listeners: matched by name. Every field but `queue` applies live: the address by binding the
// new one before closing the old, the cluster and filter chain per call, the HTTP/2 settings,
// limits and TLS per connection.
void diff_listeners(const Config& running, const Config& next, const json::value& old_json,
                    const json::value& new_json, ConfigDiff& d) {
  const json::array& old_list = field(old_json, "listeners")->as_array();
  const json::array& new_list = field(new_json, "listeners")->as_array();
  // Appends the changes of `keys` to d.applied and `name` to `list` when there are any.
  const auto changes = [&d](const json::value& before, const json::value& after,
                            const std::string& path, std::initializer_list<const char*> keys,
                            std::vector<std::string>& list, const std::string& name) {
    const std::size_t count = d.applied.size();
    for (const char* key : keys) {
      leaf_changes(field(before, key), field(after, key), path + "." + key, d.applied);
    }
    if (d.applied.size() != count) list.push_back(name);
  };
  for (std::size_t i = 0; i < next.listeners.size(); ++i) {
    const ListenerConfig& l = next.listeners[i];
    const ListenerConfig* before = find_named(running.listeners, l.name);
    if (before == nullptr) {
      d.added.push_back(l.name);
      d.applied.push_back("listeners: \"" + l.name + "\" added on " + l.address.to_string());
      continue;
    }
    const json::value& was = old_list[static_cast<std::size_t>(before - running.listeners.data())];
    const json::value& is = new_list[i];
    const std::string path = listener_path(i, l.name);
    changes(was, is, path, {"address"}, d.moved, l.name);
    changes(was, is, path, {"cluster"}, d.upstreams, l.name);
    // Queue mode is built at startup (the frontends' Redis connections and reply inboxes).
    leaf_changes(field(was, "queue"), field(is, "queue"), path + ".queue", d.needs_restart);
    changes(was, is, path, {"http2", "limits", "tls"}, d.connections, l.name);
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
      d.removed.push_back(l.name);
      d.applied.push_back("listeners: \"" + l.name + "\" removed from " + l.address.to_string());
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
