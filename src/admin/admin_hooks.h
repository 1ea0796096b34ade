// What the admin server needs from the running proxy. The proxy implements it; tests fake it.
// Every method is called on the admin thread while workers run, so implementations must be
// thread-safe and quick (no blocking on a worker).
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "src/core/time.h"

namespace sluice {

// The outcome of one reload of the configuration file (SIGHUP, POST /config/reload, a watch).
struct ReloadResult {
  bool ok = false;
  // Refused because a setting that cannot change live changed (error says which); otherwise a
  // failed reload is an invalid file.
  bool needs_restart = false;
  std::string trigger;  // "SIGHUP", "admin", "watch"
  std::chrono::system_clock::time_point at;
  std::string version;  // the version running afterwards (unchanged when not ok)
  std::string error;    // not ok: the ConfigError text (file:line:col: at PATH: ...) or refusal
  std::vector<std::string> changes;  // ok: what was applied; empty when nothing changed
};

// Which configuration runs, shown by /server_info.
struct ConfigStatus {
  std::string version;  // config_version() of the file as loaded
  std::chrono::system_clock::time_point loaded_at;
  std::optional<ReloadResult> last_reload;  // none before the first reload
};

// Facts about the process, shown by /server_info.
struct ServerInfo {
  std::string version;
  TimePoint started;  // steady clock, for uptime
  std::chrono::system_clock::time_point started_wall;
  uint32_t workers = 0;
  std::string config_path;
  // Bound port by listener name (the ephemeral one for port 0), as of the last reload.
  std::map<std::string, uint16_t> listeners;
  ConfigStatus config;
};

class AdminHooks {
 public:
  virtual ~AdminHooks() = default;
  // True once a drain has started (POST /drain or a signal); /ready then answers 503.
  virtual bool draining() const = 0;
  // Why traffic should not be sent here although sluice runs, one line each, e.g.
  // "NO_HEALTHY_UPSTREAM cluster app (listener ingress): 0 of 2 addresses healthy: ...";
  // /ready answers 503 while there is any.
  virtual std::vector<std::string> unready_reasons() const = 0;
  // POST /drain: stop accepting, send GOAWAY, keep serving in-flight streams and keep running.
  // Must return at once; the drain proceeds on the workers.
  virtual void start_drain() = 0;
  // Live state of every limiter filter (filters/limiter_snapshot.h), for /limits.
  virtual std::vector<LimiterSnapshot> limits() const = 0;
  // The effective configuration with defaults filled in, for /config_dump.
  virtual boost::json::value config_dump() const = 0;
  virtual ServerInfo server_info() const = 0;
  // POST /config/reload: reads, validates and applies the configuration file now; returns when
  // done (a reload takes milliseconds and never waits on a worker).
  virtual ReloadResult reload_config() = 0;
};

}  // namespace sluice
