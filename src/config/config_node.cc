#include "src/config/config_node.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <span>
#include <system_error>
#include <utility>

#include "src/config/config_error.h"
#include "src/config/units.h"

namespace sluice {
namespace {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string join(std::span<const std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A typo a human would make: close in spelling to one allowed key.
std::optional<std::string_view> suggestion(std::string_view key,
                                           std::span<const std::string_view> allowed) {
  std::optional<std::string_view> best;
  size_t best_distance = 3;
  for (std::string_view candidate : allowed) {
    const size_t d = edit_distance(key, candidate);
    if (d < best_distance && d < key.size()) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

bool is_host_char(char c) { return is_name_char(c) || c == '.'; }

std::string format_double(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

}  // namespace

bool DoubleRange::contains(double v) const {
  if (low_open ? !(v > low) : !(v >= low)) return false;
  if (high_open ? !(v < high) : !(v <= high)) return false;
  return true;
}

std::string DoubleRange::describe() const {
  const bool has_low = std::isfinite(low);
  const bool has_high = std::isfinite(high);
  if (has_low && has_high) {
    return std::string(low_open ? "(" : "[") + format_double(low) + ", " + format_double(high) +
           (high_open ? ")" : "]");
  }
  if (has_low) return (low_open ? "> " : ">= ") + format_double(low);
  if (has_high) return (high_open ? "< " : "<= ") + format_double(high);
  return "any";
}

ConfigNode::ConfigNode(const YAML::Node& node, std::string path, const std::string* source,
                       YAML::Mark mark)
    : node_(node), path_(std::move(path)), source_(source), mark_(mark) {}

ConfigNode ConfigNode::root(const YAML::Node& node, const std::string& source) {
  YAML::Mark mark = node.Mark();
  if (mark.line < 0) mark = YAML::Mark();  // an empty document has no position: report 1:1
  return {node, "", &source, mark};
}

void ConfigNode::fail(const std::string& message) const {
  throw ConfigError(*source_, line(), column(), path_, message);
}

std::string ConfigNode::got() const {
  switch (node_.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return quote(node_.Scalar());
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

void ConfigNode::fail_must_be(const std::string& rule) const {
  fail("must be " + rule + ", got " + got());
}

ConfigNode ConfigNode::child(const YAML::Node& key, const YAML::Node& value) const {
  // An empty value ("name:") carries the position of whatever follows it, often the next line;
  // the key is where a reader looks.
  YAML::Mark mark = value.IsNull() ? key.Mark() : value.Mark();
  if (mark.line < 0) mark = key.Mark();
  const std::string& k = key.Scalar();
  return {value, path_.empty() ? k : path_ + "." + k, source_, mark};
}

void ConfigNode::check_keys(std::initializer_list<std::string_view> allowed) const {
  check_keys(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void ConfigNode::check_keys(std::span<const std::string_view> allowed) const {
  if (!node_.IsMap()) fail_must_be("a map");
  std::vector<std::pair<std::string, int>> seen;  // key, line
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node key = it->first;  // by value: the iterator hands out a temporary
    const ConfigNode at(key, path_, source_, key.Mark());
    if (!key.IsScalar()) at.fail("map keys must be plain strings");
    const std::string& k = key.Scalar();
    const ConfigNode key_node(key, path_.empty() ? k : path_ + "." + k, source_, key.Mark());
    for (const auto& [previous, previous_line] : seen) {
      if (previous == k) {
        key_node.fail("duplicate key " + quote(k) + " (first at line " +
                      std::to_string(previous_line) + ")");
      }
    }
    seen.emplace_back(k, key_node.line());
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string message = "unknown key " + quote(k);
      if (const auto hint = suggestion(k, allowed)) {
        message += " (did you mean " + quote(*hint) + "?)";
      }
      key_node.fail(message + "; allowed keys: " + join(allowed));
    }
  }
}

std::optional<ConfigNode> ConfigNode::find(std::string_view key) const {
  if (!node_.IsMap()) fail_must_be("a map");
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return child(it->first, it->second);
  }
  return std::nullopt;
}

ConfigNode ConfigNode::require(std::string_view key) const {
  if (auto found = find(key)) return *found;
  // Nothing to point at but the map that lacks the key.
  const std::string k(key);
  ConfigNode(node_, path_.empty() ? k : path_ + "." + k, source_, mark_).fail("is required");
}

std::optional<ConfigNode> ConfigNode::find_optional(std::string_view key) const {
  auto found = find(key);
  if (found && found->is_null()) return std::nullopt;
  return found;
}

std::vector<ConfigNode> ConfigNode::elements() const {
  if (!node_.IsSequence()) fail_must_be("a list");
  std::vector<ConfigNode> out;
  out.reserve(node_.size());
  size_t i = 0;
  for (auto it = node_.begin(); it != node_.end(); ++it, ++i) {
    YAML::Mark mark = it->Mark();
    if (mark.line < 0 || it->IsNull()) mark = mark_;
    out.push_back(ConfigNode(*it, path_ + "[" + std::to_string(i) + "]", source_, mark));
  }
  return out;
}

std::string ConfigNode::as_string() const {
  if (!node_.IsScalar() || node_.Scalar().empty()) fail_must_be("a non-empty string");
  return node_.Scalar();
}

std::string ConfigNode::as_text() const {
  if (!node_.IsScalar()) fail_must_be("a string");
  return node_.Scalar();
}

std::string ConfigNode::as_name() const {
  const std::string rule = "a name of letters, digits, '_' and '-'";
  if (!node_.IsScalar() || node_.Scalar().empty()) fail_must_be(rule);
  const std::string& s = node_.Scalar();
  if (!std::all_of(s.begin(), s.end(), is_name_char)) fail_must_be(rule);
  return s;
}

std::string ConfigNode::as_path_match() const {
  const std::string rule = "a :path (\"/pkg.Service/Method\") or a prefix ending in '*'";
  if (!node_.IsScalar() || node_.Scalar().empty()) fail_must_be(rule);
  const std::string& s = node_.Scalar();
  const auto star = s.find('*');
  if (s.front() != '/' || (star != std::string::npos && star != s.size() - 1)) fail_must_be(rule);
  return s;
}

std::string ConfigNode::as_one_of(std::initializer_list<std::string_view> choices) const {
  return as_one_of(std::span<const std::string_view>(choices.begin(), choices.size()));
}

std::string ConfigNode::as_one_of(std::span<const std::string_view> choices) const {
  if (node_.IsScalar() &&
      std::find(choices.begin(), choices.end(), node_.Scalar()) != choices.end()) {
    return node_.Scalar();
  }
  std::string rule = "one of ";
  for (auto it = choices.begin(); it != choices.end(); ++it) {
    if (it != choices.begin()) rule += "|";
    rule += *it;
  }
  fail_must_be(rule);
}

bool ConfigNode::as_bool() const {
  // YAML 1.2 core schema only: "yes"/"on" surprise people (the Norway problem).
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  fail_must_be("true or false");
}

uint32_t ConfigNode::as_uint(uint64_t min, uint64_t max) const {
  const std::string rule =
      max == std::numeric_limits<uint32_t>::max()
          ? "an integer >= " + std::to_string(min)
          : "an integer between " + std::to_string(min) + " and " + std::to_string(max);
  if (!node_.IsScalar()) fail_must_be(rule);
  const std::string& s = node_.Scalar();
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value < min || value > max) {
    fail_must_be(rule);
  }
  return static_cast<uint32_t>(value);
}

double ConfigNode::as_double(const DoubleRange& range) const {
  const std::string rule =
      "a number " +
      std::string(std::isfinite(range.low) && std::isfinite(range.high) ? "in " : "") +
      range.describe();
  if (!node_.IsScalar()) fail_must_be(rule);
  const std::string& s = node_.Scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value) ||
      !range.contains(value)) {
    fail_must_be(rule);
  }
  return value;
}

Duration ConfigNode::as_duration(bool allow_zero) const {
  const std::string rule = std::string("a duration ") + (allow_zero ? ">= 0" : "> 0") +
                           " with a unit (ns, us, ms, s, m, h)";
  if (!node_.IsScalar()) fail_must_be(rule);
  const auto d = parse_duration(node_.Scalar());
  if (!d || (!allow_zero && d->count() == 0)) fail_must_be(rule);
  return *d;
}

uint32_t ConfigNode::as_size(uint64_t min, uint64_t max) const {
  const std::string range = max == std::numeric_limits<uint32_t>::max()
                                ? ">= " + std::to_string(min)
                                : "between " + std::to_string(min) + " and " + std::to_string(max);
  const std::string rule =
      "a size " + range + " (bytes, or a number with KiB, MiB, GiB, KB, MB, GB)";
  if (!node_.IsScalar()) fail_must_be(rule);
  const auto size = parse_size(node_.Scalar());
  if (!size || *size < min || *size > max) fail_must_be(rule);
  return static_cast<uint32_t>(*size);
}

SocketAddress ConfigNode::as_address(bool allow_port_zero) const {
  const std::string shape = "host:port or [ipv6]:port";
  if (!node_.IsScalar()) fail_must_be(shape);
  const std::string& s = node_.Scalar();
  SocketAddress address;
  std::string_view port_text;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      fail_must_be(shape);
    }
    address.host = s.substr(1, close - 1);
    in6_addr v6{};
    if (inet_pton(AF_INET6, address.host.c_str(), &v6) != 1) {
      fail(quote(address.host) + " is not an IPv6 address");
    }
    port_text = std::string_view(s).substr(close + 2);
  } else {
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0) fail_must_be(shape);
    address.host = s.substr(0, colon);
    if (address.host.find(':') != std::string::npos) {
      fail("IPv6 addresses need brackets, as in [::1]:8080; got " + got());
    }
    if (!std::all_of(address.host.begin(), address.host.end(), is_host_char)) {
      fail(quote(address.host) + " is not a valid host name or address");
    }
    // All digits and dots: it means to be an IPv4 literal, so hold it to that.
    const bool looks_v4 = std::all_of(address.host.begin(), address.host.end(),
                                      [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
    in_addr v4{};
    if (looks_v4 && inet_pton(AF_INET, address.host.c_str(), &v4) != 1) {
      fail(quote(address.host) + " is not an IPv4 address");
    }
    port_text = std::string_view(s).substr(colon + 1);
  }
  const uint64_t min_port = allow_port_zero ? 0 : 1;
  uint64_t port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < min_port || port > 65535) {
    fail("port must be an integer between " + std::to_string(min_port) + " and 65535" +
         (allow_port_zero ? " (0 = any free port)" : "") + ", got " + quote(port_text));
  }
  address.port = static_cast<uint16_t>(port);
  return address;
}

std::string ConfigNode::as_readable_file(const std::filesystem::path& base_dir) const {
  std::filesystem::path path(as_string());
  if (path.is_relative() && !base_dir.empty()) path = base_dir / path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("cannot read " + quote(path.string()) + ": is a directory");
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    fail("cannot read " + quote(path.string()) + ": " + std::generic_category().message(errno));
  }
  std::fclose(file);
  return path.string();
}

}  // namespace sluice
