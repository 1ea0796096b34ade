// Live state of one limiter filter, as shown by the admin endpoint /limits and the dashboard.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/criticality.h"
#include "src/core/time.h"

namespace sluice {

// One change of the limit, kept in a small ring per filter.
struct LimitDecision {
  TimePoint at{};
  uint32_t old_limit = 0;
  uint32_t new_limit = 0;
  std::string reason;  // "gradient 0.62 < tolerance 0.85", "p99 41ms > slo 30ms", ...
};

// One method's no-load latency as an adaptive limiter judges that method's samples against it.
struct MethodBaseline {
  std::string method;  // :path
  double rtt_noload_ms = 0;
  uint64_t samples = 0;  // clean samples it rests on, in the window
};

// One traffic class at one filter.
struct ClassSnapshot {
  uint64_t admitted = 0;
  uint64_t shed = 0;
  uint32_t queued = 0;
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
  std::optional<double> p99_ms;  // aimd
  // Share of the last decision's samples slower than their method's no-load median (0.5 with no
  // queueing; near 1 under a standing queue). Adaptive filters.
  std::optional<double> queueing;
  std::optional<double> tolerated_slowdown;  // rtt_gradient: see LimiterState
  // Times the limit went down at a control decision since the filter was made (adaptive
  // filters; limit_decrease_total).
  uint64_t queue_cuts = 0;
  // The queue estimator's last judged cohort (adaptive filters; see QueueEstimator): calls
  // waiting in front of the upstream's workers, calls being served, and the mean queueing delay.
  std::optional<double> queue_calls;
  std::optional<double> service_calls;
  std::optional<double> queue_delay_ms;
  std::vector<MethodBaseline> baselines;        // adaptive filters, one per method seen recently
  std::vector<LimitDecision> recent_decisions;  // oldest first
  // Per criticality, indexed by index_of(Criticality) (least critical first).
  std::array<ClassSnapshot, kCriticalityCount> classes{};
};

}  // namespace sluice
