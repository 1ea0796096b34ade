#include "src/stats/stats_registry.h"

#include <stdexcept>

namespace sluice {
namespace {

const char* type_name(StatType type) {
  switch (type) {
    case StatType::Counter:
      return "counter";
    case StatType::Gauge:
      return "gauge";
    case StatType::FloatGauge:
      return "float gauge";
    case StatType::Histogram:
      return "histogram";
    case StatType::GaugeFn:
      return "computed gauge";
  }
  return "unknown";
}

}  // namespace

StatsRegistry::Entry* StatsRegistry::find(const std::string& dotted) {
  auto it = entries_.find(dotted);
  return it == entries_.end() ? nullptr : &it->second;
}

namespace {

// Returns the existing entry's stat when the type matches; a mismatch is a programming error
// (two components disagree about what a stat name means), caught at startup.
template <typename T, typename Entry>
T* existing(Entry* entry, StatType want, const std::string& dotted) {
  if (entry == nullptr) return nullptr;
  if (entry->type != want) {
    throw std::logic_error("stat '" + dotted + "' registered as " + type_name(entry->type) +
                           ", requested as " + type_name(want));
  }
  return std::get<std::unique_ptr<T>>(entry->stat).get();
}

}  // namespace

Counter& StatsRegistry::counter(const StatName& name, std::string help) {
  const std::string dotted = name.dotted();
  std::lock_guard lock(mu_);
  if (auto* c = existing<Counter>(find(dotted), StatType::Counter, dotted)) return *c;
  auto stat = std::make_unique<Counter>();
  Counter& ref = *stat;
  entries_.emplace(dotted, Entry{name, std::move(help), StatType::Counter, "", std::move(stat)});
  return ref;
}

Gauge& StatsRegistry::gauge(const StatName& name, std::string help) {
  const std::string dotted = name.dotted();
  std::lock_guard lock(mu_);
  if (auto* g = existing<Gauge>(find(dotted), StatType::Gauge, dotted)) return *g;
  auto stat = std::make_unique<Gauge>();
  Gauge& ref = *stat;
  entries_.emplace(dotted, Entry{name, std::move(help), StatType::Gauge, "", std::move(stat)});
  return ref;
}

FloatGauge& StatsRegistry::float_gauge(const StatName& name, std::string help) {
  const std::string dotted = name.dotted();
  std::lock_guard lock(mu_);
  if (auto* g = existing<FloatGauge>(find(dotted), StatType::FloatGauge, dotted)) return *g;
  auto stat = std::make_unique<FloatGauge>();
  FloatGauge& ref = *stat;
  entries_.emplace(dotted, Entry{name, std::move(help), StatType::FloatGauge, "", std::move(stat)});
  return ref;
}

Histogram& StatsRegistry::histogram(const StatName& name, std::string help, std::string unit) {
  const std::string dotted = name.dotted();
  std::lock_guard lock(mu_);
  if (auto* h = existing<Histogram>(find(dotted), StatType::Histogram, dotted)) return *h;
  auto stat = std::make_unique<Histogram>();
  Histogram& ref = *stat;
  entries_.emplace(
      dotted, Entry{name, std::move(help), StatType::Histogram, std::move(unit), std::move(stat)});
  return ref;
}

void StatsRegistry::gauge_fn(const StatName& name, std::string help, std::function<double()> fn) {
  const std::string dotted = name.dotted();
  std::lock_guard lock(mu_);
  if (Entry* entry = find(dotted)) {
    if (entry->type != StatType::GaugeFn) {
      throw std::logic_error("stat '" + dotted + "' registered as " + type_name(entry->type) +
                             ", requested as " + type_name(StatType::GaugeFn));
    }
    // The stat stays (same name, same kind); what it reads is the newest registration's.
    std::get<std::function<double()>>(entry->stat) = std::move(fn);
    return;
  }
  entries_.emplace(dotted, Entry{name, std::move(help), StatType::GaugeFn, "", std::move(fn)});
}

std::vector<StatValue> StatsRegistry::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<StatValue> out;
  out.reserve(entries_.size());
  for (const auto& [dotted, entry] : entries_) {
    StatValue v{entry.name, entry.help, entry.type, entry.unit, 0, {}};
    switch (entry.type) {
      case StatType::Counter:
        v.number = static_cast<double>(std::get<std::unique_ptr<Counter>>(entry.stat)->value());
        break;
      case StatType::Gauge:
        v.number = static_cast<double>(std::get<std::unique_ptr<Gauge>>(entry.stat)->value());
        break;
      case StatType::FloatGauge:
        v.number = std::get<std::unique_ptr<FloatGauge>>(entry.stat)->value();
        break;
      case StatType::Histogram:
        v.histogram = std::get<std::unique_ptr<Histogram>>(entry.stat)->snapshot();
        v.number = static_cast<double>(v.histogram.count);
        break;
      case StatType::GaugeFn:
        v.number = std::get<std::function<double()>>(entry.stat)();
        break;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace sluice
