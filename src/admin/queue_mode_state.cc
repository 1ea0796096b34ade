#include "src/admin/queue_mode_state.h"

#include <algorithm>
#include <set>
#include <utility>

namespace sluice {
namespace {

const std::string* label_value(const StatName& name, std::string_view key) {
  for (const auto& [k, v] : name.labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string string_field(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// The dump's list `key` as objects with a name; nullopt when the dump has no such list.
std::optional<std::vector<const boost::json::object*>> named_objects(const boost::json::value& dump,
                                                                     std::string_view key) {
  const auto* root = dump.if_object();
  const auto* list = root ? root->if_contains(key) : nullptr;
  if (list == nullptr || !list->is_array()) return std::nullopt;
  std::vector<const boost::json::object*> out;
  for (const auto& item : list->get_array()) {
    const auto* o = item.if_object();
    if (o != nullptr && !string_field(*o, "name").empty()) out.push_back(o);
  }
  return out;
}

// Names in configuration order, or (without the list) the stats' labels, sorted.
std::vector<std::string> names(const std::optional<std::vector<const boost::json::object*>>& config,
                               const std::set<std::string>& from_stats) {
  if (!config) return {from_stats.begin(), from_stats.end()};
  std::vector<std::string> out;
  for (const boost::json::object* o : *config) out.push_back(string_field(*o, "name"));
  return out;
}

const boost::json::object* find_named(
    const std::optional<std::vector<const boost::json::object*>>& config, const std::string& name) {
  if (!config) return nullptr;
  for (const boost::json::object* o : *config) {
    if (string_field(*o, "name") == name) return o;
  }
  return nullptr;
}

}  // namespace

const StatValue* QueueModeState::Stats::find(std::string_view leaf) const {
  const auto it = by_leaf_.find(leaf);
  return it == by_leaf_.end() ? nullptr : it->second;
}

std::optional<double> QueueModeState::Stats::number(std::string_view leaf) const {
  const StatValue* s = find(leaf);
  if (s == nullptr || s->type == StatType::Histogram) return std::nullopt;
  return s->number;
}

const StatValue* QueueModeState::Stats::histogram(std::string_view leaf) const {
  const StatValue* s = find(leaf);
  return s != nullptr && s->type == StatType::Histogram ? s : nullptr;
}

std::optional<double> QueueModeState::Consumer::limit() const {
  std::optional<double> out;
  for (const LimiterSnapshot* l : limiters) {
    const auto v = static_cast<double>(l->limit);
    out = out ? std::min(*out, v) : v;
  }
  return out;
}

std::optional<double> QueueModeState::Consumer::limiter_p99_ms() const {
  for (const LimiterSnapshot* l : limiters) {
    if (l->p99_ms) return l->p99_ms;
  }
  return std::nullopt;
}

std::string consumer_listener(const std::string& consumer) { return "consumer:" + consumer; }

QueueModeState QueueModeState::read(const std::vector<StatValue>& stats,
                                    const boost::json::value& config_dump,
                                    const std::vector<LimiterSnapshot>& limits) {
  const auto queue_config = named_objects(config_dump, "queues");
  const auto consumer_config = named_objects(config_dump, "consumers");

  std::map<std::string, Stats> queue_stats;
  std::map<std::string, Stats> consumer_stats;
  // Each consumer filter's limit_<direction>_total, by "consumer:<c>".
  std::map<std::string, std::vector<const StatValue*>> filter_stats;
  for (const StatValue& s : stats) {
    if (s.name.kind == "queue") {
      if (const std::string* q = label_value(s.name, "queue")) queue_stats[*q].add(s);
    } else if (s.name.kind == "consumer") {
      if (const std::string* c = label_value(s.name, "consumer")) consumer_stats[*c].add(s);
    } else if (s.name.kind == "filter" && s.name.leaf.starts_with("limit_") &&
               label_value(s.name, "criticality") == nullptr) {
      if (const std::string* l = label_value(s.name, "listener");
          l && l->starts_with("consumer:")) {
        filter_stats[*l].push_back(&s);
      }
    }
  }

  QueueModeState out;
  std::set<std::string> stat_queues;
  for (const auto& [name, st] : queue_stats) stat_queues.insert(name);
  for (const std::string& name : names(queue_config, stat_queues)) {
    Queue q;
    q.name = name;
    if (const boost::json::object* o = find_named(queue_config, name)) {
      q.redis = string_field(*o, "redis");
      q.stream = string_field(*o, "stream");
      q.group = string_field(*o, "group");
      if (const auto* m = o->if_contains("max_pending"); m && m->is_number()) {
        q.max_pending = m->to_number<double>();
      }
    }
    if (auto it = queue_stats.find(name); it != queue_stats.end()) q.stats = std::move(it->second);
    out.queues.push_back(std::move(q));
  }

  std::set<std::string> stat_consumers;
  for (const auto& [name, st] : consumer_stats) stat_consumers.insert(name);
  for (const std::string& name : names(consumer_config, stat_consumers)) {
    Consumer c;
    c.name = name;
    if (const boost::json::object* o = find_named(consumer_config, name)) {
      c.queue = string_field(*o, "queue");
      c.cluster = string_field(*o, "cluster");
    }
    if (auto it = consumer_stats.find(name); it != consumer_stats.end()) {
      c.stats = std::move(it->second);
    }
    const std::string listener = consumer_listener(name);
    for (const LimiterSnapshot& l : limits) {
      if (l.listener == listener) c.limiters.push_back(&l);
    }
    for (const StatValue* s : filter_stats[listener]) {
      for (std::size_t d = 0; d < kLimitDirections.size(); ++d) {
        if (s->name.leaf == std::string("limit_") + kLimitDirections[d] + "_total") {
          c.adjustments[d] = c.adjustments[d].value_or(0) + s->number;
        }
      }
    }
    out.consumers.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice
