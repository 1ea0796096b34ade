// A set of samples (milliseconds or microseconds) with nearest-rank percentiles: the reported p99
// is always a value that was observed, never an interpolation between two.
#pragma once

#include <boost/json.hpp>
#include <cstddef>
#include <vector>

namespace sluice::loadgen {

class Distribution {
 public:
  void add(double value);

  size_t count() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  // Nearest rank: the smallest value with at least q of the samples at or below it (q in (0,1]).
  // Zero when empty; callers print the count next to it so that reads as "no data".
  double percentile(double q) const;
  double max() const;
  double mean() const;

  // {"n", "p50", "p95", "p99", "max"}; percentile fields are null when there are no samples.
  boost::json::object to_json() const;

 private:
  void sort() const;

  mutable std::vector<double> values_;
  mutable bool sorted_ = true;
};

}  // namespace sluice::loadgen
