#include "src/admin/history_sampler.h"

#include <boost/json/value.hpp>
#include <deque>
#include <exception>
#include <utility>
#include <vector>

#include "src/admin/history_queue_points.h"
#include "src/admin/history_round.h"

namespace sluice {
namespace {

// The stats one filter registered (FilterStats and the per-class stats), found by labels.
struct ClassStats {
  const StatValue* admitted = nullptr;    // class_admitted_total
  const StatValue* shed = nullptr;        // class_shed_total
  const StatValue* queue_wait = nullptr;  // class_queue_wait_us
};

struct FilterStatsView {
  const StatValue* admitted = nullptr;
  const StatValue* shed = nullptr;
  const StatValue* limit = nullptr;
  const StatValue* in_flight = nullptr;
  const StatValue* queued = nullptr;
  const StatValue* queue_wait = nullptr;
  std::array<ClassStats, kCriticalityCount> classes{};
};

struct ListenerStatsView {
  std::array<const StatValue*, kEndReasonCount> by_reason{};
  const StatValue* queue_wait = nullptr;
};

const std::string* label(const StatName& name, std::string_view key) {
  for (const auto& [k, v] : name.labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string join(const std::string& listener, const std::string& filter) {
  return listener + "/" + filter;
}

// Every filter and listener stat of the snapshot, by "listener/filter" and by listener.
void index_stats(const std::vector<StatValue>& stats,
                 std::map<std::string, FilterStatsView>& filters,
                 std::map<std::string, ListenerStatsView>& listeners,
                 std::vector<std::pair<std::string, std::string>>& filter_order) {
  for (const StatValue& s : stats) {
    const std::string* listener = label(s.name, "listener");
    if (listener == nullptr) continue;
    const std::string& leaf = s.name.leaf;
    if (s.name.kind == "listener") {
      ListenerStatsView& v = listeners[*listener];
      if (leaf == "downstream_rq_queue_wait_us" && s.type == StatType::Histogram) {
        v.queue_wait = &s;
        continue;
      }
      for (std::size_t r = 0; r < kEndReasonCount; ++r) {
        if (leaf == std::string("downstream_rq_") + kHistoryEndReasons[r] + "_total") {
          v.by_reason[r] = &s;
        }
      }
      continue;
    }
    if (s.name.kind != "filter") continue;
    const std::string* filter = label(s.name, "filter");
    if (filter == nullptr) continue;
    const std::string key = join(*listener, *filter);
    auto [it, fresh] = filters.try_emplace(key);
    if (fresh) filter_order.emplace_back(*listener, *filter);
    FilterStatsView& v = it->second;
    const bool histogram = s.type == StatType::Histogram;
    if (const std::string* c = label(s.name, "criticality")) {
      const auto criticality = parse_criticality(*c);
      if (!criticality) continue;
      ClassStats& cs = v.classes[index_of(*criticality)];
      if (leaf == "class_admitted_total" && !histogram) cs.admitted = &s;
      if (leaf == "class_shed_total" && !histogram) cs.shed = &s;
      if (leaf == "class_queue_wait_us" && histogram) cs.queue_wait = &s;
      continue;
    }
    if (leaf == "admitted_total" && !histogram) v.admitted = &s;
    if (leaf == "shed_total" && !histogram) v.shed = &s;
    if (leaf == "limit" && !histogram) v.limit = &s;
    if (leaf == "in_flight" && !histogram) v.in_flight = &s;
    if (leaf == "queued" && !histogram) v.queued = &s;
    if (leaf == "queue_wait_us" && histogram) v.queue_wait = &s;
  }
}

// What the configuration says: listeners in order, and each listener's filters with their
// types. `known` is false when the dump has no listener list (a test's hooks), and the stats
// then decide which filters exist. The config is the authority otherwise, because stats outlive
// a filter that a reload removed.
struct ConfigView {
  bool known = false;
  std::vector<std::string> listeners;
  std::vector<HistoryFilterKey> filters;
};

// The configuration as /config_dump shows it; null when the hook throws (the history goes on
// with what /limits and the stats say).
boost::json::value config_dump(AdminHooks& hooks) {
  try {
    return hooks.config_dump();
  } catch (const std::exception&) {
    return nullptr;
  }
}

// A filter list of the dump (a listener's or a consumer's) into `out`, under `listener`.
void read_filters(const boost::json::value* filters, const std::string& listener,
                  std::vector<HistoryFilterKey>& out) {
  if (filters == nullptr || !filters->is_array()) return;
  for (const auto& f : filters->get_array()) {
    const auto* fo = f.if_object();
    if (fo == nullptr) continue;
    const auto* type = fo->if_contains("type");
    const auto* fname = fo->if_contains("name");
    const std::string t = type && type->is_string() ? std::string(type->get_string()) : "";
    // A filter without a name is named after its type (see the filter chain).
    const std::string n = fname && fname->is_string() ? std::string(fname->get_string()) : t;
    if (!n.empty()) out.push_back({listener, n, t});
  }
}

ConfigView read_config(const boost::json::value& dump) {
  ConfigView out;
  const auto* root = dump.if_object();
  const auto* listeners = root ? root->if_contains("listeners") : nullptr;
  if (listeners == nullptr || !listeners->is_array()) return out;
  out.known = true;
  for (const auto& l : listeners->get_array()) {
    const auto* lo = l.if_object();
    const auto* name = lo ? lo->if_contains("name") : nullptr;
    if (name == nullptr || !name->is_string()) continue;
    const std::string listener(name->get_string());
    out.listeners.push_back(listener);
    read_filters(lo->if_contains("filters"), listener, out.filters);
  }
  // A consumer's filters run as listener "consumer:<name>" (queue mode).
  if (const auto* consumers = root->if_contains("consumers"); consumers && consumers->is_array()) {
    for (const auto& c : consumers->get_array()) {
      const auto* co = c.if_object();
      const auto* name = co ? co->if_contains("name") : nullptr;
      if (name == nullptr || !name->is_string()) continue;
      read_filters(co->if_contains("filters"), consumer_listener(std::string(name->get_string())),
                   out.filters);
    }
  }
  return out;
}

// Short names for what every fill_* below uses.
using Round = HistoryRound;
constexpr auto to_float = &HistoryRound::to_float;
constexpr auto optional_float = &HistoryRound::optional_float;
constexpr auto p_ms = &HistoryRound::p_ms;

// Which filters a sample covers, in order: the config's chain order, then whatever else /limits
// (or, without a config, the stats) names. Fills the config's types and /limits by key.
std::vector<std::pair<std::string, std::string>> filter_order(
    const ConfigView& config, const std::vector<LimiterSnapshot>& limits,
    const std::vector<std::pair<std::string, std::string>>& stats_order,
    std::map<std::string, std::string>& config_types,
    std::map<std::string, const LimiterSnapshot*>& by_key) {
  std::vector<std::pair<std::string, std::string>> order;
  for (const HistoryFilterKey& f : config.filters) {
    if (config_types.emplace(join(f.listener, f.filter), f.type).second) {
      order.emplace_back(f.listener, f.filter);
    }
  }
  for (const LimiterSnapshot& l : limits) {
    if (by_key.emplace(join(l.listener, l.filter), &l).second &&
        !config_types.contains(join(l.listener, l.filter))) {
      order.emplace_back(l.listener, l.filter);
    }
  }
  if (!config.known) {
    for (const auto& [l, f] : stats_order) {
      if (!by_key.contains(join(l, f))) order.emplace_back(l, f);
    }
  }
  return order;
}

// A filter's per-class rates, queue and queue wait.
void fill_classes(HistoryFilterPoint& p, Round& round, const std::string& limits_prefix,
                  const LimiterSnapshot* snap, const FilterStatsView* sv) {
  for (std::size_t c = 0; c < kCriticalityCount; ++c) {
    HistoryClassPoint& cp = p.classes[c];
    const ClassStats* cs = sv ? &sv->classes[c] : nullptr;
    const std::string class_prefix = limits_prefix + to_string(kCriticalities[c]) + ":";
    if (cs && cs->admitted) {
      cp.admitted_per_s = round.rate(cs->admitted->name.dotted(), cs->admitted->number);
    } else if (snap) {
      cp.admitted_per_s =
          round.rate(class_prefix + "admitted", static_cast<double>(snap->classes[c].admitted));
    }
    if (cs && cs->shed) {
      cp.shed_per_s = round.rate(cs->shed->name.dotted(), cs->shed->number);
    } else if (snap) {
      cp.shed_per_s = round.rate(class_prefix + "shed", static_cast<double>(snap->classes[c].shed));
    }
    if (snap) cp.queued = to_float(snap->classes[c].queued);
    if (cs && cs->queue_wait) {
      cp.queue_wait_p99_ms = p_ms(round.last_interval(round.window(*cs->queue_wait, 2)), 0.99);
    }
  }
}

// One filter's point: live state from /limits (or its gauges), rates from its counters (or
// /limits' totals), queue wait percentiles from its histogram.
void fill_filter(HistoryFilterPoint& p, Round& round, const std::string& key,
                 const LimiterSnapshot* snap, const FilterStatsView* sv,
                 std::size_t recent_intervals) {
  auto gauge = [](const StatValue* s) { return s ? to_float(s->number) : kNoValue; };
  if (snap) {
    p.limit = to_float(snap->limit);
    p.in_flight = to_float(snap->in_flight);
    p.queued = to_float(snap->queued);
    p.rtt_noload_ms = optional_float(snap->rtt_noload_ms);
    p.rtt_smoothed_ms = optional_float(snap->rtt_smoothed_ms);
    p.gradient = optional_float(snap->gradient);
    p.p99_ms = optional_float(snap->p99_ms);
    p.queueing = optional_float(snap->queueing);
  } else if (sv) {
    p.limit = gauge(sv->limit);
    p.in_flight = gauge(sv->in_flight);
    p.queued = gauge(sv->queued);
  }
  // The counters win over /limits' totals, as on the dashboard: they are what /stats shows.
  const std::string limits_prefix = "limits:" + key + ":";
  if (sv && sv->admitted) {
    p.admitted_per_s = round.rate(sv->admitted->name.dotted(), sv->admitted->number);
  } else if (snap) {
    p.admitted_per_s = round.rate(limits_prefix + "admitted", static_cast<double>(snap->admitted));
  }
  if (sv && sv->shed) {
    p.shed_per_s = round.rate(sv->shed->name.dotted(), sv->shed->number);
  } else if (snap) {
    p.shed_per_s = round.rate(limits_prefix + "shed", static_cast<double>(snap->shed));
  }
  if (sv && sv->queue_wait) {
    const Round::HistogramWindow& w = round.window(*sv->queue_wait, recent_intervals + 1);
    p.queue_wait_p99_ms = p_ms(round.last_interval(w), 0.99);
    const HistogramSnapshot recent_window = HistoryRound::whole(w);
    if (recent_window.count > 0) {
      round.recent[key] = static_cast<double>(recent_window.quantile(0.99)) / 1000.0;
    }
  }
  fill_classes(p, round, limits_prefix, snap, sv);
}

// One listener's point: request rates by outcome and queue wait percentiles.
void fill_listener(HistoryListenerPoint& p, Round& round, const ListenerStatsView& v) {
  for (std::size_t r = 0; r < kEndReasonCount; ++r) {
    p.rq_per_s[r] = v.by_reason[r]
                        ? round.rate(v.by_reason[r]->name.dotted(), v.by_reason[r]->number)
                        : kNoValue;
  }
  if (v.queue_wait) {
    const HistogramSnapshot w = round.last_interval(round.window(*v.queue_wait, 2));
    p.queue_wait_p50_ms = p_ms(w, 0.5);
    p.queue_wait_p99_ms = p_ms(w, 0.99);
  }
}

}  // namespace

HistorySampler::HistorySampler(StatsRegistry& stats, AdminHooks& hooks, HistoryOptions options)
    : stats_(stats), hooks_(hooks), options_(options) {}

std::shared_ptr<const HistoryFilterKey> HistorySampler::filter_key(const std::string& listener,
                                                                   const std::string& filter,
                                                                   const std::string& type) {
  // Type is part of the identity: a reload that keeps a name for another type starts a new
  // series rather than mixing the two.
  auto& slot = filter_keys_[listener + '\n' + filter + '\n' + type];
  if (!slot)
    slot = std::make_shared<const HistoryFilterKey>(HistoryFilterKey{listener, filter, type});
  return slot;
}

std::shared_ptr<const std::string> HistorySampler::intern(
    std::map<std::string, std::shared_ptr<const std::string>>& keys, const std::string& name) {
  auto& slot = keys[name];
  if (!slot) slot = std::make_shared<const std::string>(name);
  return slot;
}

void HistorySampler::sample(TimePoint now, std::chrono::system_clock::time_point wall) {
  const std::vector<StatValue> stats = stats_.snapshot();
  const std::vector<LimiterSnapshot> limits = hooks_.limits();
  const boost::json::value dump = config_dump(hooks_);
  const ConfigView config = read_config(dump);
  const QueueModeState queue_mode = QueueModeState::read(stats, dump, limits);

  std::map<std::string, FilterStatsView> filter_stats;
  std::map<std::string, ListenerStatsView> listener_stats;
  std::vector<std::pair<std::string, std::string>> stats_order;
  index_stats(stats, filter_stats, listener_stats, stats_order);

  // Rates need an interval: none before the first sample, or if the clock did not move.
  const double dt = last_sample_ && now > *last_sample_
                        ? std::chrono::duration<double>(now - *last_sample_).count()
                        : 0.0;
  Round round(now, dt, counters_, histograms_, windows_);

  HistorySample sample;
  const int64_t wall_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  // Strictly increasing even if the wall clock steps back, so ?since= never misses a sample.
  sample.t_ms = samples_.empty() ? wall_ms : std::max(wall_ms, samples_.back().t_ms + 1);

  std::map<std::string, std::string> config_types;
  std::map<std::string, const LimiterSnapshot*> by_key;
  for (const auto& [listener, filter] :
       filter_order(config, limits, stats_order, config_types, by_key)) {
    const std::string key = join(listener, filter);
    const auto snap_it = by_key.find(key);
    const LimiterSnapshot* snap = snap_it == by_key.end() ? nullptr : snap_it->second;
    const auto stats_it = filter_stats.find(key);
    const FilterStatsView* sv = stats_it == filter_stats.end() ? nullptr : &stats_it->second;
    std::string type = snap ? snap->type : "";
    if (type.empty()) {
      const auto t = config_types.find(key);
      if (t != config_types.end()) type = t->second;
    }
    HistoryFilterPoint p;
    p.key = filter_key(listener, filter, type);
    fill_filter(p, round, key, snap, sv, options_.recent_intervals);
    sample.filters.push_back(std::move(p));
  }

  std::vector<std::string> listeners = config.listeners;
  if (!config.known) {
    for (const auto& [name, view] : listener_stats) listeners.push_back(name);
  }
  for (const std::string& name : listeners) {
    const auto it = listener_stats.find(name);
    if (it == listener_stats.end()) continue;
    HistoryListenerPoint p;
    p.listener = intern(listener_keys_, name);
    fill_listener(p, round, it->second);
    sample.listeners.push_back(std::move(p));
  }
  for (const QueueModeState::Queue& q : queue_mode.queues) {
    HistoryQueuePoint p;
    p.queue = intern(queue_keys_, q.name);
    fill_queue_point(p, round, q, options_.recent_intervals);
    sample.queues.push_back(std::move(p));
  }
  for (const QueueModeState::Consumer& c : queue_mode.consumers) {
    HistoryConsumerPoint p;
    p.consumer = intern(consumer_keys_, c.name);
    fill_consumer_point(p, round, c, options_.recent_intervals);
    sample.consumers.push_back(std::move(p));
  }

  samples_.push_back(std::move(sample));
  while (samples_.size() > options_.samples) samples_.pop_front();
  counters_ = std::move(round.counters);
  histograms_ = std::move(round.histograms);
  windows_ = std::move(round.windows);
  recent_p99_ms_ = std::move(round.recent);
  recent_histograms_ = std::move(round.recent_histograms);
  recent_rates_ = std::move(round.recent_rates);
  last_sample_ = now;
  // Keys no sample refers to any more (a filter removed ten minutes ago) are let go.
  std::erase_if(filter_keys_, [](const auto& kv) { return kv.second.use_count() == 1; });
  for (auto* keys : {&listener_keys_, &queue_keys_, &consumer_keys_}) {
    std::erase_if(*keys, [](const auto& kv) { return kv.second.use_count() == 1; });
  }
}

std::optional<double> HistorySampler::recent_queue_wait_p99_ms(const std::string& listener,
                                                               const std::string& filter) const {
  const auto it = recent_p99_ms_.find(join(listener, filter));
  if (it == recent_p99_ms_.end()) return std::nullopt;
  return it->second;
}

const HistogramSnapshot* HistorySampler::recent_histogram(const std::string& dotted) const {
  const auto it = recent_histograms_.find(dotted);
  return it == recent_histograms_.end() ? nullptr : &it->second;
}

std::optional<double> HistorySampler::recent_redis_cpu_ratio(const std::string& queue) const {
  const auto it = recent_rates_.find(redis_cpu_key(queue));
  if (it == recent_rates_.end()) return std::nullopt;
  return it->second;
}

std::size_t HistorySampler::memory_bytes() const {
  // Each heap block is counted with 16 bytes of allocator overhead.
  constexpr std::size_t kBlock = 16;
  std::size_t total = sizeof(*this);
  for (const HistorySample& s : samples_) {
    total += sizeof(HistorySample);
    if (s.filters.capacity()) total += s.filters.capacity() * sizeof(HistoryFilterPoint) + kBlock;
    if (s.listeners.capacity()) {
      total += s.listeners.capacity() * sizeof(HistoryListenerPoint) + kBlock;
    }
    if (s.queues.capacity()) total += s.queues.capacity() * sizeof(HistoryQueuePoint) + kBlock;
    if (s.consumers.capacity()) {
      total += s.consumers.capacity() * sizeof(HistoryConsumerPoint) + kBlock;
    }
  }
  for (const auto& [name, key] : filter_keys_) {
    total += name.capacity() + sizeof(HistoryFilterKey) + key->listener.capacity() +
             key->filter.capacity() + key->type.capacity() + 3 * kBlock;
  }
  for (const auto* keys : {&listener_keys_, &queue_keys_, &consumer_keys_}) {
    for (const auto& [name, key] : *keys) total += 2 * name.capacity() + 2 * kBlock;
  }
  for (const auto& [name, w] : histograms_) {
    total += name.capacity() + kBlock;
    for (const HistogramSnapshot& h : w) {
      total += sizeof(HistogramSnapshot) + h.buckets.capacity() * sizeof(h.buckets[0]) + kBlock;
    }
  }
  for (const auto& [name, h] : recent_histograms_) {
    total += name.capacity() + sizeof(HistogramSnapshot) +
             h.buckets.capacity() * sizeof(h.buckets[0]) + 2 * kBlock;
  }
  for (const auto& [name, w] : windows_) {
    total += name.capacity() + w.size() * sizeof(w.front()) + 2 * kBlock;
  }
  return total;
}

}  // namespace sluice
