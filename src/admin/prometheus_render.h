// Renders a registry snapshot in the Prometheus text exposition format 0.0.4 for
// /stats/prometheus.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "src/stats/stats_registry.h"

namespace sluice {

// Families are grouped by metric name (stats that differ only in labels share one # HELP/# TYPE),
// counters end in "_total", and histograms become real Prometheus histograms with fixed `le`
// boundaries. Histograms whose unit is "us" are exported in seconds (name ends in "_seconds").
std::string render_prometheus(const std::vector<StatValue>& stats);

// The fixed `le` boundaries, in the histogram's own unit: for "us" histograms 50us..10s, for
// any other unit a 1-2-5 series. A boundary counts whole fine buckets whose upper bound is <= it
// (HistogramSnapshot::count_at_most), so each is exact to the histogram's 1/16 precision.
std::span<const uint64_t> prometheus_bounds(const std::string& unit);

}  // namespace sluice
