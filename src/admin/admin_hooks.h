// What the admin server needs from the running proxy. The proxy implements it; tests fake it.
// Every method is called on the admin thread while workers run, so implementations must be
// thread-safe and quick (no blocking on a worker).
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "src/core/time.h"

namespace sluice {

// Static facts about the process, shown by /server_info.
struct ServerInfo {
  std::string version;
  TimePoint started;  // steady clock, for uptime
  std::chrono::system_clock::time_point started_wall;
  uint32_t workers = 0;
  std::string config_path;
};

class AdminHooks {
 public:
  virtual ~AdminHooks() = default;
  // True once a drain has started (POST /drain or a signal); /ready then answers 503.
  virtual bool draining() const = 0;
  // POST /drain: stop accepting, send GOAWAY, keep serving in-flight streams and keep running.
  // Must return at once; the drain proceeds on the workers.
  virtual void start_drain() = 0;
  // Live state of every limiter filter (filters/limiter_snapshot.h), for /limits.
  virtual std::vector<LimiterSnapshot> limits() const = 0;
  // The effective configuration with defaults filled in, for /config_dump.
  virtual boost::json::value config_dump() const = 0;
  virtual ServerInfo server_info() const = 0;
};

}  // namespace sluice
