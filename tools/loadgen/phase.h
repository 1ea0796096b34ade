// A load plan is a list of phases run one after another. Open-loop phases offer calls at a rate
// for a length of time ("80/s:36s"); closed-loop phases keep N workers busy for a number of calls
// or a length of time ("4w:40", "4w:10s"). A phase may carry a name ("80/s:12s@slow") so reports
// can talk about "slow" rather than "phase 1".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/core/time.h"

namespace sluice::loadgen {

enum class LoopKind { kOpen, kClosed };

struct Phase {
  std::string name;
  LoopKind kind = LoopKind::kOpen;
  // Open loop: calls offered per second (0 = a pause: the phase offers nothing).
  double rate = 0;
  // Open loop: always set. Closed loop: set when the phase is bounded by time, else zero.
  Duration length{0};
  // Closed loop: concurrent workers, and the calls to issue (0 when bounded by time).
  uint32_t workers = 0;
  uint64_t calls = 0;
};

// Parses a comma-separated plan. Every phase of one plan has the same kind. Unnamed phases are
// called "p0", "p1", ... by position. Returns the phases or a message naming the bad item.
std::variant<std::vector<Phase>, std::string> parse_phases(std::string_view text);

}  // namespace sluice::loadgen
