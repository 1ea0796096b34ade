// Live state of one limiter filter, as shown by the admin endpoint /limits and the dashboard.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/time.h"

namespace sluice {

// One change of the limit, kept in a small ring per filter.
struct LimitDecision {
  TimePoint at{};
  uint32_t old_limit = 0;
  uint32_t new_limit = 0;
  std::string reason;  // "gradient 0.62 < tolerance 0.85", "p99 41ms > slo 30ms", ...
};

class LimiterSnapshot {
 public:
  std::string listener;  // filled in by the listener that owns the filter
  std::string filter;    // filter name
  std::string type;      // filter type
  uint32_t limit = 0;
  uint32_t in_flight = 0;
  uint32_t queued = 0;
  uint64_t admitted = 0;
  uint64_t shed = 0;
  // Adaptive filters only.
  std::optional<double> rtt_noload_ms;
  std::optional<double> rtt_smoothed_ms;
  std::optional<double> gradient;
  std::optional<double> p99_ms;                 // aimd
  std::vector<LimitDecision> recent_decisions;  // oldest first
};

}  // namespace sluice
