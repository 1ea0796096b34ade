// The upstream's counters as one line of JSON, printed when the process exits. Plain numbers
// (protobuf's JSON mapping would print 64-bit counters as strings).
#pragma once

#include <string>

#include "sluice_test.pb.h"

namespace sluice::itest {

std::string stats_to_json(const sluice::test::StatsResponse& stats);

}  // namespace sluice::itest
