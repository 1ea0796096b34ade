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

#include "filters/filter.h"              // SLUICE_END_REASONS, kEndReasonCount
#include "src/admin/queue_mode_state.h"  // kQueueOutcomes
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

// One queue (queue mode, frontend side) over one interval: its frontend's outcomes and the
// group's state as its worker 0 last polled it (queue.<q>.*).
struct HistoryQueuePoint {
  std::shared_ptr<const std::string> queue;
  // Calls that ended per second, by kQueueOutcomes (queue.<q>.frontend_rq_<outcome>_total).
  std::array<float, kQueueOutcomes.size()> rq_per_s{};
  float open = kNoValue;
  float backlog = kNoValue;
  float pending = kNoValue;
  float stream_length = kNoValue;
  float consumers = kNoValue;
  float drain_rate = kNoValue;
  float estimated_wait_ms = kNoValue;
  float e2e_p50_ms = kNoValue;  // over the interval; from frontend_rq_time_us
  float e2e_p99_ms = kNoValue;
  float redis_used_memory_bytes = kNoValue;
  float redis_cpu_ratio = kNoValue;  // Redis CPU seconds per second, over the recent window
};

// One consumer (queue mode, pod side) over one interval (consumer.<c>.* and its limiters).
struct HistoryConsumerPoint {
  std::shared_ptr<const std::string> consumer;
  float limit = kNoValue;      // its concurrency window: the smallest limit of its limiters
  float in_flight = kNoValue;  // consumer_rq_active: calls in hand
  float window = kNoValue;     // consumer_window: entries it may read now (free permits)
  float read_per_s = kNoValue;
  float completed_ok_per_s = kNoValue;     // completed with grpc-status 0
  float completed_error_per_s = kNoValue;  // completed with any other status
  float expired_per_s = kNoValue;
  float dead_lettered_per_s = kNoValue;
  float p99_ms = kNoValue;          // its limiter's (aimd's p99 of its last evaluation)
  float rq_time_p99_ms = kNoValue;  // over the interval; from consumer_rq_time_us
};

struct HistorySample {
  int64_t t_ms = 0;  // Unix time in ms; strictly increasing from one sample to the next
  std::vector<HistoryFilterPoint> filters;
  std::vector<HistoryListenerPoint> listeners;
  std::vector<HistoryQueuePoint> queues;        // empty unless queue mode is configured
  std::vector<HistoryConsumerPoint> consumers;  // ditto
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

struct HistoryQueueSeries {
  const char* name;
  float HistoryQueuePoint::*member;
};
inline constexpr std::array<HistoryQueueSeries, 11> kHistoryQueueSeries = {{
    {"open", &HistoryQueuePoint::open},
    {"backlog", &HistoryQueuePoint::backlog},
    {"pending", &HistoryQueuePoint::pending},
    {"stream_length", &HistoryQueuePoint::stream_length},
    {"consumers", &HistoryQueuePoint::consumers},
    {"drain_rate", &HistoryQueuePoint::drain_rate},
    {"estimated_wait_ms", &HistoryQueuePoint::estimated_wait_ms},
    {"e2e_p50_ms", &HistoryQueuePoint::e2e_p50_ms},
    {"e2e_p99_ms", &HistoryQueuePoint::e2e_p99_ms},
    {"redis_used_memory_bytes", &HistoryQueuePoint::redis_used_memory_bytes},
    {"redis_cpu_ratio", &HistoryQueuePoint::redis_cpu_ratio},
}};

struct HistoryConsumerSeries {
  const char* name;
  float HistoryConsumerPoint::*member;
};
inline constexpr std::array<HistoryConsumerSeries, 10> kHistoryConsumerSeries = {{
    {"limit", &HistoryConsumerPoint::limit},
    {"in_flight", &HistoryConsumerPoint::in_flight},
    {"window", &HistoryConsumerPoint::window},
    {"read_per_s", &HistoryConsumerPoint::read_per_s},
    {"completed_ok_per_s", &HistoryConsumerPoint::completed_ok_per_s},
    {"completed_error_per_s", &HistoryConsumerPoint::completed_error_per_s},
    {"expired_per_s", &HistoryConsumerPoint::expired_per_s},
    {"dead_lettered_per_s", &HistoryConsumerPoint::dead_lettered_per_s},
    {"p99_ms", &HistoryConsumerPoint::p99_ms},
    {"rq_time_p99_ms", &HistoryConsumerPoint::rq_time_p99_ms},
}};

// "completed", "shed", ... in EndReason order.
inline constexpr std::array<const char*, kEndReasonCount> kHistoryEndReasons = {
#define SLUICE_NAME(e, name, help) name,
    SLUICE_END_REASONS(SLUICE_NAME)
#undef SLUICE_NAME
};

}  // namespace sluice
