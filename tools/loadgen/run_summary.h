// Per-phase and overall summary of a run, built from every record: outcome counts (timed-out
// calls included, with no latency invented for them), goodput, OK latency and queue-wait
// percentiles with their sample counts, and the slots that were skipped.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/core/time.h"
#include "tools/loadgen/call_record.h"
#include "tools/loadgen/distribution.h"

namespace sluice::loadgen {

// A phase as the summary sees it: its name and its window, relative to the start of the run.
struct PhaseInfo {
  std::string name;
  Duration start{0};
  Duration end{0};
};

class RunSummary {
 public:
  explicit RunSummary(std::vector<PhaseInfo> phases);

  // Records are attributed to the phase that scheduled them, whenever they end.
  void add(const CallRecord& record);

  // {"phases": [{"name", "start_s", "end_s", ...stats}], "overall": {...stats}}.
  boost::json::object to_json() const;

 private:
  struct Stats {
    uint64_t slots = 0;  // every record: calls + skipped
    uint64_t calls = 0;
    uint64_t skipped_cap = 0;
    uint64_t skipped_late = 0;
    std::map<std::string, uint64_t> by_status;
    Distribution ok_latency_ms;
    Distribution queue_wait_ms;     // every call that carried x-sluice-queue-us
    Distribution ok_queue_wait_ms;  // OK calls that carried it
    // Observed durations of calls that did not succeed, by status (how fast a shed answer is).
    std::map<std::string, Distribution> failed_duration_ms;
    Distribution start_lag_ms;  // start - scheduled: how late the generator itself was
    uint64_t messages_sent = 0;
    uint64_t send_slots_skipped = 0;
  };

  static void account(Stats& stats, const CallRecord& record);
  static boost::json::object stats_json(const Stats& stats, Duration window);

  std::vector<PhaseInfo> phases_;
  std::vector<Stats> per_phase_;
  Stats overall_;
};

}  // namespace sluice::loadgen
