// Durations as humans type them in flags and schedules: "10ms", "1.5s", "250us", "2m", "0".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/core/time.h"

namespace sluice::itest {

// Parses a non-negative number (decimal point allowed) followed by ns, us, ms, s, m or h.
// A bare "0" is accepted without a unit. Returns nullopt on anything else.
std::optional<Duration> parse_duration(std::string_view text);

// Formats with the largest unit that keeps the value an integer ("12s", "1500us").
std::string format_duration(Duration d);

}  // namespace sluice::itest
