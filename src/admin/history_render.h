// Renders the admin history for GET /history: compact JSON, one array per series (columnar), so
// ten minutes of a few filters stay a few hundred KB and the dashboard appends arrays as they
// come. See README "Admin endpoint" for the shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "src/admin/history_sampler.h"

namespace sluice {

// The samples newer than `since_ms` (Unix ms; all of them without it). Every series array has
// one element per entry of "t", null where the value is unknown or the filter was absent. Left
// out, to be read as all null: a series with no value in the range, a class with no series, a
// filter or listener with no point in the range.
std::string render_history_json(const HistorySampler& history, std::optional<int64_t> since_ms);

}  // namespace sluice
