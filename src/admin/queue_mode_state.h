// The queue-mode state the admin shows (/queues, /history and the dashboard): what each queue's
// frontend and each consumer publish in the stats registry (queue.<q>.*, consumer.<c>.*), named
// and ordered by the configuration, with the consumers' limiters (/limits, listener
// "consumer:<c>"). Read through the registry, as /stats is, so the admin needs nothing of
// src/queue and shows exactly what /stats shows.
#pragma once

#include <array>
#include <boost/json/value.hpp>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/limiter_snapshot.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// How a frontend's calls ended, as /queues and /history name them: each is the counter
// queue.<q>.frontend_rq_<outcome>_total, and together they count every call once
// (frontend_rq_backpressure_wait_total is a part of backpressure, so it is not among them).
inline constexpr std::array<const char*, 8> kQueueOutcomes = {
    "ok",        "backpressure", "enqueue_failed", "timeout",
    "cancelled", "result_error", "unimplemented",  "too_large"};

// The directions a consumer's limiters count their limit changes in
// (filter.consumer:<c>.<f>.limit_<direction>_total).
inline constexpr std::array<const char*, 3> kLimitDirections = {"increase", "decrease",
                                                                "fast_decrease"};

struct QueueModeState {
  // The stats of one queue or consumer, by leaf ("backlog", "frontend_rq_ok_total", ...).
  class Stats {
   public:
    void add(const StatValue& s) { by_leaf_[s.name.leaf] = &s; }
    const StatValue* find(std::string_view leaf) const;
    // A counter's or gauge's value; nullopt without the stat (or for a histogram).
    std::optional<double> number(std::string_view leaf) const;
    // A histogram; nullptr without it.
    const StatValue* histogram(std::string_view leaf) const;
    bool empty() const { return by_leaf_.empty(); }

   private:
    std::map<std::string, const StatValue*, std::less<>> by_leaf_;
  };

  struct Queue {
    std::string name;
    // From the configuration ("" and nullopt when the dump has no such queue).
    std::string redis;
    std::string stream;
    std::string group;
    std::optional<double> max_pending;
    Stats stats;  // queue.<name>.*
  };

  struct Consumer {
    std::string name;
    std::string queue;    // "" when the dump has no such consumer
    std::string cluster;  // ""
    Stats stats;          // consumer.<name>.*
    // Its limiter filters as /limits shows them (listener "consumer:<name>"), in chain order.
    std::vector<const LimiterSnapshot*> limiters;
    // limit_<direction>_total summed over its filters, in kLimitDirections order; nullopt when
    // none of its filters counts them (no adaptive limiter).
    std::array<std::optional<double>, kLimitDirections.size()> adjustments{};

    // The concurrency window: the smallest limit of its limiters (what bounds its reads);
    // nullopt without a limiter.
    std::optional<double> limit() const;
    // The first limiter's p99 that has one (aimd's, of its last evaluation).
    std::optional<double> limiter_p99_ms() const;
  };

  std::vector<Queue> queues;
  std::vector<Consumer> consumers;

  bool empty() const { return queues.empty() && consumers.empty(); }

  // Queues and consumers in configuration order (`config_dump` as /config_dump shows it); when
  // the dump has no "queues" or "consumers" list, whatever the stats name, sorted. The result
  // points into `stats` and `limits`: keep them while it is used.
  static QueueModeState read(const std::vector<StatValue>& stats,
                             const boost::json::value& config_dump,
                             const std::vector<LimiterSnapshot>& limits);
};

// "consumer:<name>": the listener name a consumer's filters carry in their stats and /limits.
std::string consumer_listener(const std::string& consumer);

}  // namespace sluice
