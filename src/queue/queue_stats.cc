#include "src/queue/queue_stats.h"

namespace sluice::queue {

namespace {
StatName queue_stat(const std::string& queue, const std::string& leaf) {
  return StatName{"queue", {{"queue", queue}}, leaf};
}
}  // namespace

QueueStats::QueueStats(StatsRegistry& r, const std::string& q)
    :
#define SLUICE_INIT(name, help) name(r.counter(queue_stat(q, #name), help)),
      SLUICE_QUEUE_FRONTEND_COUNTERS(SLUICE_INIT)
#undef SLUICE_INIT
#define SLUICE_INIT(name, help) name(r.gauge(queue_stat(q, #name), help)),
          SLUICE_QUEUE_FRONTEND_GAUGES(SLUICE_INIT)
#undef SLUICE_INIT
              frontend_rq_time_us(r.histogram(queue_stat(q, "frontend_rq_time_us"),
                                              "Request complete to reply, queue mode", "us")),
      redis_cpu_seconds(r.float_gauge(queue_stat(q, "redis_cpu_seconds"),
                                      "Redis used_cpu_sys + used_cpu_user (INFO cpu), polled")),
      drain_rate(r.float_gauge(queue_stat(q, "drain_rate"),
                               "Entries/s the consumers took while entries waited (0: unknown)")) {
}

}  // namespace sluice::queue
