// One second of the admin history (/history, the dashboard's charts): per filter and per
// listener, the values and rates of one sampling interval. Floats with NaN for "unknown" keep a
// sample small (see HistorySampler for what the history costs).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "filters/filter.h"  // SLUICE_END_REASONS, kEndReasonCount
#include "src/core/criticality.h"

namespace sluice {

inline constexpr float kNoValue = std::numeric_limits<float>::quiet_NaN();

// The filter a point belongs to; shared by every sample that has a point for it, and freed with
// the last of them.
struct HistoryFilterKey {
  std::string listener;
  std::string filter;
  std::string type;  // "" when neither /limits nor the config names it
};

// One traffic class at one filter over one interval.
struct HistoryClassPoint {
  float admitted_per_s = kNoValue;
  float shed_per_s = kNoValue;
  float queued = kNoValue;
  float queue_wait_p99_ms = kNoValue;  // over the interval; from class_queue_wait_us
};

struct HistoryFilterPoint {
  std::shared_ptr<const HistoryFilterKey> key;
  float limit = kNoValue;
  float in_flight = kNoValue;
  float queued = kNoValue;
  float admitted_per_s = kNoValue;
  float shed_per_s = kNoValue;
  float rtt_noload_ms = kNoValue;
  float rtt_smoothed_ms = kNoValue;
  float gradient = kNoValue;
  float p99_ms = kNoValue;
  float queueing = kNoValue;
  float queue_wait_p99_ms = kNoValue;  // over the interval; from queue_wait_us
  std::array<HistoryClassPoint, kCriticalityCount> classes{};  // by index_of(Criticality)
};

struct HistoryListenerPoint {
  std::shared_ptr<const std::string> listener;
  // Requests that ended per second, by EndReason (downstream_rq_<reason>_total).
  std::array<float, kEndReasonCount> rq_per_s{};
  float queue_wait_p50_ms = kNoValue;  // over the interval; from downstream_rq_queue_wait_us
  float queue_wait_p99_ms = kNoValue;
};

struct HistorySample {
  int64_t t_ms = 0;  // Unix time in ms; strictly increasing from one sample to the next
  std::vector<HistoryFilterPoint> filters;
  std::vector<HistoryListenerPoint> listeners;
};

// The names of the series, as /history spells them, with the member that holds each.
struct HistoryFilterSeries {
  const char* name;
  float HistoryFilterPoint::*member;
};
inline constexpr std::array<HistoryFilterSeries, 11> kHistoryFilterSeries = {{
    {"limit", &HistoryFilterPoint::limit},
    {"in_flight", &HistoryFilterPoint::in_flight},
    {"queued", &HistoryFilterPoint::queued},
    {"admitted_per_s", &HistoryFilterPoint::admitted_per_s},
    {"shed_per_s", &HistoryFilterPoint::shed_per_s},
    {"rtt_noload_ms", &HistoryFilterPoint::rtt_noload_ms},
    {"rtt_smoothed_ms", &HistoryFilterPoint::rtt_smoothed_ms},
    {"gradient", &HistoryFilterPoint::gradient},
    {"p99_ms", &HistoryFilterPoint::p99_ms},
    {"queueing", &HistoryFilterPoint::queueing},
    {"queue_wait_p99_ms", &HistoryFilterPoint::queue_wait_p99_ms},
}};

struct HistoryClassSeries {
  const char* name;
  float HistoryClassPoint::*member;
};
inline constexpr std::array<HistoryClassSeries, 4> kHistoryClassSeries = {{
    {"admitted_per_s", &HistoryClassPoint::admitted_per_s},
    {"shed_per_s", &HistoryClassPoint::shed_per_s},
    {"queued", &HistoryClassPoint::queued},
    {"queue_wait_p99_ms", &HistoryClassPoint::queue_wait_p99_ms},
}};

// "completed", "shed", ... in EndReason order.
inline constexpr std::array<const char*, kEndReasonCount> kHistoryEndReasons = {
#define SLUICE_NAME(e, name, help) name,
    SLUICE_END_REASONS(SLUICE_NAME)
#undef SLUICE_NAME
};

}  // namespace sluice
