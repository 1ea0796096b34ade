// A value that goes up and down (in flight, queued, active). Sharded per thread like Counter, so
// a worker's add/sub is a plain store in its own cache line, never an atomic read-modify-write
// on a line the other workers share; value() sums the shards (one may be negative when a thread
// subtracts what another added).
#pragma once

#include <atomic>
#include <cstdint>

#include "src/stats/shard.h"

namespace sluice {

class Gauge {
 public:
  void add(int64_t d) { cells_.add(d); }
  void sub(int64_t d) { cells_.add(-d); }
  // Makes the gauge read `v`; for a gauge no other thread writes at the same time.
  void set(int64_t v) { cells_.add(v - value()); }
  int64_t value() const { return cells_.sum(); }

 private:
  stats::ShardedCells<int64_t> cells_;
};

// A gauge holding a real number (a gradient, a smoothed RTT in ms).
class FloatGauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace sluice
