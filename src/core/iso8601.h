// Wall-clock times as they appear in logs and admin JSON.
#pragma once

#include <chrono>
#include <string>

namespace sluice {

// "2024-05-01T12:34:56.789Z" (UTC, milliseconds).
std::string iso8601(std::chrono::system_clock::time_point t);

}  // namespace sluice
