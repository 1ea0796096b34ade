// The admin history: once per interval it reads the stats registry (in queue mode each queue's
// and consumer's stats too) and the live limiter state (AdminHooks::limits) and keeps the last
// `samples` HistorySamples, so /history and a dashboard opened after an incident show what
// happened. Rates are counter deltas over the interval; queue-wait percentiles are histogram
// deltas (HistogramSnapshot::since), so they describe the interval alone, not everything since
// start. Runs on the admin thread only (AdminServer's
// timer drives sample(); the handlers read), so it needs no lock and never touches a worker.
//
// Memory: a HistoryFilterPoint is 128 bytes, a HistoryListenerPoint 56, a HistoryQueuePoint 96,
// a HistoryConsumerPoint 56, a sample 104 plus a heap block per non-empty list, so 600 samples
// cost ~77 KB per filter, ~34 KB per listener or consumer, ~58 KB per queue and ~82 KB besides.
// The histogram windows add merged snapshots (16 bytes per non-empty bucket; queue waits from
// 1 us to 10 s span at most ~370 buckets, ~6 KB): recent_intervals + 1 of them for a filter's
// queue_wait_us and for a queue's or consumer's duration, two for every other tracked
// histogram. One listener with three filters: about 0.3 MB of samples plus up to 0.2 MB of
// windows; a queue and a consumer add about 0.25 MB. memory_bytes() counts it (and /history
// shows it).
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "src/admin/admin_hooks.h"
#include "src/admin/history_sample.h"
#include "src/core/time.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// Fixed rather than in YAML: 600 x 1 s is the ten minutes the dashboard shows, and the memory
// above is small enough not to need a knob. Tests shorten the interval through AdminServer.
struct HistoryOptions {
  Duration interval = std::chrono::seconds(1);
  std::size_t samples = 600;
  // /limits' queue_wait_p99_ms_recent spans this many intervals (10 s).
  std::size_t recent_intervals = 10;
};

class HistorySampler {
 public:
  // `stats` and `hooks` must outlive the sampler.
  HistorySampler(StatsRegistry& stats, AdminHooks& hooks, HistoryOptions options = {});

  // Takes one sample: `now` (steady) times the interval for rates, `wall` stamps the sample.
  // The first sample has no rates and no percentiles (there is no interval before it).
  void sample(TimePoint now, std::chrono::system_clock::time_point wall);

  const std::deque<HistorySample>& samples() const { return samples_; }
  const HistoryOptions& options() const { return options_; }

  // The p99 queue wait (ms) of a filter over the last recent_intervals intervals (fewer just
  // after start), from its queue_wait_us histogram; nullopt when nothing waited in that window
  // or the filter has no such histogram.
  std::optional<double> recent_queue_wait_p99_ms(const std::string& listener,
                                                 const std::string& filter) const;

  // Queue mode, for /queues: what a histogram (queue.<q>.frontend_rq_time_us,
  // consumer.<c>.consumer_rq_time_us; by dotted name) recorded over the last recent_intervals
  // intervals, nullptr when nothing was recorded in that window; valid until the next sample.
  const HistogramSnapshot* recent_histogram(const std::string& dotted) const;
  // Redis's CPU seconds per second over that window, as a queue's frontend polled them; nullopt
  // before two polls in the window.
  std::optional<double> recent_redis_cpu_ratio(const std::string& queue) const;

  // What the kept samples and histogram windows occupy, approximately (heap included).
  std::size_t memory_bytes() const;

 private:
  // Merged snapshots of one histogram at the last few samples, oldest first.
  using HistogramWindow = std::deque<HistogramSnapshot>;

  std::shared_ptr<const HistoryFilterKey> filter_key(const std::string& listener,
                                                     const std::string& filter,
                                                     const std::string& type);
  using Keys = std::map<std::string, std::shared_ptr<const std::string>>;
  static std::shared_ptr<const std::string> intern(Keys& keys, const std::string& name);

  StatsRegistry& stats_;
  AdminHooks& hooks_;
  const HistoryOptions options_;
  std::deque<HistorySample> samples_;
  std::optional<TimePoint> last_sample_;
  // Cumulative counter values at the last sample, by dotted name (or "limits:" + key + field for
  // totals that only /limits has), for the next sample's rates.
  std::map<std::string, double> counters_;
  std::map<std::string, HistogramWindow> histograms_;  // by dotted name
  // Cumulative values over the recent window, for windowed rates (HistoryRound::windowed_rate).
  std::map<std::string, std::deque<std::pair<TimePoint, double>>> windows_;
  std::map<std::string, double> recent_p99_ms_;                 // by "listener/filter"
  std::map<std::string, HistogramSnapshot> recent_histograms_;  // by dotted name
  std::map<std::string, double> recent_rates_;                  // by redis_cpu_key()
  // Interned keys; an entry whose only owner is this map is dropped at the next sample.
  std::map<std::string, std::shared_ptr<const HistoryFilterKey>> filter_keys_;
  Keys listener_keys_;
  Keys queue_keys_;
  Keys consumer_keys_;
};

}  // namespace sluice
