// Helpers shared by the config tests: load YAML and assert exactly where loading failed.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>

#include "filters/filter_registry.h"
#include "src/config/config_loader.h"

namespace sluice {

inline constexpr std::string_view kTestSource = "test.yaml";

// Loads `yaml` and returns the error, or nullopt when it loaded.
inline std::optional<ConfigError> load_error(std::string_view yaml) {
  try {
    load_config_string(yaml, std::string(kTestSource), builtin_filters());
  } catch (const ConfigError& e) {
    return e;
  }
  return std::nullopt;
}

// Succeeds when loading `yaml` fails at line:column and `path` with a message containing
// `message_part`; otherwise says what happened instead.
inline testing::AssertionResult FailsAt(std::string_view yaml, int line, int column,
                                        std::string_view path, std::string_view message_part) {
  const auto error = load_error(yaml);
  if (!error) return testing::AssertionFailure() << "loaded without error";
  const bool ok = error->file() == kTestSource && error->line() == line &&
                  error->column() == column && error->yaml_path() == path &&
                  error->message().find(message_part) != std::string::npos;
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "expected " << kTestSource << ":" << line << ":" << column << ": at " << path
         << ": ...\"" << message_part << "\"...\n     got " << error->what();
}

// The smallest valid configuration; tests append to or rewrite it.
inline constexpr std::string_view kMinimal = R"(clusters:
  - name: app
    endpoints: [127.0.0.1:50051]
listeners:
  - name: ingress
    address: 0.0.0.0:8080
    cluster: app
)";

}  // namespace sluice
