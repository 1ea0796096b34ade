// What a reload of the configuration would change, checked before anything is applied: the
// settings that apply live, and the ones that cannot change without a restart (the reload is
// then refused whole: nothing is half-applied).
#pragma once

#include <string>
#include <vector>

#include "src/config/config.h"

namespace sluice {

struct ConfigDiff {
  // One entry per setting that would change but cannot live, naming it with its old and new
  // value: "workers: 2 -> 4". Any entry refuses the reload.
  std::vector<std::string> needs_restart;
  // Listeners (by name) whose filter chain or criticality rules change: new calls use the new
  // ones, calls in flight finish under the old.
  std::vector<std::string> chains;
  // Listeners (by name) whose HTTP/2 settings, limits or TLS change: connections accepted from
  // now on use the new ones, open connections keep theirs (they have advertised their SETTINGS
  // and finished their handshake).
  std::vector<std::string> connections;
  // Listeners (by name) whose cluster changes: calls that arrive from now on go there.
  std::vector<std::string> upstreams;
  // Listeners (by name) new in the file: bound on every worker before anything else changes (a
  // bind failure refuses the reload), then served. A renamed listener is added and removed.
  std::vector<std::string> added;
  // Listeners (by name) whose address changes: the new address is bound first, then the old
  // sockets close and their connections drain; the listener's stats continue.
  std::vector<std::string> moved;
  // Listeners (by name) gone from the file: their sockets close and their connections drain as
  // at shutdown (two-phase GOAWAY, then drain_timeout); their stats stay.
  std::vector<std::string> removed;
  // Clusters (by name) added, removed or changed: changed ones get new connections where their
  // connection settings changed (the old connections drain), removed ones drain.
  std::vector<std::string> clusters;
  bool log_level = false;
  bool access_log = false;
  bool drain_timeout = false;
  bool watch_config = false;
  // One line per change applied live, for the log and the reload's answer.
  std::vector<std::string> applied;

  bool refused() const { return !needs_restart.empty(); }
  bool empty() const { return needs_restart.empty() && applied.empty(); }
  // "these changes need a restart: workers: 2 -> 4; admin.address: ..." (for a refused diff).
  std::string refusal() const;
};

// Compares the running configuration with a validated new one. Listeners and clusters are
// matched by name; reordering them changes nothing.
ConfigDiff diff_configs(const Config& running, const Config& next);

}  // namespace sluice
