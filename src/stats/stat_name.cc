#include "src/stats/stat_name.h"

namespace sluice {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string sanitize(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (!is_name_char(c)) c = '_';
  }
  return out;
}

// Label names may not start with a digit (and "__" is reserved by Prometheus, but our label
// keys are fixed words, so only the digit case can arise from a typo).
std::string label_name(const std::string& key) {
  std::string out = sanitize(key);
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  return out;
}

// Text format 0.0.4: label values escape backslash, double quote and line feed.
void append_escaped(std::string& out, const std::string& value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

}  // namespace

std::string StatName::dotted() const {
  std::string out = kind;
  for (const auto& [key, value] : labels) {
    out += '.';
    out += value;
  }
  out += '.';
  out += leaf;
  return out;
}

std::string StatName::prometheus_name() const { return sanitize("sluice_" + kind + "_" + leaf); }

std::string StatName::prometheus_labels() const {
  if (labels.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += label_name(key);
    out += "=\"";
    append_escaped(out, value);
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace sluice
