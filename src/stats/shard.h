// Per-thread shard index so hot-path stats are written without contention and merged on read.
#pragma once

#include <cstddef>

namespace sluice::stats {

// Workers take shards 1..kMaxShards-1; every other thread (main, admin) writes shard 0.
inline constexpr std::size_t kMaxShards = 64;
inline constexpr std::size_t kCacheLine = 64;

// Sets the calling thread's shard; a worker calls this once when its thread starts.
void set_thread_shard(std::size_t shard);
std::size_t thread_shard();

}  // namespace sluice::stats
