// A YAML node that knows where it came from (source name, line:column, YAML path), so that every
// check the loader makes can fail with a ConfigError pointing at the offending text.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/config.h"

namespace sluice {

// An interval of doubles with open or closed ends; used to validate and to describe the rule.
struct DoubleRange {
  double low = -std::numeric_limits<double>::infinity();
  bool low_open = false;
  double high = std::numeric_limits<double>::infinity();
  bool high_open = false;
  bool contains(double v) const;
  std::string describe() const;  // "(0, 1]", "> 1", ">= 0"
};

// The ranges config fields use most.
inline constexpr DoubleRange kUnitIntervalOpenLow{0.0, true, 1.0, false};  // (0, 1]
inline constexpr DoubleRange kOpenUnitInterval{0.0, true, 1.0, true};      // (0, 1)
inline constexpr DoubleRange kPositive{0.0, true};                         // > 0
inline constexpr DoubleRange kNonNegative{0.0, false};                     // >= 0
inline constexpr DoubleRange kAboveOne{1.0, true};                         // > 1

class ConfigNode {
 public:
  // `source` names the file in errors and must outlive every node made from this one.
  static ConfigNode root(const YAML::Node& node, const std::string& source);

  const std::string& path() const { return path_; }
  int line() const { return mark_.line + 1; }  // 1-based
  int column() const { return mark_.column + 1; }
  // Throws ConfigError at this node.
  [[noreturn]] void fail(const std::string& message) const;

  bool is_null() const { return node_.IsNull(); }

  // Maps. check_keys() fails unless this is a map whose keys are unique strings from `allowed`;
  // the error names the key and lists the allowed ones.
  void check_keys(std::initializer_list<std::string_view> allowed) const;
  void check_keys(std::span<const std::string_view> allowed) const;
  std::optional<ConfigNode> find(std::string_view key) const;  // nullopt when absent
  ConfigNode require(std::string_view key) const;              // fails when absent
  // Like find(), but an explicit null (`key: ~`) also means absent: for optional fields.
  std::optional<ConfigNode> find_optional(std::string_view key) const;

  // Sequences: the elements, with paths "path[i]".
  std::vector<ConfigNode> elements() const;

  // Scalars. Each fails with "must be <rule>, got <what was there>".
  std::string as_string() const;  // non-empty
  std::string as_text() const;    // any string, "" included
  std::string as_name() const;    // [A-Za-z0-9_-]+: names appear inside dotted stat names
  // A gRPC :path ("/pkg.Service/Method") or a prefix of one ending in '*' ("/pkg.Service/*").
  std::string as_path_match() const;
  std::string as_one_of(std::initializer_list<std::string_view> choices) const;
  std::string as_one_of(std::span<const std::string_view> choices) const;
  bool as_bool() const;
  uint32_t as_uint(uint64_t min, uint64_t max = std::numeric_limits<uint32_t>::max()) const;
  double as_double(const DoubleRange& range) const;
  Duration as_duration(bool allow_zero = false) const;
  uint32_t as_size(uint64_t min, uint64_t max = std::numeric_limits<uint32_t>::max()) const;
  SocketAddress as_address(bool allow_port_zero) const;
  // A file that must exist and be readable. Relative paths are taken from `base_dir`; the
  // result is the path as resolved.
  std::string as_readable_file(const std::filesystem::path& base_dir) const;

 private:
  ConfigNode(const YAML::Node& node, std::string path, const std::string* source, YAML::Mark mark);
  std::string got() const;  // what the node holds, for error messages
  [[noreturn]] void fail_must_be(const std::string& rule) const;
  ConfigNode child(const YAML::Node& key, const YAML::Node& value) const;

  YAML::Node node_;
  std::string path_;
  const std::string* source_;
  YAML::Mark mark_;
};

}  // namespace sluice
