// One address of a cluster as one worker's pool tracks it: its active health verdict, passive
// failure backoff and the stream limit its connections advertise. Shared with the connections
// made to it, so a connection that outlives its endpoint's place in the pool (the address
// vanished, or the cluster's settings changed) still has what it reports to.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "src/core/time.h"

namespace sluice {

struct UpstreamEndpoint {
  boost::asio::ip::tcp::endpoint address;
  std::string host;     // as configured (TLS server name, :authority)
  std::string label;    // "10.0.0.7:50051", for messages
  bool healthy = true;  // the cluster's active health check verdict
  // Out of the pool (vanished, removed, superseded by new settings): no new streams; its
  // connections drain.
  bool retired = false;
  // Passive: connection attempts that failed in a row, and the backoff they earned.
  uint32_t consecutive_failures = 0;
  TimePoint retry_at{};  // no new connection attempt before this
  std::string last_error;
  // The peer's SETTINGS_MAX_CONCURRENT_STREAMS as last seen (none before its first SETTINGS).
  std::optional<std::size_t> stream_limit;
};

}  // namespace sluice
