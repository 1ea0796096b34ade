#include "src/proxy/listener_stats.h"

namespace sluice {

namespace {
StatName name_of(const std::string& listener, const char* leaf) {
  return StatName{"listener", {{"listener", listener}}, leaf};
}
}  // namespace

ListenerStats::ListenerStats(StatsRegistry& r, const std::string& l)
    :
#define SLUICE_INIT(name, help) name(r.counter(name_of(l, #name), help)),
      SLUICE_LISTENER_COUNTERS(SLUICE_INIT)
#undef SLUICE_INIT
#define SLUICE_INIT(name, help) name(r.gauge(name_of(l, #name), help)),
          SLUICE_LISTENER_GAUGES(SLUICE_INIT)
#undef SLUICE_INIT
              downstream_rq_time_us(r.histogram(name_of(l, "downstream_rq_time_us"),
                                                "Request duration, headers complete to stream end",
                                                "us")),
      downstream_rq_queue_wait_us(r.histogram(name_of(l, "downstream_rq_queue_wait_us"),
                                              "Queue wait (x-sluice-queue-us) of every request",
                                              "us")) {
  for (std::size_t i = 0; i < rq_by_reason.size(); ++i) {
    const auto reason = static_cast<EndReason>(i);
    const std::string leaf = std::string("downstream_rq_") + to_string(reason) + "_total";
    rq_by_reason[i] = &r.counter(name_of(l, leaf.c_str()),
                                 std::string("Requests that ended: ") + describe(reason));
  }
}

}  // namespace sluice
