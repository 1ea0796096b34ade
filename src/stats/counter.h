// A monotonically increasing count, sharded per thread so the hot path never contends.
#pragma once

#include <cstdint>

#include "src/stats/shard.h"

namespace sluice {

class Counter {
 public:
  void inc(uint64_t n = 1) { cells_.add(n); }
  uint64_t value() const { return cells_.sum(); }

 private:
  stats::ShardedCells<uint64_t> cells_;
};

}  // namespace sluice
