// Stats of one listener, shared by all workers. Names (listener.<name>.<leaf>) are an API:
// listed in README "Stats".
#pragma once

#include <array>
#include <string>

#include "filters/filter.h"
#include "src/stats/stats_registry.h"

namespace sluice {

#define SLUICE_LISTENER_COUNTERS(X)                                                              \
  X(downstream_cx_total, "Downstream connections accepted")                                      \
  X(downstream_cx_protocol_error_total, "Downstream connections closed for a protocol error")    \
  X(downstream_cx_refused_total, "Downstream connections refused (connection cap, draining)")    \
  X(downstream_cx_accept_error_total, "Accepts that failed for lack of descriptors (EMFILE...)") \
  X(downstream_rq_total, "Requests received (request headers complete)")                         \
  X(downstream_rq_criticality_invalid_total, "Requests whose criticality header was invalid")    \
  X(downstream_rq_headers_too_large_total, "Requests rejected for oversized headers")            \
  X(downstream_bytes_rx_total, "Bytes read from downstream sockets")                             \
  X(downstream_bytes_tx_total, "Bytes written to downstream sockets")                            \
  X(downstream_rst_rx_total, "RST_STREAM frames received from clients")                          \
  X(downstream_rst_tx_total, "RST_STREAM frames sent to clients")                                \
  X(downstream_cx_tls_error_total, "TLS handshakes that failed or did not negotiate h2")         \
  X(downstream_cx_handshake_timeout_total, "Connections closed: handshake/preface timeout")      \
  X(downstream_cx_headers_timeout_total, "Connections closed: request headers timeout")          \
  X(downstream_cx_write_timeout_total, "Connections closed: the client stopped reading")         \
  X(downstream_cx_idle_timeout_total, "Connections closed: idle timeout")                        \
  X(downstream_cx_max_age_total, "Connections drained: max_connection_age reached")              \
  X(downstream_cx_premature_reset_total, "Connections closed: mostly premature resets")          \
  X(downstream_rq_write_timeout_total, "Streams reset: client window closed too long")           \
  X(downstream_cx_streams_full_total, "Streams taking a connection's last slot (clients queue)")

#define SLUICE_LISTENER_GAUGES(X)                        \
  X(downstream_cx_active, "Open downstream connections") \
  X(downstream_rq_active, "Requests in progress")

struct ListenerStats {
  ListenerStats(StatsRegistry& registry, const std::string& listener);

#define SLUICE_DECLARE(name, help) Counter& name;
  SLUICE_LISTENER_COUNTERS(SLUICE_DECLARE)
#undef SLUICE_DECLARE
#define SLUICE_DECLARE(name, help) Gauge& name;
  SLUICE_LISTENER_GAUGES(SLUICE_DECLARE)
#undef SLUICE_DECLARE
  // downstream_rq_<reason>_total, one per EndReason (completed, shed, client_reset, ...).
  std::array<Counter*, kEndReasonCount> rq_by_reason{};
  Histogram& downstream_rq_time_us;        // headers complete -> stream closed
  Histogram& downstream_rq_queue_wait_us;  // the x-sluice-queue-us values sent

  Counter& by_reason(EndReason r) { return *rq_by_reason[static_cast<std::size_t>(r)]; }
};

}  // namespace sluice
