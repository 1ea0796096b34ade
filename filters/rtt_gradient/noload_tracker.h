// Estimates RTT_noload, the RTT of a request that meets no queue, for VegasLimit.
//
// Why not the minimum RTT ever seen (Netflix VegasLimit)? Two known failures:
//  - collapse (concurrency-limits #37): one lucky fast sample (a cache hit, a request that
//    failed fast) becomes the baseline, every later RTT looks congested and the limit is pinned
//    at min_limit for good;
//  - drift (#165): if the baseline is re-measured from whatever the recent samples are, then
//    under sustained load it is measured *with* a standing queue, that queue is then judged
//    normal, the limit grows, the queue grows, and the baseline ratchets up forever.
// Envoy avoids drift by periodically forcing concurrency down to a floor to re-measure, which
// sheds or delays real traffic (envoy #8337, #18152, #38338). We must do neither.
//
// The design rests on one fact: queueing only ever *adds* latency, and it grows with the
// concurrency a request is admitted at. So:
//  1. The unit of evidence is an update interval, summarised by its minimum RTT and the
//     concurrency (permits held at admission) of that fastest request. A single sample cannot
//     move anything by itself.
//  2. The estimate is a low quantile (p10; the third lowest while there are fewer than 30) of
//     interval minimums over `noload_window`. A lucky interval is an outlier below the quantile
//     and is ignored unless it recurs in more than 10% of the window.
//  3. Only "clean" intervals count: those whose fastest request ran at a concurrency no higher
//     than clean_concurrency(), the concurrency up to which the window has shown RTTs at or
//     below the estimate (the third highest such concurrency, so one odd request cannot widen
//     it; never below min_limit). Intervals measured above that knee, where a standing queue
//     inflates even the fastest request, are never evidence for a higher baseline: that is what
//     stops the drift. If the service itself slows down, the gradient drives the limit down
//     until requests run at clean concurrency again, and clean intervals then show the slower
//     service.
//  4. Fast adjustment: when the last kFastIntervals intervals were all clean and all clearly
//     faster (or all clearly slower) than the estimate, the service changed speed: the estimate
//     moves at once to the most conservative of them (the slowest when lowering, the fastest
//     when raising), and older intervals, which describe the old service, are forgotten. One
//     lucky or unlucky interval cannot do this, and loaded intervals never take part. Without
//     the raise, a service that got slower for good would pin the limit at min_limit until the
//     whole window had turned over (Envoy #38338); without the lowering, a baseline raised
//     during a slowdown would keep a standing queue after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>

#include "src/core/time.h"

namespace sluice {

class NoloadTracker {
 public:
  static constexpr double kLowQuantile = 0.1;
  static constexpr size_t kFastIntervals = 5;
  // An interval must be at least this much faster (or 1/kFastMargin slower) than the estimate to
  // count towards a fast adjustment, so that ordinary jitter around the baseline never does.
  static constexpr double kFastMargin = 0.95;

  NoloadTracker(Duration window, uint32_t min_limit);

  // Closes one update interval: its fastest sample and the concurrency that sample ran at.
  void add_interval(TimePoint end, Duration min_rtt, uint32_t in_flight);

  std::optional<Duration> estimate() const { return estimate_; }
  // Intervals whose fastest request ran at or below this concurrency are free of queueing.
  uint32_t clean_concurrency() const;
  size_t intervals() const { return records_.size(); }

 private:
  struct Record {
    TimePoint end;
    Duration min_rtt;
    uint32_t in_flight;
  };

  bool try_fast_adjust(uint32_t clean_limit);
  void update_clean_concurrency();

  const Duration window_;
  const uint32_t min_limit_;
  std::deque<Record> records_;  // oldest first, all within window_
  std::optional<Duration> estimate_;
  uint32_t clean_concurrency_ = 0;
};

}  // namespace sluice
