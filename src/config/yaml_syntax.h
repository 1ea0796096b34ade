// The YAML checks made before YAML::Load builds the document: at most one document, and
// syntax errors reported where the broken construct starts (an unclosed '[' is named where it
// was opened, not only at the end of the file where yaml-cpp gives up).
#pragma once

#include <string>

namespace sluice {

// Throws ConfigError ("FILE:LINE:COL: invalid YAML: ..."); lets YAML::DeepRecursion through
// (the caller words it). `source` names the file in the error.
void check_yaml_syntax(const std::string& text, const std::string& source);

}  // namespace sluice
