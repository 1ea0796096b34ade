// Prints what a SimRun shows: the limit over time around the phase changes, and per phase the
// admitted RTT percentiles, queue wait, goodput, shed counts and upstream utilisation.
#pragma once

#include <string>

#include "tests/filters/sim/sim_run.h"

namespace sluice::sim {

std::string report(const SimRun& run);

}  // namespace sluice::sim
