#include "src/stats/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <thread>
#include <vector>

// Counts heap allocations made by the current thread, to prove record() allocates only once.
namespace {
thread_local uint64_t t_allocations = 0;
}  // namespace

void* operator new(std::size_t size) {
  ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace sluice {
namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

// What quantile() must return for `sorted` at q: the bucket holding the exact sample at that
// rank, reported by its upper bound and capped at the largest sample.
uint64_t expected_quantile(const std::vector<uint64_t>& sorted, double q) {
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()) - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  const uint64_t exact = sorted[rank - 1];
  return std::min(Histogram::bucket_upper_bound(Histogram::bucket_index(exact)), sorted.back());
}

void expect_quantiles_match(std::vector<uint64_t> values) {
  Histogram h;
  for (uint64_t v : values) h.record(v);
  std::sort(values.begin(), values.end());
  const HistogramSnapshot s = h.snapshot();
  for (double q : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    const uint64_t want = expected_quantile(values, q);
    const uint64_t exact =
        values[std::clamp<std::size_t>(static_cast<std::size_t>(std::ceil(
                                           q * static_cast<double>(values.size()) - 1e-9)),
                                       1, values.size()) -
               1];
    EXPECT_EQ(s.quantile(q), want) << "q=" << q;
    // Bucket precision: never below the true sample, at most 1/16 above it.
    EXPECT_GE(s.quantile(q), exact) << "q=" << q;
    EXPECT_LE(s.quantile(q), exact + exact / 16) << "q=" << q;
  }
}

TEST(HistogramTest, SmallValuesHaveTheirOwnBucket) {
  for (uint64_t v = 0; v < (1u << Histogram::kSubBucketBits); ++v) {
    EXPECT_EQ(Histogram::bucket_index(v), v);
    EXPECT_EQ(Histogram::bucket_upper_bound(static_cast<unsigned>(v)), v);
  }
}

TEST(HistogramTest, EveryValueFallsInsideItsBucketBounds) {
  std::vector<uint64_t> values;
  for (uint64_t v = 0; v <= 70000; ++v) values.push_back(v);
  for (unsigned bit = 1; bit < 64; ++bit) {
    const uint64_t p = uint64_t{1} << bit;
    values.insert(values.end(), {p - 1, p, p + 1, p + p / 3});
  }
  values.push_back(kMaxU64);
  for (uint64_t v : values) {
    const unsigned i = Histogram::bucket_index(v);
    ASSERT_LT(i, Histogram::kBuckets) << v;
    EXPECT_GE(Histogram::bucket_upper_bound(i), v) << v;
    if (i > 0) {
      EXPECT_LT(Histogram::bucket_upper_bound(i - 1), v) << v;
    }
  }
}

TEST(HistogramTest, BucketsAreContiguousAndAtMostOneSixteenthWide) {
  for (unsigned i = 16; i < Histogram::kBuckets; ++i) {
    const uint64_t lower = Histogram::bucket_upper_bound(i - 1) + 1;
    const uint64_t upper = Histogram::bucket_upper_bound(i);
    ASSERT_GE(upper, lower) << i;
    EXPECT_EQ(Histogram::bucket_index(lower), i);
    EXPECT_EQ(Histogram::bucket_index(upper), i);
    EXPECT_LE(upper - lower + 1, lower / 16) << i;
  }
}

TEST(HistogramTest, LastBucketEndsAtLargestValue) {
  EXPECT_EQ(Histogram::bucket_index(kMaxU64), Histogram::kBuckets - 1);
  EXPECT_EQ(Histogram::bucket_upper_bound(Histogram::kBuckets - 1), kMaxU64);
}

TEST(HistogramTest, EmptyHistogramReportsZeros) {
  Histogram h;
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.sum, 0u);
  EXPECT_EQ(s.max, 0u);
  EXPECT_TRUE(s.buckets.empty());
  EXPECT_EQ(s.quantile(0.99), 0u);
  EXPECT_EQ(s.count_at_most(kMaxU64), 0u);
}

TEST(HistogramTest, CountSumAndMaxAreExact) {
  Histogram h;
  for (uint64_t v : {3u, 1000u, 17u, 999999u, 0u}) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.count, 5u);
  EXPECT_EQ(s.sum, 3u + 1000u + 17u + 999999u);
  EXPECT_EQ(s.max, 999999u);
}

TEST(HistogramTest, ConstantValueIsReportedExactlyAtEveryQuantile) {
  Histogram h;
  for (int i = 0; i < 1000; ++i) h.record(12345);
  const HistogramSnapshot s = h.snapshot();
  for (double q : {0.0, 0.5, 0.99, 0.999, 1.0}) EXPECT_EQ(s.quantile(q), 12345u);
}

