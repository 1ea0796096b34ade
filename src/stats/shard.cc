#include "src/stats/shard.h"

#include <atomic>
#include <cstdint>

namespace sluice::stats {
namespace {

// Worker shards are written with plain (non-atomic RMW) stores, which is only correct while a
// single thread owns the shard. Claims are tracked so a second thread asking for a shard that is
// already owned (a misconfigured pool, or more workers than shards) falls back to the shared,
// atomically written shard 0 instead of silently losing counts.
std::atomic<uint64_t> g_claimed{0};
static_assert(kMaxShards <= 64, "claims are a 64-bit mask");

// The fast path reads only this trivially destructible value, so it needs no TLS init guard.
thread_local std::size_t t_shard = 0;

// Releases the calling thread's claim when the thread exits, so a later worker pool can reuse it.
struct ShardClaim {
  std::size_t shard = 0;
  ~ShardClaim() { release(); }
  void release() {
    if (shard != 0) g_claimed.fetch_and(~(uint64_t{1} << shard), std::memory_order_acq_rel);
    shard = 0;
  }
};
thread_local ShardClaim t_claim;

}  // namespace

void set_thread_shard(std::size_t shard) {
  t_claim.release();
  t_shard = 0;
  if (shard == 0 || shard >= kMaxShards) return;
  const uint64_t bit = uint64_t{1} << shard;
  if ((g_claimed.fetch_or(bit, std::memory_order_acq_rel) & bit) != 0) return;  // owned elsewhere
  t_claim.shard = shard;
  t_shard = shard;
}

std::size_t thread_shard() { return t_shard; }

}  // namespace sluice::stats
