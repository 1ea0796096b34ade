// Per-thread shard index so hot-path stats are written without contention and merged on read.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

namespace sluice::stats {

// Workers take shards 1..kMaxShards-1; every other thread (main, admin) writes shard 0.
inline constexpr std::size_t kMaxShards = 64;
inline constexpr std::size_t kCacheLine = 64;

// Sets the calling thread's shard; a worker calls this once when its thread starts.
void set_thread_shard(std::size_t shard);
std::size_t thread_shard();

// One value per shard, each in its own cache line. A worker shard has exactly one writer, so it
// is updated with a plain load and store (no atomic read-modify-write); shard 0 is shared by all
// non-worker threads and takes a fetch_add. sum() merges them (relaxed: a moment's snapshot).
template <class T>
class ShardedCells {
 public:
  void add(T d) {
    const std::size_t shard = thread_shard();
    auto& cell = cells_[shard].value;
    if (shard == 0) {
      cell.fetch_add(d, std::memory_order_relaxed);
    } else {
      cell.store(cell.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
    }
  }
  T sum() const {
    T total = 0;
    for (const auto& c : cells_) total += c.value.load(std::memory_order_relaxed);
    return total;
  }

 private:
  struct alignas(kCacheLine) Cell {
    std::atomic<T> value{0};
  };
  std::array<Cell, kMaxShards> cells_{};
};

}  // namespace sluice::stats
