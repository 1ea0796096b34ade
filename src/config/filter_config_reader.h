// Reads one entry of a listener's `filters:` list into a FilterConfig.
#pragma once

#include "src/config/config.h"
#include "src/config/config_node.h"

namespace sluice {

// Validates the entry's keys and values for its `type`. `name` is left empty when the entry does
// not set one: the default depends on the rest of the list, which the caller knows.
FilterConfig read_filter_config(const ConfigNode& node);

}  // namespace sluice
