// A latency/size distribution: log-linear buckets (relative error <= 1/16), sharded per thread,
// merged when read. record() is a few instructions and never allocates or locks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "src/stats/shard.h"

namespace sluice {

// A merged, immutable view of a Histogram at one moment.
struct HistogramSnapshot {
  uint64_t count = 0;
  uint64_t sum = 0;
  uint64_t max = 0;
  // Non-empty fine buckets in increasing order: (inclusive upper bound, count in bucket).
  std::vector<std::pair<uint64_t, uint64_t>> buckets;

  // Value at quantile q in [0,1] (upper bound of the bucket holding it, capped at max);
  // 0 when empty.
  uint64_t quantile(double q) const;
  // Number of recorded values <= bound (bucket-granular: a bucket counts when its upper bound
  // is <= bound). Used for Prometheus `le` buckets.
  uint64_t count_at_most(uint64_t bound) const;
  // The values recorded between `earlier` and this snapshot, both of the same histogram and
  // `earlier` taken first: bucket counts, count and sum are differences, so quantile() of the
  // result is exact at bucket granularity for that window alone. The window's own max is not
  // kept by the histogram: it becomes the upper bound of the highest bucket that grew, capped at
  // this snapshot's max (exact when the largest value ever recorded fell in the window).
  HistogramSnapshot since(const HistogramSnapshot& earlier) const;
};

class Histogram {
 public:
  // Number of sub-buckets per power of two; 16 gives <= 6.25% relative bucket width.
  static constexpr unsigned kSubBucketBits = 4;
  static constexpr unsigned kBuckets = (64 - kSubBucketBits + 1) << kSubBucketBits;

  Histogram();
  ~Histogram();
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void record(uint64_t value);
  HistogramSnapshot snapshot() const;

  // Bucket index for a value and the inclusive upper bound of a bucket (exposed for tests).
  static unsigned bucket_index(uint64_t value);
  static uint64_t bucket_upper_bound(unsigned index);

 private:
  struct Shard;
  // Allocated lazily per shard on first record() from that shard; published with release
  // semantics so readers see a fully constructed shard.
  std::array<std::atomic<Shard*>, stats::kMaxShards> shards_{};
};

}  // namespace sluice
