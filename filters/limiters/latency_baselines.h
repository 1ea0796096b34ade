// What an adaptive limiter (rtt_gradient, aimd) knows of the upstream's latency without load:
// one baseline per method, and whether the samples of a decision show a queue.
//
// Why per method: a service's methods differ in cost. With one baseline, a 2 ms method sets it
// and every 40 ms call of another method reads as queueing (a method-mix shift sheds an idle
// service). Each sample is judged against its own method's baseline; the baselines are bounded in
// number (max_methods) and a method not seen for `window` is forgotten.
//
// Why a sign test and not a minimum: queueing adds delay to every request, so under a standing
// queue nearly every sample is slower than its method's no-load median; without one, about half
// are, whatever the shape of the service-time distribution (uniform, lognormal, bimodal). The
// share of samples above their median is a sign test with a known null distribution
// (Binomial(n, 1/2)), so a decision can demand evidence in proportion to its sample count
// (queueing_evidence()). A minimum-based signal compares a low quantile of interval minima with
// their mean: for a variable service those differ by the distribution's own spread (0.69 for a
// lognormal with sigma 0.5), so an idle service read as congested.
//
// How big the queue is: each judged sample's shift is log(rtt / median) minus its method's
// no-load mean of that log (the offset: 0 for a symmetric distribution, not for a bimodal one);
// exp(-mean shift) is the Vegas gradient RTT_noload / RTT.
//
// Staying free of queueing without probing (what NoloadTracker did with interval minima): only
// "clean" samples train a baseline: those that ran at a concurrency at or below the knee, the
// highest concurrency at which the window has shown no queueing (at least kKneeBelowShare of the
// samples at that level below their median and not significantly fewer than half, every level
// below it passing too). A concurrency where a standing queue inflates every request is never
// evidence for a slower baseline: that is what stops the drift of a baseline re-measured under
// load. A method that got slower or faster for good shows it at clean concurrency: when all of its
// last kFastSamples clean samples are far on one side of its no-load range, the baseline is
// rebuilt from them at once.
// The first samples of a method, before its baseline is ready, are all taken as clean: the best
// evidence there is (the first requests after a start are admitted into an empty upstream), and
// until the levels say more, the knee is the admission concurrency of the fastest of them (the
// old NoloadTracker's rule for its first interval). A baseline learned under load is corrected by
// the fast adjustment once the limit brings requests back to clean concurrency.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "filters/limiters/latency_sample.h"
#include "src/core/time.h"

namespace sluice {

// Whether `above` of `n` judged samples being slower than their medians is a queue rather than
// chance: the share exceeds 0.5 + kEvidenceZ * 0.5 / sqrt(n), which a service without a queue
// does about 1% of the time (9 of 10, 16 of 20, 34 of 50).
inline constexpr double kEvidenceZ = 2.3;
bool queueing_evidence(std::size_t above, std::size_t n);

class LatencyBaselines {
 public:
  struct Options {
    Duration window = std::chrono::seconds(30);  // baselines and the knee look back this far
    uint32_t min_limit = 1;                      // the knee is never below it
    std::size_t max_methods = 64;                // baselines kept; more methods are not judged
  };
  // A method's baseline is ready (judges samples) once it rests on this many clean samples.
  static constexpr std::size_t kMinClean = 8;
  // Clean samples kept per method (the most recent).
  static constexpr std::size_t kMaxClean = 256;
  // Fast adjustment: the last kFastSamples clean samples, all far on one side (beyond the no-load
  // p90 / kFarMargin, or below p10 * kFarMargin): a service without a change gives that less than
  // 0.1^10 of the time, however many samples it serves.
  static constexpr std::size_t kFastSamples = 10;
  // "Far above": slower than the method's no-load p90 divided by this (a sample a service without
  // a queue gives less than 10% of the time; kFarMargin 0.85 is rtt_gradient's default tolerance).
  static constexpr double kFarMargin = 0.85;
  // A concurrency level passes when at least this share of its samples was below the median, with
  // at least kKneeMinSamples samples (0.5 without queueing), and not significantly fewer than half
  // (queueing_evidence() on the share above) once a method's baseline rests on kMaxClean clean
  // samples (since the start, or since its last rebuild). The second test is what a level of
  // thousands of samples fails by one queued call (+12% at 8 busy workers): without it, under CPU
  // noise the knee passed one queued level at a time, each raising the baseline that judged the
  // next, and a cut stops at the knee, so the limit seldom came back below it (simulated:
  // RTT_noload 2.6 -> 9.1 ms and the limit 9 -> 31 on 8 workers in 240 s). Not before: a fresh
  // baseline comes from the first calls, which ran into an empty upstream; judged strictly against
  // it every loaded level failed, the knee fell to 1, nothing trained the baseline and the start
  // cut for a queue that was not there (bench rig, 7,000/s).
  static constexpr double kKneeBelowShare = 0.35;
  static constexpr uint32_t kKneeMinSamples = 8;

