// The service time each method has without a queue: the estimator's R_base (QueueEstimator).
//
// One ring of recent "clean" answers per method (calls that met no queue: the estimator decides
// which), from which the mean (what Little's law needs: a queue is the time calls spend beyond
// their mean service time), its standard error, and a high quantile (how slow a call of that
// method gets without a queue) are read. A mean, not a low percentile: for a bimodal method
// (20% at 2 ms, 80% at 40 ms) a low percentile says 2 ms and every 40 ms call reads as queued,
// while the mean of whole cohorts is what the method costs. Bounded: at most max_methods methods,
// kMaxClean answers each, none older than `window`; a method without a clean answer in the
// window is forgotten.
//
// A method that got slower or faster for good (its dependency slowed down, a stall ended, its
// mix of arguments shifted): when the mean of its last kRecent clean answers (16 or 32) lies more
// than kChangeZ standard errors from the mean of the (at least kMinHistory) answers before them,
// and at least half of them lie beyond kDeviantSd standard deviations on that side (sustained:
// one outlier is no change), the service changed, and the baseline is rebuilt from the answers
// since the change (from the first deviant one after which two thirds are; at least kMinClean,
// so never unready).
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
#include "src/core/time.h"

namespace sluice {

class NoloadBaselines {
 public:
  struct Options {
    Duration window = std::chrono::seconds(30);
    std::size_t max_methods = 64;
    bool operator==(const Options&) const = default;
  };
  // A baseline is ready once it rests on this many clean answers.
  static constexpr std::size_t kMinClean = 8;
  // Clean answers kept per method (the most recent).
  static constexpr std::size_t kMaxClean = 1024;
  static constexpr std::array<std::size_t, 2> kRecent = {16, 32};
  static constexpr double kChangeZ = 6;
  static constexpr double kDeviantSd = 1;
  // The answers before the recent ones a change is judged against: enough to have seen the
  // distribution's tail (a method with 10% of its calls 20x slower shows ~6 of them).
  static constexpr std::size_t kMinHistory = 64;
  // The spread a change is measured against is at least this share of the mean: a service as
  // regular as a clock (a simulation, a cache) still changes only by more than 1%.
  static constexpr double kMinRelativeSd = 0.01;

  struct Baseline {
    double mean_ms = 0;
    double sd_ms = 0;  // of one answer
    std::size_t samples = 0;
    double se_ms() const;  // of the mean
  };
  // Low and high quantiles of a ready baseline (p10, p99; with fewer than 100 answers the p99
  // is the largest): sorted on demand, once per change.
  struct Range {
    double p10_ms = 0;
    double p99_ms = 0;
  };

  explicit NoloadBaselines(const Options& options) : options_(options) {}
  void set_options(const Options& options) { options_ = options; }

  // A clean answer of `method` that took `rtt_ms`.
  void add(TimePoint now, uint64_t method, double rtt_ms);
  // Forgets answers older than the window, and methods left without any.
  void expire(TimePoint now);
  void clear() { methods_.clear(); }

  // The method's baseline once ready; nullopt before.
  std::optional<Baseline> find(uint64_t method) const;
  std::optional<Range> range(uint64_t method) const;
  // Whether the method has any clean answer (ready or not).
  bool seen(uint64_t method) const { return methods_.contains(method); }
  // Whether every method seen has a ready baseline.
  bool all_ready() const;
  std::size_t methods() const { return methods_.size(); }
  // Baselines rebuilt because their service changed, since the start.
  uint64_t rebuilds() const { return rebuilds_; }
  // The mean of the method with the most clean answers: the gauge rtt_noload_ms.
  std::optional<double> busiest_noload_ms() const;
  // The smallest p99 of any ready baseline.
  std::optional<double> smallest_p99_ms() const;

  // Gives a method a name for snapshot() (the first name given wins; at most 4 x max_methods).
  void name_method(uint64_t method, std::string_view name);
  std::vector<MethodBaseline> snapshot() const;

 private:
  struct Clean {
    TimePoint at;
    double rtt_ms;
  };
  struct Method {
    std::deque<Clean> clean;  // oldest first
    double sum = 0;
    double sum_sq = 0;
    // Quantiles, recomputed on demand after a change.
    mutable bool dirty = true;
    mutable double p10 = 0;
    mutable double p99 = 0;
  };
  void pop_front(Method& m);
  // Rebuilds `m` from its last answers if they say the service changed (see above).
  void detect_change(Method& m);
  void refresh_quantiles(const Method& m) const;

  Options options_;
  std::unordered_map<uint64_t, Method> methods_;
  std::unordered_map<uint64_t, std::string> names_;
  uint64_t rebuilds_ = 0;
};

}  // namespace sluice
