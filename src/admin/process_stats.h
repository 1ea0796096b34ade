// Process-wide gauges (memory, uptime, threads) computed when /stats is read.
#pragma once

#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// Registers server.memory_rss_bytes (from /proc/self/statm), server.uptime_seconds (steady time
// since `started`) and server.threads (from /proc/self/stat). Values read as 0 where /proc is
// unavailable.
void register_process_stats(StatsRegistry& registry, TimePoint started);

// The parsers behind those gauges, exposed for tests: resident set size in bytes from the text
// of /proc/self/statm, and the thread count from the text of /proc/self/stat; 0 when malformed.
double rss_bytes_from_statm(const std::string& statm, long page_size);
double threads_from_stat(const std::string& stat);

}  // namespace sluice
