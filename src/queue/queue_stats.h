// Stats of one queue as its frontends see it, shared by all workers (queue.<name>.<leaf>).
// Names are an API (README "Stats"). The polled gauges are set by worker 0's frontend only
// (Gauge::set from two threads could interleave).
#pragma once

#include <string>

#include "src/stats/stats_registry.h"

namespace sluice::queue {

#define SLUICE_QUEUE_FRONTEND_COUNTERS(X)                                                       \
  X(frontend_rq_ok_total, "Calls answered with a consumer's reply (any grpc-status)")           \
  X(frontend_rq_backpressure_total,                                                             \
    "Calls refused before XADD: backlog at max_pending, or estimated wait beyond the deadline") \
  X(frontend_rq_backpressure_wait_total,                                                        \
    "Calls refused before XADD because the estimated wait exceeded their remaining deadline")   \
  X(frontend_rq_enqueue_failed_total, "Calls whose XADD failed (Redis down or erroring)")       \
  X(frontend_rq_timeout_total, "Calls that ended at their deadline waiting for a reply")        \
  X(frontend_rq_result_error_total, "Calls failed by the reply path (Redis restart, lost)")     \
  X(frontend_rq_unimplemented_total, "Streaming calls refused (queue mode is unary only)")      \
  X(frontend_rq_too_large_total, "Calls refused: request body above the queue's limit")         \
  X(frontend_rq_cancelled_total, "Calls the client cancelled while queued")                     \
  X(frontend_reply_decode_error_total,                                                          \
    "Replies that were not a QueueReply: dropped (their call ends at its deadline)")

#define SLUICE_QUEUE_FRONTEND_GAUGES(X)                                              \
  X(frontend_rq_open, "Calls enqueued (or enqueueing) and waiting for a reply")      \
  X(backlog, "Entries waiting in the stream undelivered (the group's lag), polled")  \
  X(pending, "Entries delivered to consumers, not yet acknowledged (XINFO GROUPS)")  \
  X(stream_length, "Entries in the stream (XLEN), polled with the backlog")          \
  X(consumers, "Consumers the group knows (XINFO GROUPS; dead ones until deleted)")  \
  X(redis_used_memory_bytes, "Redis used_memory (INFO memory), polled every second") \
  X(estimated_wait_ms,                                                               \
    "Wait of an entry enqueued now until delivery (0: no backlog or no estimate)")

struct QueueStats {
  QueueStats(StatsRegistry& registry, const std::string& queue);

#define SLUICE_DECLARE(name, help) Counter& name;
  SLUICE_QUEUE_FRONTEND_COUNTERS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
#define SLUICE_DECLARE(name, help) Gauge& name;
  SLUICE_QUEUE_FRONTEND_GAUGES(SLUICE_DECLARE)
#undef SLUICE_DECLARE
  Histogram& frontend_rq_time_us;  // request complete -> reply handed to the stream
  FloatGauge& redis_cpu_seconds;   // used_cpu_sys + used_cpu_user (INFO cpu), polled
  FloatGauge& drain_rate;          // entries/s consumers took while saturated (WaitEstimator)
};

}  // namespace sluice::queue
