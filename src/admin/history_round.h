// One sample's bookkeeping for HistorySampler: rates and histogram windows against the previous
// sample's, and what the next sample will compare with (the sampler keeps `counters`,
// `histograms` and `windows` between samples and hands them to the next round).
#pragma once

#include <cmath>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "src/admin/history_sample.h"
#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

class HistoryRound {
 public:
  using HistogramWindow = std::deque<HistogramSnapshot>;
  // A cumulative value at the last few samples, oldest first.
  using ValueWindow = std::deque<std::pair<TimePoint, double>>;

  // `dt`: seconds since the last sample (0 for the first, or when the clock did not move).
  HistoryRound(TimePoint now, double dt, const std::map<std::string, double>& last_counters,
               std::map<std::string, HistogramWindow>& last_histograms,
               std::map<std::string, ValueWindow>& last_windows)
      : now_(now),
        dt_(dt),
        last_counters_(last_counters),
        last_histograms_(last_histograms),
        last_windows_(last_windows) {}

  // Per-second rate of a cumulative count since the last sample; NaN without one, or when the
  // count went backwards (nothing here resets, but a rate must never be negative).
  float rate(const std::string& key, double value);
  // Per-second rate of a cumulative value over the last `depth` samples (fewer just after
  // start): smoother than rate() for a value updated about as often as it is sampled (Redis's
  // CPU seconds, polled every second). nullopt with one sample, or when it went backwards (Redis
  // restarted: its counter starts again, so the window starts again too).
  std::optional<double> windowed_rate(const std::string& key, double value, std::size_t depth);
  // Appends the histogram's snapshot to its window; returns the window (oldest first).
  const HistogramWindow& window(const StatValue& s, std::size_t depth);
  // The values recorded over the last interval alone.
  HistogramSnapshot last_interval(const HistogramWindow& w) const {
    return w.size() >= 2 && dt_ > 0 ? w.back().since(w[w.size() - 2]) : HistogramSnapshot{};
  }
  // The values recorded over the whole window (its first to its last snapshot).
  static HistogramSnapshot whole(const HistogramWindow& w) {
    return w.size() >= 2 ? w.back().since(w.front()) : HistogramSnapshot{};
  }

  static float to_float(double v) { return static_cast<float>(v); }
  static float optional_float(const std::optional<double>& v) {
    return v && std::isfinite(*v) ? to_float(*v) : kNoValue;
  }
  // Quantile q of a window, in ms (the histograms record us); NaN when it is empty.
  static float p_ms(const HistogramSnapshot& window, double q) {
    if (window.count == 0) return kNoValue;
    return to_float(static_cast<double>(window.quantile(q)) / 1000.0);
  }

  std::map<std::string, double> counters;
  std::map<std::string, HistogramWindow> histograms;
  std::map<std::string, ValueWindow> windows;
  std::map<std::string, double> recent;  // queue wait p99 (ms) over the recent window
  // By dotted name: what a histogram recorded over the recent window (/queues' percentiles).
  std::map<std::string, HistogramSnapshot> recent_histograms;
  // By key: windowed rates over the recent window (/queues' Redis CPU).
  std::map<std::string, double> recent_rates;

 private:
  const TimePoint now_;
  const double dt_;
  const std::map<std::string, double>& last_counters_;
  std::map<std::string, HistogramWindow>& last_histograms_;
  std::map<std::string, ValueWindow>& last_windows_;
};

}  // namespace sluice
