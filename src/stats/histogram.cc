#include "src/stats/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sluice {

// One thread's counts. The bucket total is the sample count, so no separate count is kept: the
// hot path does one bucket increment, one sum add and (rarely) a max update.
struct Histogram::Shard {
  std::array<std::atomic<uint64_t>, kBuckets> counts{};
  std::atomic<uint64_t> sum{0};
  std::atomic<uint64_t> max{0};
};

namespace {

constexpr uint64_t kSubBuckets = uint64_t{1} << Histogram::kSubBucketBits;

// Shard 0 is shared by every non-worker thread and needs atomic read-modify-writes; a worker
// shard has a single writer, so a relaxed load + store is enough and avoids locked instructions.
void add(std::atomic<uint64_t>& cell, uint64_t n, bool shared) {
  if (shared) {
    cell.fetch_add(n, std::memory_order_relaxed);
  } else {
    cell.store(cell.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
}

void raise_max(std::atomic<uint64_t>& cell, uint64_t value, bool shared) {
  uint64_t current = cell.load(std::memory_order_relaxed);
  if (value <= current) return;
  if (!shared) {
    cell.store(value, std::memory_order_relaxed);
    return;
  }
  // Each failed exchange means another thread raised max; we stop as soon as max >= value.
  while (value > current &&
         !cell.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
}

}  // namespace

Histogram::Histogram() = default;

Histogram::~Histogram() {
  for (auto& shard : shards_) delete shard.load(std::memory_order_acquire);
}

unsigned Histogram::bucket_index(uint64_t value) {
  if (value < kSubBuckets) return static_cast<unsigned>(value);
  // Keep the leading one plus kSubBucketBits bits below it: (value >> shift) is in
  // [kSubBuckets, 2*kSubBuckets), so each power of two is split into kSubBuckets equal buckets.
  const unsigned shift = static_cast<unsigned>(std::bit_width(value)) - 1 - kSubBucketBits;
  return static_cast<unsigned>(shift * kSubBuckets + (value >> shift));
}

uint64_t Histogram::bucket_upper_bound(unsigned index) {
  if (index < kSubBuckets) return index;
  const unsigned shift = index / static_cast<unsigned>(kSubBuckets) - 1;
  const uint64_t mantissa = kSubBuckets + index % kSubBuckets;
  // Written as lower + width - 1 so the last bucket ends at UINT64_MAX without overflow.
  return (mantissa << shift) + ((uint64_t{1} << shift) - 1);
}

void Histogram::record(uint64_t value) {
  const std::size_t index = stats::thread_shard();
  Shard* shard = shards_[index].load(std::memory_order_acquire);
  if (shard == nullptr) {
    // First record from this shard: allocate and publish. Only shard 0 can race here (several
    // non-worker threads); the loser frees its copy and uses the winner's.
    auto* fresh = new Shard();
    if (shards_[index].compare_exchange_strong(shard, fresh, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
      shard = fresh;
    } else {
      delete fresh;
    }
  }
  const bool shared = index == 0;
  // max before the bucket: a concurrent snapshot that sees the bucket then sees a max at least
  // as large on x86, so quantile() capping at max never falls below the bucket it reports.
  raise_max(shard->max, value, shared);
  add(shard->sum, value, shared);
  add(shard->counts[bucket_index(value)], 1, shared);
}

HistogramSnapshot Histogram::snapshot() const {
  std::array<uint64_t, kBuckets> merged{};
  HistogramSnapshot out;
  for (const auto& slot : shards_) {
    const Shard* shard = slot.load(std::memory_order_acquire);
    if (shard == nullptr) continue;
    for (unsigned i = 0; i < kBuckets; ++i) {
      merged[i] += shard->counts[i].load(std::memory_order_relaxed);
    }
    out.sum += shard->sum.load(std::memory_order_relaxed);
    out.max = std::max(out.max, shard->max.load(std::memory_order_relaxed));
  }
  for (unsigned i = 0; i < kBuckets; ++i) {
    if (merged[i] == 0) continue;
    out.count += merged[i];
    out.buckets.emplace_back(bucket_upper_bound(i), merged[i]);
  }
  return out;
}

uint64_t HistogramSnapshot::quantile(double q) const {
  if (count == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the sample at q (1-based); the small epsilon keeps 0.99 * 100 from rounding up
  // to rank 100 through floating-point error.
  const double exact = q * static_cast<double>(count);
  auto rank = static_cast<uint64_t>(std::ceil(exact - 1e-9));
  rank = std::clamp<uint64_t>(rank, 1, count);
  uint64_t seen = 0;
  for (const auto& [upper, n] : buckets) {
    seen += n;
    if (seen >= rank) return std::min(upper, max);
  }
  return max;
}

uint64_t HistogramSnapshot::count_at_most(uint64_t bound) const {
  uint64_t total = 0;
  for (const auto& [upper, n] : buckets) {
    if (upper > bound) break;
    total += n;
  }
  return total;
}

HistogramSnapshot HistogramSnapshot::since(const HistogramSnapshot& earlier) const {
  HistogramSnapshot out;
  out.buckets.reserve(buckets.size());
  // Both bucket lists are sorted by upper bound; a bucket of `earlier` is always present here
  // too (counts only grow), so one merge pass finds each bucket's earlier count.
  auto old = earlier.buckets.begin();
  for (const auto& [upper, n] : buckets) {
    while (old != earlier.buckets.end() && old->first < upper) ++old;
    const uint64_t before = old != earlier.buckets.end() && old->first == upper ? old->second : 0;
    // A snapshot reads each shard's cells one after another, never atomically as a whole, but
    // each cell only grows: a later snapshot never has less. Clamped all the same, so a caller
    // that mixes up the order gets an empty window rather than a wrapped count.
    if (n <= before) continue;
    out.buckets.emplace_back(upper, n - before);
    out.count += n - before;
  }
  out.sum = sum >= earlier.sum ? sum - earlier.sum : 0;
  if (!out.buckets.empty()) out.max = std::min(out.buckets.back().first, max);
  return out;
}

}  // namespace sluice