TEST(HistogramTest, UniformDistributionQuantilesWithinBucketPrecision) {
  std::vector<uint64_t> values;
  for (uint64_t v = 1; v <= 100000; ++v) values.push_back(v);
  std::shuffle(values.begin(), values.end(), std::mt19937_64(1));
  expect_quantiles_match(values);
  Histogram h;
  for (uint64_t v : values) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  // Sanity against the closed form: p50 of 1..N is N/2, p99 is 0.99 N.
  EXPECT_NEAR(static_cast<double>(s.quantile(0.5)), 50000.0, 50000.0 / 16);
  EXPECT_NEAR(static_cast<double>(s.quantile(0.99)), 99000.0, 99000.0 / 16);
  EXPECT_EQ(s.quantile(1.0), 100000u);
}

TEST(HistogramTest, ExponentialDistributionQuantilesMatchClosedForm) {
  // Deterministic exponential sample via the inverse CDF at evenly spaced probabilities, so the
  // sample quantiles equal -mean * ln(1 - q) up to rounding.
  constexpr int kN = 200000;
  constexpr double kMean = 5000.0;  // e.g. 5 ms in microseconds
  std::vector<uint64_t> values;
  for (int i = 0; i < kN; ++i) {
    const double p = (i + 0.5) / kN;
    values.push_back(static_cast<uint64_t>(-kMean * std::log(1.0 - p)));
  }
  expect_quantiles_match(values);
  Histogram h;
  for (uint64_t v : values) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double closed = -kMean * std::log(1.0 - q);
    EXPECT_NEAR(static_cast<double>(s.quantile(q)), closed, closed / 16 + 1) << q;
  }
}

TEST(HistogramTest, BimodalDistributionSeparatesTailFromBody) {
  std::vector<uint64_t> values;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> fast(900, 1100);
  std::uniform_int_distribution<uint64_t> slow(90000, 110000);
  for (int i = 0; i < 9500; ++i) values.push_back(fast(rng));
  for (int i = 0; i < 500; ++i) values.push_back(slow(rng));
  expect_quantiles_match(values);
  Histogram h;
  for (uint64_t v : values) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_LE(s.quantile(0.9), 1100u + 1100u / 16);
  EXPECT_GE(s.quantile(0.99), 90000u);
}

TEST(HistogramTest, CountAtMostCountsWholeBucketsUpToBound) {
  Histogram h;
  for (uint64_t v = 0; v < 16; ++v) h.record(v);  // exact buckets
  h.record(100);                                  // bucket [100, 103]
  h.record(1000);
  const HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.count_at_most(0), 1u);
  EXPECT_EQ(s.count_at_most(15), 16u);
  EXPECT_EQ(s.count_at_most(102), 16u);  // 100's bucket ends at 103: not yet counted
  EXPECT_EQ(s.count_at_most(103), 17u);
  EXPECT_EQ(s.count_at_most(kMaxU64), 18u);
}

TEST(HistogramTest, SnapshotListsNonEmptyBucketsInIncreasingOrder) {
  Histogram h;
  h.record(5000);
  h.record(7);
  h.record(7);
  const HistogramSnapshot s = h.snapshot();
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_EQ(s.buckets[0], std::make_pair(uint64_t{7}, uint64_t{2}));
  EXPECT_EQ(s.buckets[1].first, Histogram::bucket_upper_bound(Histogram::bucket_index(5000)));
  EXPECT_EQ(s.buckets[1].second, 1u);
}

TEST(HistogramTest, RecordingFromManyThreadsMergesExactly) {
  Histogram h;
  Histogram reference;
  constexpr int kWorkers = 4;
  constexpr int kShared = 2;  // non-worker threads share shard 0
  constexpr uint64_t kPerThread = 50000;
  auto value_for = [](int thread, uint64_t n) { return (n * 7919 + thread * 104729) % 1000003; };
  std::vector<std::thread> threads;
  for (int t = 0; t < kWorkers + kShared; ++t) {
    threads.emplace_back([&h, &value_for, t] {
      if (t < kWorkers) stats::set_thread_shard(static_cast<std::size_t>(1 + t));
      for (uint64_t n = 0; n < kPerThread; ++n) h.record(value_for(t, n));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kWorkers + kShared; ++t) {
    for (uint64_t n = 0; n < kPerThread; ++n) reference.record(value_for(t, n));
  }
  const HistogramSnapshot got = h.snapshot();
  const HistogramSnapshot want = reference.snapshot();
  EXPECT_EQ(got.count, (kWorkers + kShared) * kPerThread);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.sum, want.sum);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.buckets, want.buckets);
}

