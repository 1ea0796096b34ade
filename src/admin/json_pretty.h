// Indented JSON for the admin endpoints people read with their eyes (/config_dump, /limits).
#pragma once

#include <boost/json/value.hpp>
#include <string>

namespace sluice {

// Two-space indentation, one member per line, scalars serialized by Boost.JSON; ends in '\n'.
std::string pretty_json(const boost::json::value& v);

}  // namespace sluice
