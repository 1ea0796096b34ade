#include "src/admin/history_render.h"

#include <boost/json/serialize.hpp>
#include <boost/json/string_view.hpp>
#include <cmath>
#include <map>
#include <vector>

#include "src/admin/stats_render.h"

namespace sluice {
namespace {

void append_string(std::string& out, const std::string& s) {
  out += boost::json::serialize(boost::json::string_view(s));
}

// Three decimals are a microsecond for the ms series and more than a rate or a gradient needs;
// rounding in double keeps float noise (0.1f is 0.100000001) out of the output.
void append_number(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  out += format_number(std::round(static_cast<double>(v) * 1000.0) / 1000.0);
}

bool all_unknown(const std::vector<float>& values) {
  for (float v : values) {
    if (std::isfinite(v)) return false;
  }
  return true;
}

// `"name":[...]`, preceded by a comma unless it is the first member written (`first`); a series
// with no value in the range is left out: the reader takes a missing series as all null.
void append_series(std::string& out, bool& first, const char* name,
                   const std::vector<float>& values) {
  if (all_unknown(values)) return;
  if (!first) out += ',';
  first = false;
  out += '"';
  out += name;
  out += "\":[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    append_number(out, values[i]);
  }
  out += ']';
}

// One filter's columns over the range, filled in sample by sample.
struct FilterColumns {
  const HistoryFilterKey* key;
  std::vector<std::vector<float>> series;                // kHistoryFilterSeries order
  std::vector<std::vector<std::vector<float>>> classes;  // [class][kHistoryClassSeries]
};

struct ListenerColumns {
  const std::string* listener;
  std::vector<std::vector<float>> reasons;  // kHistoryEndReasons order
  std::vector<float> p50;
  std::vector<float> p99;
};

// A queue's or a consumer's columns: its named series (kHistoryQueueSeries or
// kHistoryConsumerSeries order) and, for a queue, its outcomes (kQueueOutcomes order).
struct NamedColumns {
  const std::string* name;
  std::vector<std::vector<float>> series;
  std::vector<std::vector<float>> outcomes;
};

// The samples' points as columns: one series per filter and listener, each n values long
// (NaN where a sample did not know the filter).
struct Columns {
  std::vector<FilterColumns> filters;
  std::vector<ListenerColumns> listeners;
  std::vector<NamedColumns> queues;
  std::vector<NamedColumns> consumers;
};

// The column set of `name` in `out` (made on first sight, all NaN).
NamedColumns& named(std::vector<NamedColumns>& out,
                    std::map<const std::string*, std::size_t>& index, const std::string* name,
                    std::size_t series, std::size_t outcomes, const std::vector<float>& empty) {
  auto [it, fresh] = index.try_emplace(name, out.size());
  if (fresh) {
    out.push_back({name, std::vector<std::vector<float>>(series, empty),
                   std::vector<std::vector<float>>(outcomes, empty)});
  }
  return out[it->second];
}

Columns transpose(const std::vector<const HistorySample*>& range) {
  const std::size_t n = range.size();
  const std::vector<float> empty(n, kNoValue);
  Columns out;
  std::map<const HistoryFilterKey*, std::size_t> filter_index;
  std::map<const std::string*, std::size_t> listener_index;
  std::map<const std::string*, std::size_t> queue_index;
  std::map<const std::string*, std::size_t> consumer_index;
  for (std::size_t i = 0; i < n; ++i) {
    for (const HistoryFilterPoint& p : range[i]->filters) {
      auto [it, fresh] = filter_index.try_emplace(p.key.get(), out.filters.size());
      if (fresh) {
        out.filters.push_back(
            {p.key.get(), std::vector<std::vector<float>>(kHistoryFilterSeries.size(), empty),
             std::vector<std::vector<std::vector<float>>>(
                 kCriticalityCount,
                 std::vector<std::vector<float>>(kHistoryClassSeries.size(), empty))});
      }
      FilterColumns& f = out.filters[it->second];
      for (std::size_t s = 0; s < kHistoryFilterSeries.size(); ++s) {
        f.series[s][i] = p.*kHistoryFilterSeries[s].member;
      }
      for (std::size_t c = 0; c < kCriticalityCount; ++c) {
        for (std::size_t s = 0; s < kHistoryClassSeries.size(); ++s) {
          f.classes[c][s][i] = p.classes[c].*kHistoryClassSeries[s].member;
        }
      }
    }
    for (const HistoryListenerPoint& p : range[i]->listeners) {
      auto [it, fresh] = listener_index.try_emplace(p.listener.get(), out.listeners.size());
      if (fresh) {
        out.listeners.push_back({p.listener.get(),
                                 std::vector<std::vector<float>>(kEndReasonCount, empty), empty,
                                 empty});
      }
      ListenerColumns& l = out.listeners[it->second];
      for (std::size_t r = 0; r < kEndReasonCount; ++r) l.reasons[r][i] = p.rq_per_s[r];
      l.p50[i] = p.queue_wait_p50_ms;
      l.p99[i] = p.queue_wait_p99_ms;
    }
    for (const HistoryQueuePoint& p : range[i]->queues) {
      NamedColumns& q = named(out.queues, queue_index, p.queue.get(), kHistoryQueueSeries.size(),
                              kQueueOutcomes.size(), empty);
      for (std::size_t s = 0; s < kHistoryQueueSeries.size(); ++s) {
        q.series[s][i] = p.*kHistoryQueueSeries[s].member;
      }
      for (std::size_t o = 0; o < kQueueOutcomes.size(); ++o) q.outcomes[o][i] = p.rq_per_s[o];
    }
    for (const HistoryConsumerPoint& p : range[i]->consumers) {
      NamedColumns& c = named(out.consumers, consumer_index, p.consumer.get(),
                              kHistoryConsumerSeries.size(), 0, empty);
      for (std::size_t s = 0; s < kHistoryConsumerSeries.size(); ++s) {
        c.series[s][i] = p.*kHistoryConsumerSeries[s].member;
      }
    }
  }
  return out;
}

void append_filter(std::string& out, const FilterColumns& c) {
  out += "{\"listener\":";
  append_string(out, c.key->listener);
  out += ",\"filter\":";
  append_string(out, c.key->filter);
  out += ",\"type\":";
  append_string(out, c.key->type);
  bool first = false;
  for (std::size_t s = 0; s < kHistoryFilterSeries.size(); ++s) {
    append_series(out, first, kHistoryFilterSeries[s].name, c.series[s]);
  }
  out += ",\"classes\":{";
  bool first_class = true;
  for (std::size_t k = 0; k < kCriticalityCount; ++k) {
    std::string members;
    bool first_member = true;
    for (std::size_t s = 0; s < kHistoryClassSeries.size(); ++s) {
      append_series(members, first_member, kHistoryClassSeries[s].name, c.classes[k][s]);
    }
    if (members.empty()) continue;  // a class nothing is known about
    if (!first_class) out += ',';
    first_class = false;
    out += '"';
    out += to_string(kCriticalities[k]);
    out += "\":{" + members + '}';
  }
  out += "}}";
}

void append_listener(std::string& out, const ListenerColumns& c) {
  out += "{\"listener\":";
  append_string(out, *c.listener);
  out += ",\"rq_per_s\":{";
  bool first = true;
  for (std::size_t r = 0; r < kEndReasonCount; ++r) {
    append_series(out, first, kHistoryEndReasons[r], c.reasons[r]);
  }
  out += '}';
  first = false;
  append_series(out, first, "queue_wait_p50_ms", c.p50);
  append_series(out, first, "queue_wait_p99_ms", c.p99);
  out += '}';
}

void append_queue(std::string& out, const NamedColumns& c) {
  out += "{\"queue\":";
  append_string(out, *c.name);
  out += ",\"rq_per_s\":{";
  bool first = true;
  for (std::size_t o = 0; o < kQueueOutcomes.size(); ++o) {
    append_series(out, first, kQueueOutcomes[o], c.outcomes[o]);
  }
  out += '}';
  first = false;
  for (std::size_t s = 0; s < kHistoryQueueSeries.size(); ++s) {
    append_series(out, first, kHistoryQueueSeries[s].name, c.series[s]);
  }
  out += '}';
}

void append_consumer(std::string& out, const NamedColumns& c) {
  out += "{\"consumer\":";
  append_string(out, *c.name);
  bool first = false;
  for (std::size_t s = 0; s < kHistoryConsumerSeries.size(); ++s) {
    append_series(out, first, kHistoryConsumerSeries[s].name, c.series[s]);
  }
  out += '}';
}

}  // namespace

