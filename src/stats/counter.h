// A monotonically increasing count, sharded per thread so the hot path never contends.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "src/stats/shard.h"

namespace sluice {

class Counter {
 public:
  void inc(uint64_t n = 1) {
    const std::size_t shard = stats::thread_shard();
    auto& cell = cells_[shard].value;
    if (shard == 0) {
      cell.fetch_add(n, std::memory_order_relaxed);  // shared by all non-worker threads
    } else {
      // A worker shard has exactly one writer: a plain read-modify-write is enough.
      cell.store(cell.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
  }
  uint64_t value() const {
    uint64_t total = 0;
    for (const auto& c : cells_) total += c.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(stats::kCacheLine) Cell {
    std::atomic<uint64_t> value{0};
  };
  std::array<Cell, stats::kMaxShards> cells_{};
};

}  // namespace sluice
