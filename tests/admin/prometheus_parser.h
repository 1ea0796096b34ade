// A strict parser for the Prometheus text exposition format 0.0.4, written for the tests so a
// malformed /stats/prometheus output fails loudly instead of being silently skipped by a lenient
// scraper.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice {

struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped, in written order
  double value = 0;
  std::string label(const std::string& key) const;  // "" when absent
};

struct PromFamily {
  std::string name;
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;  // unescaped
  std::vector<PromSample> samples;
};

class PrometheusParser {
 public:
  // Parses `text` and checks every rule below; throws std::runtime_error("line N: why").
  // - names: metric [a-zA-Z_:][a-zA-Z0-9_:]*, label [a-zA-Z_][a-zA-Z0-9_]*, no "__" prefix
  // - label values: only \\, \" and \n escapes; no duplicate label names in a sample
  // - each family has exactly one # HELP and one # TYPE, both before its first sample, and its
  //   samples form one contiguous group; no series appears twice
  // - counters: name ends in _total, value finite and >= 0
  // - histograms: only _bucket (with le), _sum, _count samples; per label set, le strictly
  //   increasing, bucket counts non-decreasing, a final le="+Inf" equal to _count
  static std::vector<PromFamily> parse(std::string_view text);

  // The value of the sample `name` whose labels include every `labels` pair; throws when there
  // is none (or more than one).
  static double value(const std::vector<PromFamily>& families, const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& labels = {});
};

}  // namespace sluice