TEST(HistogramTest, SinceIsTheWindowAloneExactAtBucketGranularity) {
  Histogram h;
  Histogram window_only;  // fed only the second phase: what since() must reproduce
  std::mt19937_64 rng(13);
  std::exponential_distribution<double> slow(1.0 / 50000.0);
  std::exponential_distribution<double> fast(1.0 / 800.0);
  for (int i = 0; i < 20000; ++i) h.record(static_cast<uint64_t>(slow(rng)));
  h.record(90'000'000);  // an old outlier that must not leak into the window
  const HistogramSnapshot before = h.snapshot();
  std::vector<uint64_t> values;
  for (int i = 0; i < 5000; ++i) values.push_back(static_cast<uint64_t>(fast(rng)));
  for (uint64_t v : values) {
    h.record(v);
    window_only.record(v);
  }
  const HistogramSnapshot after = h.snapshot();
  const HistogramSnapshot window = after.since(before);
  const HistogramSnapshot want = window_only.snapshot();
  EXPECT_EQ(window.count, 5000u);
  EXPECT_EQ(window.sum, want.sum);
  EXPECT_EQ(window.buckets, want.buckets);
  // The window's max is known only to its bucket: the upper bound of the highest bucket that
  // grew (the outlier's 90 s is far above it).
  EXPECT_EQ(window.max, Histogram::bucket_upper_bound(Histogram::bucket_index(want.max)));
  std::sort(values.begin(), values.end());
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    // The bucket of the exact sample at q, by its upper bound (capped at the window's max).
    auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()) - 1e-9));
    rank = std::clamp<std::size_t>(rank, 1, values.size());
    const uint64_t upper = Histogram::bucket_upper_bound(Histogram::bucket_index(values[rank - 1]));
    EXPECT_EQ(window.quantile(q), std::min(upper, window.max)) << q;
    EXPECT_EQ(Histogram::bucket_index(window.quantile(q)),
              Histogram::bucket_index(want.quantile(q)))
        << q;
  }
  // Since start, the slow phase dominates; the window alone is fast.
  EXPECT_GT(after.quantile(0.99), 100000u);
  EXPECT_LT(window.quantile(0.99), 5000u);
}

TEST(HistogramTest, SinceKeepsTheExactMaxWhenTheLargestValueFellInTheWindow) {
  Histogram h;
  h.record(10);
  const HistogramSnapshot before = h.snapshot();
  h.record(20);
  h.record(1001);
  const HistogramSnapshot window = h.snapshot().since(before);
  EXPECT_EQ(window.count, 2u);
  EXPECT_EQ(window.sum, 1021u);
  EXPECT_EQ(window.max, 1001u);
  EXPECT_EQ(window.quantile(1.0), 1001u);
  EXPECT_EQ(window.quantile(0.5), 20u);
}

TEST(HistogramTest, SinceAnEmptySnapshotIsEverythingAndSinceItselfIsNothing) {
  Histogram h;
  for (uint64_t v : {3u, 300u, 30000u}) h.record(v);
  const HistogramSnapshot s = h.snapshot();
  const HistogramSnapshot all = s.since(HistogramSnapshot{});
  EXPECT_EQ(all.count, s.count);
  EXPECT_EQ(all.sum, s.sum);
  EXPECT_EQ(all.max, s.max);
  EXPECT_EQ(all.buckets, s.buckets);
  const HistogramSnapshot none = s.since(s);
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.sum, 0u);
  EXPECT_EQ(none.max, 0u);
  EXPECT_TRUE(none.buckets.empty());
  EXPECT_EQ(none.quantile(0.99), 0u);
}

TEST(HistogramTest, SinceWithTheSnapshotsSwappedIsEmptyNotWrapped) {
  Histogram h;
  h.record(5);
  const HistogramSnapshot earlier = h.snapshot();
  h.record(5);
  h.record(70);
  const HistogramSnapshot later = h.snapshot();
  const HistogramSnapshot backwards = earlier.since(later);
  EXPECT_EQ(backwards.count, 0u);
  EXPECT_EQ(backwards.sum, 0u);
  EXPECT_TRUE(backwards.buckets.empty());
}

TEST(HistogramTest, RecordAllocatesOnlyOnFirstRecordOfAShard) {
  Histogram h;
  std::thread worker([&h] {
    stats::set_thread_shard(3);
    const uint64_t before_first = t_allocations;
    h.record(1);
    EXPECT_EQ(t_allocations - before_first, 1u);  // the shard itself
    const uint64_t before = t_allocations;
    for (uint64_t v = 0; v < 100000; v += 7) h.record(v);
    EXPECT_EQ(t_allocations, before);
  });
  worker.join();
}

}  // namespace
}  // namespace sluice
