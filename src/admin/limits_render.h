// Renders limiter snapshots for /limits, and wall-clock timestamps as ISO-8601.
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "src/core/iso8601.h"
#include "src/core/time.h"

namespace sluice {

// The p99 queue wait (ms) of a filter over the last few seconds (HistorySampler), or nullopt.
using RecentQueueWait = std::function<std::optional<double>(const LimiterSnapshot&)>;

// A JSON array with one object per limiter holding every LimiterSnapshot field (absent optionals
// as null). Each decision carries its steady-clock age ("ms_ago", from `now`) and the wall-clock
// time it happened ("at", ISO-8601 UTC, derived from `now_wall` minus that age). "classes" is an
// object keyed by class name (all four, least critical first) with admitted, shed and queued;
// "baselines" an array of {method, rtt_noload_ms, samples}; "queue_wait_p99_ms_recent" what
// `recent` says (null without it).
boost::json::value render_limits_json(const std::vector<LimiterSnapshot>& limits, TimePoint now,
                                      std::chrono::system_clock::time_point now_wall,
                                      const RecentQueueWait& recent = {});

}  // namespace sluice
