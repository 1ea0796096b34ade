#include "tests/admin/prometheus_parser.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

namespace sluice {
namespace {

class LineError : public std::runtime_error {
 public:
  LineError(std::size_t line, const std::string& why)
      : std::runtime_error("line " + std::to_string(line) + ": " + why) {}
};

bool name_start(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool name_char(char c, bool colon) { return name_start(c, colon) || (c >= '0' && c <= '9'); }

bool valid_name(std::string_view s, bool colon) {
  if (s.empty() || !name_start(s[0], colon)) return false;
  for (char c : s) {
    if (!name_char(c, colon)) return false;
  }
  return true;
}

// Go's ParseFloat as Prometheus uses it: decimal or exponent notation, NaN, +Inf, -Inf.
bool parse_value(std::string_view s, double& out) {
  if (s == "NaN") {
    out = NAN;
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    out = INFINITY;
    return true;
  }
  if (s == "-Inf") {
    out = -INFINITY;
    return true;
  }
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) {
      return false;
    }
  }
  const std::string copy(s);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string unescape_help(std::string_view s, std::size_t line) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (i + 1 >= s.size()) throw LineError(line, "dangling backslash in HELP");
    const char n = s[++i];
    if (n == '\\') {
      out += '\\';
    } else if (n == 'n') {
      out += '\n';
    } else {
      throw LineError(line, std::string("invalid escape \\") + n + " in HELP");
    }
  }
  return out;
}

PromSample parse_sample(std::string_view s, std::size_t line) {
  PromSample sample;
  std::size_t i = 0;
  while (i < s.size() && s[i] != '{' && s[i] != ' ') ++i;
  sample.name = std::string(s.substr(0, i));
  if (!valid_name(sample.name, true))
    throw LineError(line, "invalid metric name '" + sample.name + "'");
  std::set<std::string> seen;
  if (i < s.size() && s[i] == '{') {
    ++i;
    for (;;) {
      if (i < s.size() && s[i] == '}') {
        ++i;
        break;
      }
      std::size_t start = i;
      while (i < s.size() && s[i] != '=') ++i;
      const std::string key(s.substr(start, i - start));
      if (!valid_name(key, false)) throw LineError(line, "invalid label name '" + key + "'");
      if (key.rfind("__", 0) == 0) throw LineError(line, "reserved label name '" + key + "'");
      if (!seen.insert(key).second) throw LineError(line, "duplicate label '" + key + "'");
      if (i + 1 >= s.size() || s[i + 1] != '"') throw LineError(line, "label value not quoted");
      i += 2;
      std::string value;
      for (;;) {
        if (i >= s.size()) throw LineError(line, "unterminated label value");
        const char c = s[i++];
        if (c == '"') break;
        if (c == '\n') throw LineError(line, "raw newline in label value");
        if (c != '\\') {
          value += c;
          continue;
        }
        if (i >= s.size()) throw LineError(line, "dangling backslash in label value");
        const char n = s[i++];
        if (n == '\\') {
          value += '\\';
        } else if (n == '"') {
          value += '"';
        } else if (n == 'n') {
          value += '\n';
        } else {
          throw LineError(line, std::string("invalid escape \\") + n + " in label value");
        }
      }
      sample.labels.emplace_back(key, value);
      if (i < s.size() && s[i] == ',') {
        ++i;
      } else if (i >= s.size() || s[i] != '}') {
        throw LineError(line, "expected ',' or '}' after label value");
      }
    }
  }
  if (i >= s.size() || s[i] != ' ') throw LineError(line, "expected a space before the value");
  ++i;
  std::string_view rest = s.substr(i);
  const auto space = rest.find(' ');
  const std::string_view value = rest.substr(0, space);
  if (!parse_value(value, sample.value)) {
    throw LineError(line, "invalid value '" + std::string(value) + "'");
  }
  if (space != std::string_view::npos) {
    const std::string_view ts = rest.substr(space + 1);
    if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string_view::npos) {
      throw LineError(line, "invalid timestamp '" + std::string(ts) + "'");
    }
  }
  return sample;
}

// The family a sample belongs to given the current family (histogram suffixes fold into it).
bool belongs(const PromFamily& family, const std::string& sample_name) {
  if (sample_name == family.name) return family.type != "histogram" && family.type != "summary";
  if (family.type == "histogram") {
    return sample_name == family.name + "_bucket" || sample_name == family.name + "_sum" ||
           sample_name == family.name + "_count";
  }
  if (family.type == "summary") {
    return sample_name == family.name + "_sum" || sample_name == family.name + "_count";
  }
  return false;
}

std::string series_key(const PromSample& s, bool without_le) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : s.labels) {
    if (without_le && k == "le") continue;
    sorted[k] = v;
  }
  std::string key = without_le ? "" : s.name;
  for (const auto& [k, v] : sorted) key += "\x1f" + k + "=" + v;
  return key;
}

