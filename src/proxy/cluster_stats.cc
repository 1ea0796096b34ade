#include "src/proxy/cluster_stats.h"

namespace sluice {

namespace {
StatName name_of(const std::string& cluster, const std::string& leaf) {
  return StatName{"cluster", {{"cluster", cluster}}, leaf};
}
}  // namespace

ClusterStats::ClusterStats(StatsRegistry& r, const std::string& c)
    :
#define SLUICE_INIT(name, help) name(r.counter(name_of(c, #name), help)),
      SLUICE_CLUSTER_COUNTERS(SLUICE_INIT)
#undef SLUICE_INIT
#define SLUICE_INIT(name, help) name(r.gauge(name_of(c, #name), help)),
          SLUICE_CLUSTER_GAUGES(SLUICE_INIT)
#undef SLUICE_INIT
              upstream_rq_time_us(r.histogram(name_of(c, "upstream_rq_time_us"),
                                              "Upstream request time, admission to stream end",
                                              "us")),
      upstream_rtt_us(r.histogram(name_of(c, "upstream_rtt_us"),
                                  "Admission to upstream response headers", "us")) {
  for (std::size_t i = 0; i < rq_by_grpc_status.size(); ++i) {
    const std::string leaf = i <= 16 ? "upstream_rq_grpc_status_" + std::to_string(i) + "_total"
                                     : std::string("upstream_rq_grpc_status_invalid_total");
    rq_by_grpc_status[i] = &r.counter(
        name_of(c, leaf), i <= 16 ? "Upstream responses with grpc-status " + std::to_string(i)
                                  : std::string("Upstream responses without a valid grpc-status"));
  }
}

}  // namespace sluice
