// Loads sluice's YAML configuration into validated plain structs (src/config/config.h).
// Every error is a ConfigError naming the file, line:column and YAML path; the reference for
// every field is docs/configuration.md.
#pragma once

#include <string>
#include <string_view>

#include "src/config/config.h"
#include "src/config/config_error.h"
#include "src/config/filter_params.h"

namespace sluice {

// Reads and validates the file at `path`; `filters` says which filter types exist and reads their
// parameters (sluice's: builtin_filters(), filters/filter_registry.h). Relative TLS file paths
// are taken from the file's directory, so a config and its certificates can move together.
// Throws ConfigError on the first error found, including a missing or unreadable file.
Config load_config_file(const std::string& path, const FilterTypes& filters);

// Validates `yaml`; errors name `source_name` as the file. Relative TLS file paths are taken from
// the working directory. Config::source_path is left empty. Throws ConfigError on the first error.
Config load_config_string(std::string_view yaml, const std::string& source_name,
                          const FilterTypes& filters);

// A configuration's version: a hash of its bytes (64-bit FNV-1a, 16 hex digits). Equal texts
// have equal versions; a reload or a file watch compares them.
std::string config_version(std::string_view text);

}  // namespace sluice