std::string render_history_json(const HistorySampler& history, std::optional<int64_t> since_ms) {
  std::vector<const HistorySample*> range;
  for (const HistorySample& s : history.samples()) {
    if (!since_ms || s.t_ms > *since_ms) range.push_back(&s);
  }
  const Columns columns = transpose(range);

  const HistoryOptions& o = history.options();
  std::string out;
  out += "{\"interval_ms\":" +
         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(o.interval).count());
  out += ",\"capacity\":" + std::to_string(o.samples);
  out += ",\"recent_intervals\":" + std::to_string(o.recent_intervals);
  out += ",\"memory_bytes\":" + std::to_string(history.memory_bytes());
  out += ",\"t\":[";
  for (std::size_t i = 0; i < range.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(range[i]->t_ms);
  }
  out += "],\"filters\":[";
  for (std::size_t f = 0; f < columns.filters.size(); ++f) {
    if (f) out += ',';
    append_filter(out, columns.filters[f]);
  }
  out += "],\"listeners\":[";
  for (std::size_t l = 0; l < columns.listeners.size(); ++l) {
    if (l) out += ',';
    append_listener(out, columns.listeners[l]);
  }
  // Queue mode: empty without queues and consumers.
  out += "],\"queues\":[";
  for (std::size_t q = 0; q < columns.queues.size(); ++q) {
    if (q) out += ',';
    append_queue(out, columns.queues[q]);
  }
  out += "],\"consumers\":[";
  for (std::size_t c = 0; c < columns.consumers.size(); ++c) {
    if (c) out += ',';
    append_consumer(out, columns.consumers[c]);
  }
  out += "]}\n";
  return out;
}

}  // namespace sluice
