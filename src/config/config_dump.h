// The effective configuration as JSON, defaults filled in: what the admin endpoint /config_dump
// serves.
#pragma once

#include <boost/json/value.hpp>

#include "src/config/config.h"

namespace sluice {

// Every field, keyed by its YAML name, durations and sizes as unit strings ("8ms", "64KiB"),
// absent optional fields as null. The result is itself a valid configuration: JSON is YAML, so
// load_config_string(serialize(config_to_json(c))) gives back `c` (source_path aside, which is
// not part of the YAML schema).
boost::json::value config_to_json(const Config& config);

// Field values as config_to_json() writes them, for the filter types' own dump() functions.
boost::json::value dump_duration(Duration d);                                 // "8ms"
boost::json::value dump_optional_duration(const std::optional<Duration>& d);  // or null

}  // namespace sluice