  // How one sample was judged.
  struct Judgement {
    bool judged = false;     // its method had a ready baseline
    bool tie = false;        // exactly at the median: no side in the sign test
    bool above = false;      // slower than the method's no-load median
    bool far_above = false;  // slower than its no-load p90 / kFarMargin
    double shift = 0;        // log(rtt / median) - offset, clamped to [-2, 3]
    double delay_ms = 0;     // rtt - median: the time it took beyond its method's no-load median
    // This sample completed a fast adjustment: its method's baseline was rebuilt, so judgements
    // made against the old one (this decision's so far) no longer mean anything.
    bool rebuilt = false;
  };

  explicit LatencyBaselines(const Options& options);
  // A reload: the baselines and their samples stay (the new window applies from the next
  // refresh); a new window restarts the knee's level counts, which are slotted by it.
  void set_options(const Options& options);

  // Judges `s` against its method's baseline as it stands, then lets it train the baseline if
  // it is clean.
  Judgement add(TimePoint now, const LatencySample& s);
  // Recomputes medians and the knee from what add() collected; call once per decision.
  void refresh(TimePoint now);
  // Gives a method a name for snapshot() (the first name given wins; at most 4 x max_methods).
  void name_method(uint64_t method, std::string_view name);

  // The concurrency up to which the window shows no queueing; nullopt before any evidence.
  std::optional<uint32_t> knee() const { return knee_; }
  // The no-load median of the method with the most clean samples: the gauge rtt_noload_ms.
  std::optional<double> busiest_noload_ms() const;
  std::size_t methods() const { return methods_.size(); }
  std::optional<double> noload_ms(uint64_t method) const;
  std::vector<MethodBaseline> snapshot() const;

 private:
  struct Method {
    struct Clean {
      TimePoint at;
      double rtt_ms;
      uint32_t admitted_at;
    };
    std::deque<Clean> clean;  // oldest first
    double median_ms = 0;
    double p10_ms = 0;
    double p90_ms = 0;
    double offset = 0;  // no-load mean of log(rtt / median)
    bool ready = false;
    bool dirty = false;
    std::array<int8_t, kFastSamples> recent{};  // +1 far above, -1 far below, 0 neither (a ring)
    std::size_t recent_next = 0;
    TimePoint last_seen{};
  };
  // Per concurrency level, samples judged below their median and in all, in one time slot.
  struct LevelCounts {
    uint32_t below = 0;
    uint32_t total = 0;
  };
  // The knee's window in kSlots slots of window / kSlots each.
  struct Slot {
    int64_t id = -1;  // which slot of time it holds
    std::vector<LevelCounts> levels;
  };
  static constexpr std::size_t kSlots = 6;
  static constexpr uint32_t kMaxLevel = 4096;
  Duration slot_length() const { return options_.window / static_cast<int>(kSlots); }

  Method* find_or_add(TimePoint now, uint64_t key);
  void recompute(Method& m) const;
  bool clean(uint32_t admitted_at) const;
  void count_level(TimePoint now, uint32_t level, bool below);
  bool fast_adjust(Method& m, TimePoint now);
  void update_knee(TimePoint now);

  Options options_;
  std::unordered_map<uint64_t, Method> methods_;
  std::unordered_map<uint64_t, std::string> names_;  // for snapshot()
  std::array<Slot, kSlots> slots_;
  std::optional<uint32_t> knee_;
};

}  // namespace sluice
