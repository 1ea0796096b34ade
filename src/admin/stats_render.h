// Renders a registry snapshot for /stats: the text form (one "name: value" a line) and JSON.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <vector>

#include "src/stats/stats_registry.h"

namespace sluice {

// Text: counters and gauges as "name: value"; histograms as
// "name: P50=.. P90=.. P99=.. P99.9=.. max=.. count=.." in their recorded unit.
std::string render_stats_text(const std::vector<StatValue>& stats);

// JSON: {"stats": [{"name", "kind", "labels", "leaf", "type", "help", "value"} ...]}; histograms
// carry "unit", "count", "sum", "max", "p50", "p90", "p99", "p999" instead of "value".
boost::json::value render_stats_json(const std::vector<StatValue>& stats);

// Shortest text that reads back as the same double; integers print without a decimal point.
// Non-finite values print as NaN, +Inf, -Inf (the Prometheus spelling).
std::string format_number(double v);

const char* stat_type_name(StatType type);

}  // namespace sluice
