// How long an entry a frontend appends to a queue's stream now would wait before a consumer
// takes it: the backlog ahead of it over the rate at which the consumers have recently been
// taking entries while they had all they could take. Fed by the frontend's poll of the group
// (XINFO GROUPS every 100 ms); the frontend refuses a call whose remaining deadline is shorter
// than the estimate (RESOURCE_EXHAUSTED before XADD: it would only expire in the stream).
//
// Why this estimator:
// - The stream is FIFO: a new entry is delivered after the `backlog` entries ahead of it, so its
//   wait is the time the consumers take to take `backlog` entries: backlog / drain rate, "lag x
//   service time" with the service time per entry of the whole consumer pool.
// - The drain rate is counted, not modelled: the group's entries-read counter (XINFO GROUPS,
//   Redis 7) is global, so one frontend sees every consumer's deliveries, whoever enqueued them;
//   a frontend's own reply rate would be only its share, and its own enqueue-to-reply times lag
//   behind a change by the whole wait.
// - Only saturated intervals count: a poll interval whose both ends saw a backlog. A consumer
//   reads only as many entries as its limiter can start, so while entries wait every window is
//   full and deliveries measure capacity; while the stream is empty they measure the arrival
//   rate, which says nothing of capacity (a burst after a quiet spell would read as a
//   near-stopped queue and shed calls the consumers could serve). Without saturated evidence
//   there is no estimate and nothing is shed on it.
// - The rate is the deliveries of the saturated intervals of the last `window` plus one, over
//   their length: the one more is an upper bound for a window too short to see a slow pod's
//   next delivery (no delivery does not mean a stopped queue), so the error is on the side of
//   admitting. The wait covers the time to delivery only, not the service time after it: the
//   frontend sheds what cannot make it, not what might not.
// Not thread-safe: one per QueueFrontend (one worker's thread).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>

#include "src/core/time.h"

namespace sluice::queue {

class WaitEstimator {
 public:
  struct Options {
    // Saturated intervals are remembered this long: how fast the rate follows a change.
    Duration window = std::chrono::seconds(2);
    // Saturated time within the window an estimate needs.
    Duration min_evidence = std::chrono::milliseconds(500);
  };

  explicit WaitEstimator(const Clock& clock) : WaitEstimator(clock, Options{}) {}
  WaitEstimator(const Clock& clock, Options options);

  // One poll of the group, now: `backlog` entries not yet delivered; `entries_read` entries
  // delivered since the group began, nullopt when Redis cannot tell (the interval around such a
  // poll is not counted). A counter that went back (Redis restarted, the group was made again)
  // forgets what was measured.
  void observe(int64_t backlog, std::optional<int64_t> entries_read);

  // Entries per second the consumers took while saturated, over the window; nullopt without
  // `min_evidence` of saturated time in it.
  std::optional<double> drain_rate() const;
  // The wait of an entry appended now behind `backlog` entries until its delivery; zero with
  // no backlog, nullopt when there is a backlog but no drain rate yet.
  std::optional<Duration> estimate(int64_t backlog) const;

 private:
  struct Poll {
    TimePoint at;
    int64_t backlog = 0;
    int64_t entries_read = 0;
  };
  struct Interval {
    TimePoint end;
    Duration length{};
    int64_t delivered = 0;
  };

  const Clock& clock_;
  const Options options_;
  std::optional<Poll> last_;
  std::deque<Interval> saturated_;  // oldest first
};

}  // namespace sluice::queue
