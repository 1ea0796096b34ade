// Renders GET /queues: queue mode's live state, one object per queue (the frontend side and the
// group as Redis reports it) and one per consumer (the pod side), as an operator reads it in an
// incident. Values come from the stats registry through QueueModeState (exactly what /stats
// shows), durations from the history's recent window (not since start). README "Admin endpoint"
// documents every field.
#pragma once

#include <boost/json/value.hpp>
#include <functional>
#include <optional>
#include <string>

#include "src/admin/queue_mode_state.h"
#include "src/stats/histogram.h"

namespace sluice {

// What the history knows of the last few seconds (HistorySampler); a test may leave any empty.
struct QueueRecent {
  double window_s = 0;  // the span of the recent window (recent_intervals x interval)
  // What a histogram (by dotted name) recorded in the window; nullptr when nothing.
  std::function<const HistogramSnapshot*(const std::string& dotted)> histogram;
  // A queue's Redis CPU seconds per second over the window.
  std::function<std::optional<double>(const std::string& queue)> redis_cpu_ratio;
};

// {"recent_window_s": .., "queues": [...], "consumers": [...]}; both lists empty without queue
// mode. A value nobody measured yet is null.
boost::json::value render_queues_json(const QueueModeState& state, const QueueRecent& recent);

}  // namespace sluice
