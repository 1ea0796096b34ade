#include "tools/loadgen/distribution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sluice::loadgen {

void Distribution::add(double value) {
  if (!values_.empty() && value < values_.back()) sorted_ = false;
  values_.push_back(value);
}

void Distribution::sort() const {
  if (sorted_) return;
  std::sort(values_.begin(), values_.end());
  sorted_ = true;
}

double Distribution::percentile(double q) const {
  if (values_.empty()) return 0;
  sort();
  const double n = static_cast<double>(values_.size());
  // Rank ceil(q * n), 1-based; the epsilon keeps 0.95 * 20 at rank 19 despite binary fractions.
  auto rank = static_cast<size_t>(std::ceil(q * n - 1e-9));
  rank = std::clamp<size_t>(rank, 1, values_.size());
  return values_[rank - 1];
}

double Distribution::max() const {
  if (values_.empty()) return 0;
  sort();
  return values_.back();
}

double Distribution::mean() const {
  if (values_.empty()) return 0;
  return std::accumulate(values_.begin(), values_.end(), 0.0) / static_cast<double>(values_.size());
}

boost::json::object Distribution::to_json() const {
  boost::json::object o;
  o["n"] = values_.size();
  if (values_.empty()) {
    for (const char* key : {"p50", "p95", "p99", "max"}) o[key] = nullptr;
    return o;
  }
  o["p50"] = percentile(0.50);
  o["p95"] = percentile(0.95);
  o["p99"] = percentile(0.99);
  o["max"] = max();
  return o;
}

}  // namespace sluice::loadgen