void check_histogram(const PromFamily& f) {
  struct Series {
    std::vector<std::pair<double, double>> buckets;  // (le, count) in written order
    bool has_sum = false;
    bool has_count = false;
    double count = 0;
  };
  std::map<std::string, Series> series;
  for (const PromSample& s : f.samples) {
    Series& ser = series[series_key(s, true)];
    if (s.name == f.name + "_bucket") {
      const std::string le = s.label("le");
      double bound = 0;
      if (le.empty() || !parse_value(le, bound) || std::isnan(bound)) {
        throw std::runtime_error(f.name + ": bucket without a valid le");
      }
      ser.buckets.emplace_back(bound, s.value);
    } else {
      if (!s.label("le").empty()) throw std::runtime_error(f.name + ": le on " + s.name);
      if (s.name == f.name + "_count") {
        ser.has_count = true;
        ser.count = s.value;
      } else {
        ser.has_sum = true;
      }
    }
  }
  for (const auto& [key, ser] : series) {
    if (ser.buckets.empty() || !ser.has_sum || !ser.has_count) {
      throw std::runtime_error(f.name + ": histogram series lacks _bucket, _sum or _count");
    }
    for (std::size_t i = 0; i < ser.buckets.size(); ++i) {
      const auto [le, count] = ser.buckets[i];
      if (count < 0 || std::floor(count) != count) {
        throw std::runtime_error(f.name + ": bucket count is not a non-negative integer");
      }
      if (i > 0 && !(le > ser.buckets[i - 1].first)) {
        throw std::runtime_error(f.name + ": le not strictly increasing");
      }
      if (i > 0 && count < ser.buckets[i - 1].second) {
        throw std::runtime_error(f.name + ": bucket counts decrease");
      }
    }
    if (!std::isinf(ser.buckets.back().first)) {
      throw std::runtime_error(f.name + ": last bucket is not le=\"+Inf\"");
    }
    if (ser.buckets.back().second != ser.count) {
      throw std::runtime_error(f.name + ": +Inf bucket differs from _count");
    }
  }
}

}  // namespace

std::string PromSample::label(const std::string& key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

std::vector<PromFamily> PrometheusParser::parse(std::string_view text) {
  std::vector<PromFamily> families;
  std::set<std::string> closed;  // families whose group has ended
  std::set<std::string> series;
  PromFamily* current = nullptr;
  bool current_has_help = false;
  bool current_has_type = false;
  std::size_t line_no = 0;

  auto open_family = [&](const std::string& name, std::size_t line) {
    if (current != nullptr && current->name == name) {
      if (!current->samples.empty()) throw LineError(line, "HELP/TYPE after samples of " + name);
      return;
    }
    if (current != nullptr) closed.insert(current->name);
    if (closed.count(name) != 0) throw LineError(line, "family " + name + " is not contiguous");
    families.push_back(PromFamily{name, "", "", {}});
    current = &families.back();
    current_has_help = false;
    current_has_type = false;
  };

  if (!text.empty() && text.back() != '\n') throw LineError(0, "output does not end in a newline");
  while (!text.empty()) {
    ++line_no;
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      const bool help = line.rfind("# HELP ", 0) == 0;
      const bool type = line.rfind("# TYPE ", 0) == 0;
      if (!help && !type) continue;  // a comment
      std::string_view rest = line.substr(7);
      const auto space = rest.find(' ');
      const std::string name(rest.substr(0, space));
      if (!valid_name(name, true)) throw LineError(line_no, "invalid metric name '" + name + "'");
      const std::string_view arg =
          space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
      open_family(name, line_no);
      if (help) {
        if (current_has_help) throw LineError(line_no, "second HELP for " + name);
        current_has_help = true;
        current->help = unescape_help(arg, line_no);
      } else {
        if (current_has_type) throw LineError(line_no, "second TYPE for " + name);
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (kTypes.count(std::string(arg)) == 0) {
          throw LineError(line_no, "unknown type '" + std::string(arg) + "'");
        }
        current_has_type = true;
        current->type = std::string(arg);
      }
      continue;
    }
    PromSample sample = parse_sample(line, line_no);
    if (current == nullptr || !belongs(*current, sample.name)) {
      throw LineError(line_no, "sample " + sample.name + " without its # HELP and # TYPE first");
    }
    if (!current_has_help || !current_has_type) {
      throw LineError(line_no, "sample " + sample.name + " before both HELP and TYPE");
    }
    if (!series.insert(series_key(sample, false)).second) {
      throw LineError(line_no, "duplicate series " + sample.name);
    }
    if (current->type == "counter") {
      if (!ends_with(sample.name, "_total")) throw LineError(line_no, "counter without _total");
      if (!std::isfinite(sample.value) || sample.value < 0) {
        throw LineError(line_no, "counter value must be finite and >= 0");
      }
    }
    if (current->type == "histogram" && sample.name == current->name + "_bucket" &&
        sample.labels.empty()) {
      throw LineError(line_no, "bucket without le");
    }
    current->samples.push_back(std::move(sample));
  }
  for (const PromFamily& f : families) {
    if (f.type == "histogram") check_histogram(f);
  }
  return families;
}

double PrometheusParser::value(const std::vector<PromFamily>& families, const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& labels) {
  const PromSample* found = nullptr;
  for (const PromFamily& f : families) {
    for (const PromSample& s : f.samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) match = match && s.label(k) == v;
      if (!match) continue;
      if (found != nullptr) throw std::runtime_error("more than one sample matches " + name);
      found = &s;
    }
  }
  if (found == nullptr) throw std::runtime_error("no sample " + name);
  return found->value;
}

}  // namespace sluice
