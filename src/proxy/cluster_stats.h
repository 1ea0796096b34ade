// Stats of one upstream cluster, shared by all workers (cluster.<name>.<leaf>).
#pragma once

#include <array>
#include <string>

#include "src/stats/stats_registry.h"

namespace sluice {

#define SLUICE_CLUSTER_COUNTERS(X)                                                             \
  X(upstream_cx_total, "Upstream connections opened")                                          \
  X(upstream_cx_connect_fail_total, "Upstream connection attempts that failed")                \
  X(upstream_cx_connect_timeout_total, "Upstream connection attempts that timed out")          \
  X(upstream_cx_goaway_total, "GOAWAY frames received from the upstream")                      \
  X(upstream_cx_tls_error_total, "Upstream TLS handshakes that failed or lacked h2")           \
  X(upstream_cx_protocol_error_total, "Upstream connections closed for a protocol error")      \
  X(upstream_cx_keepalive_ping_total, "Keepalive PINGs sent to the upstream")                  \
  X(upstream_cx_keepalive_timeout_total, "Upstream connections dead: no answer to a PING")     \
  X(upstream_cx_retired_total, "Upstream connections retired (request cap, stream ids)")       \
  X(upstream_cx_drain_total, "Upstream connections drained: address gone or settings changed") \
  X(upstream_rq_total, "Requests sent upstream")                                               \
  X(upstream_rq_unavailable_total, "Requests that found no usable upstream connection")        \
  X(upstream_rq_panic_total, "Requests routed while no address was healthy (panic routing)")   \
  X(upstream_rq_reset_total, "Streams the upstream reset")                                     \
  X(upstream_rq_cancelled_total, "Streams sluice reset (client reset, deadline, drain)")       \
  X(upstream_rq_retry_total, "Requests sent again: the upstream never saw them")               \
  X(upstream_rq_retry_refused_total, "Unseen requests not sent again (REFUSED_STREAM)")        \
  X(upstream_rq_max_duration_reached_total, "Calls ended by max_stream_duration")              \
  X(upstream_bytes_rx_total, "Bytes read from upstream sockets")                               \
  X(upstream_bytes_tx_total, "Bytes written to upstream sockets")                              \
  X(dns_resolve_total, "Resolutions of endpoint names")                                        \
  X(dns_resolve_failed_total, "Resolutions of endpoint names that failed")                     \
  X(endpoints_added_total, "Addresses that joined the cluster (resolved, reloaded)")           \
  X(endpoints_removed_total, "Addresses that left the cluster (vanished, reloaded)")           \
  X(health_check_success_total, "Health checks answered SERVING")                              \
  X(health_check_failure_total, "Health checks that failed (not SERVING, error, timeout)")

#define SLUICE_CLUSTER_GAUGES(X)                                                \
  X(upstream_cx_active, "Open upstream connections")                            \
  X(upstream_rq_active, "Requests in flight upstream")                          \
  X(endpoints, "Addresses the cluster has now")                                 \
  X(endpoints_healthy, "Addresses that get calls (all, without health checks)") \
  X(endpoints_unhealthy, "Addresses held unhealthy or not checked yet")

struct ClusterStats {
  ClusterStats(StatsRegistry& registry, const std::string& cluster);

#define SLUICE_DECLARE(name, help) Counter& name;
  SLUICE_CLUSTER_COUNTERS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
#define SLUICE_DECLARE(name, help) Gauge& name;
  SLUICE_CLUSTER_GAUGES(SLUICE_DECLARE)
#undef SLUICE_DECLARE
  // upstream_rq_grpc_status_<0..16>_total; index 17 counts responses without a valid status.
  std::array<Counter*, 18> rq_by_grpc_status{};
  Histogram& upstream_rq_time_us;  // admission -> upstream stream closed
  Histogram& upstream_rtt_us;      // admission -> response headers (the RTT sample)

  void count_grpc_status(int status) {
    const std::size_t i = status >= 0 && status <= 16 ? static_cast<std::size_t>(status) : 17;
    rq_by_grpc_status[i]->inc();
  }
};

}  // namespace sluice
