// Owns every stat of the process. Stats are created at startup (config load, listener and
// filter construction) and live as long as the registry; the returned references are stable.
// Creation takes a lock; recording through the returned objects never does.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "src/stats/counter.h"
#include "src/stats/gauge.h"
#include "src/stats/histogram.h"
#include "src/stats/stat_name.h"

namespace sluice {

enum class StatType { Counter, Gauge, FloatGauge, Histogram, GaugeFn };

// One stat as read at a moment, for the admin endpoints.
struct StatValue {
  StatName name;
  std::string help;
  StatType type;
  std::string unit;             // "us", "bytes", "" ...; informational
  double number = 0;            // counters and gauges
  HistogramSnapshot histogram;  // histograms only
};

class StatsRegistry {
 public:
  // Registering the same name twice returns the existing stat (and the type must match,
  // otherwise std::logic_error).
  Counter& counter(const StatName& name, std::string help);
  Gauge& gauge(const StatName& name, std::string help);
  FloatGauge& float_gauge(const StatName& name, std::string help);
  Histogram& histogram(const StatName& name, std::string help, std::string unit);
  // A gauge computed when read (process RSS, uptime). `fn` must be thread-safe. Registering the
  // name again replaces the function: a filter rebuilt by a reload under an old name (a new
  // type) shows its own state, not its predecessor's.
  void gauge_fn(const StatName& name, std::string help, std::function<double()> fn);

  // Every stat, sorted by dotted name.
  std::vector<StatValue> snapshot() const;

 private:
  struct Entry {
    StatName name;
    std::string help;
    StatType type;
    std::string unit;
    std::variant<std::unique_ptr<Counter>, std::unique_ptr<Gauge>, std::unique_ptr<FloatGauge>,
                 std::unique_ptr<Histogram>, std::function<double()>>
        stat;
  };
  Entry* find(const std::string& dotted);

  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;  // keyed by dotted name
};

}  // namespace sluice
