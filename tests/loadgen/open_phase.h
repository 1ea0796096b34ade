// An open-loop phase for the scheduler tests: `rate` calls/s for `length`.
#pragma once

#include <string>
#include <utility>

#include "tools/loadgen/phase.h"

namespace sluice::loadgen {

inline Phase open_phase(double rate, Duration length, std::string name = "") {
  Phase p;
  p.name = std::move(name);
  p.rate = rate;
  p.length = length;
  return p;
}

}  // namespace sluice::loadgen
