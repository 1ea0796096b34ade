// Prints what a SimRun shows: the limit over time around the phase changes, and per phase the
// admitted RTT percentiles, queue wait, goodput, shed counts and upstream utilisation.
#pragma once

#include <memory>
#include <string>

#include "tests/filters/sim/sim_run.h"

namespace sluice::sim {

std::string report(const SimRun& run);

// Runs `config` to its end and prints its report (a test's output shows what the limiter did).
std::unique_ptr<SimRun> run(SimConfig config);

}  // namespace sluice::sim
