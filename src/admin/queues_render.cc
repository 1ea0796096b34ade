#include "src/admin/queues_render.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cmath>

#include "src/core/grpc_status.h"

namespace sluice {
namespace {

boost::json::value number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  // Counters and gauges are whole numbers but for the float gauges: keep integers integral.
  if (*v == std::floor(*v) && std::fabs(*v) < 9.0e15) return static_cast<int64_t>(*v);
  return *v;
}

boost::json::value stat(const QueueModeState::Stats& stats, std::string_view leaf) {
  return number(stats.number(leaf));
}

// Percentiles (ms) of what a histogram recorded in the recent window; null when nothing was.
boost::json::value recent_ms(const QueueRecent& recent, const QueueModeState::Stats& stats,
                             std::string_view leaf) {
  const StatValue* h = stats.histogram(leaf);
  const HistogramSnapshot* w =
      h != nullptr && recent.histogram ? recent.histogram(h->name.dotted()) : nullptr;
  if (w == nullptr || w->count == 0) return nullptr;
  const auto ms = [](uint64_t us) { return static_cast<double>(us) / 1000.0; };
  boost::json::object o;
  o["count"] = w->count;
  o["p50"] = ms(w->quantile(0.5));
  o["p90"] = ms(w->quantile(0.9));
  o["p99"] = ms(w->quantile(0.99));
  o["max"] = ms(w->max);
  return o;
}

boost::json::object queue_json(const QueueModeState::Queue& q, const QueueRecent& recent) {
  const QueueModeState::Stats& s = q.stats;
  boost::json::object o;
  o["queue"] = q.name;
  o["redis"] = q.redis;
  o["stream"] = q.stream;
  o["group"] = q.group;
  o["max_pending"] = number(q.max_pending);
  o["backlog"] = stat(s, "backlog");
  o["pending"] = stat(s, "pending");
  o["stream_length"] = stat(s, "stream_length");
  o["consumers"] = stat(s, "consumers");
  o["open"] = stat(s, "frontend_rq_open");
  o["drain_rate"] = stat(s, "drain_rate");
  o["estimated_wait_ms"] = stat(s, "estimated_wait_ms");
  boost::json::object requests;
  for (const char* outcome : kQueueOutcomes) {
    requests[outcome] = stat(s, std::string("frontend_rq_") + outcome + "_total");
  }
  o["requests"] = std::move(requests);
  o["backpressure_wait"] = stat(s, "frontend_rq_backpressure_wait_total");
  o["reply_decode_errors"] = stat(s, "frontend_reply_decode_error_total");
  o["e2e_ms_recent"] = recent_ms(recent, s, "frontend_rq_time_us");
  boost::json::object redis;
  // 0 until the first INFO answer: unknown, not a Redis using nothing.
  const auto memory = s.number("redis_used_memory_bytes");
  redis["used_memory_bytes"] = memory && *memory > 0 ? number(memory) : nullptr;
  const auto cpu = s.number("redis_cpu_seconds");
  redis["cpu_seconds"] = cpu && *cpu > 0 ? number(cpu) : nullptr;
  redis["cpu_ratio_recent"] =
      number(recent.redis_cpu_ratio ? recent.redis_cpu_ratio(q.name) : std::nullopt);
  o["redis_info"] = std::move(redis);
  return o;
}

boost::json::object consumer_json(const QueueModeState::Consumer& c, const QueueRecent& recent) {
  const QueueModeState::Stats& s = c.stats;
  boost::json::object o;
  o["consumer"] = c.name;
  o["queue"] = c.queue;
  o["cluster"] = c.cluster;
  o["limit"] = number(c.limit());
  o["in_flight"] = stat(s, "consumer_rq_active");
  o["window"] = stat(s, "consumer_window");
  o["p99_ms"] = number(c.limiter_p99_ms());
  o["read"] = stat(s, "consumer_rq_total");
  o["completed"] = stat(s, "consumer_rq_completed_total");
  // Only the statuses that occurred: seventeen zeros would hide the one that matters.
  boost::json::object by_status;
  for (int code = 0; code < kGrpcStatusCount; ++code) {
    const auto v = s.number("consumer_rq_completed_grpc_status_" + std::to_string(code) + "_total");
    if (v && *v > 0) by_status[grpc_status_name(static_cast<GrpcStatus>(code))] = number(v);
  }
  if (const auto v = s.number("consumer_rq_completed_grpc_status_invalid_total"); v && *v > 0) {
    by_status["invalid"] = number(v);
  }
  o["completed_by_status"] = std::move(by_status);
  o["expired"] = stat(s, "consumer_rq_expired_total");
  o["dead_lettered"] = stat(s, "consumer_rq_dead_lettered_total");
  o["claimed"] = stat(s, "consumer_rq_claimed_total");
  o["reply_failed"] = stat(s, "consumer_reply_failed_total");
  o["read_errors"] = stat(s, "consumer_read_error_total");
  o["demand_pressure"] = stat(s, "consumer_demand_pressure_total");
  bool adaptive = false;
  boost::json::object adjustments;
  for (std::size_t d = 0; d < kLimitDirections.size(); ++d) {
    adaptive = adaptive || c.adjustments[d].has_value();
    adjustments[kLimitDirections[d]] = number(c.adjustments[d]);
  }
  o["adjustments"] = adaptive ? boost::json::value(std::move(adjustments)) : nullptr;
  o["rq_time_ms_recent"] = recent_ms(recent, s, "consumer_rq_time_us");
  boost::json::array limiters;
  for (const LimiterSnapshot* l : c.limiters) {
    boost::json::object j;
    j["filter"] = l->filter;
    j["type"] = l->type;
    j["limit"] = l->limit;
    j["in_flight"] = l->in_flight;
    j["queued"] = l->queued;
    j["p99_ms"] = number(l->p99_ms);
    limiters.push_back(std::move(j));
  }
  o["limiters"] = std::move(limiters);
  return o;
}

}  // namespace

boost::json::value render_queues_json(const QueueModeState& state, const QueueRecent& recent) {
  boost::json::object out;
  out["recent_window_s"] = number(recent.window_s);
  boost::json::array queues;
  for (const QueueModeState::Queue& q : state.queues) queues.push_back(queue_json(q, recent));
  out["queues"] = std::move(queues);
  boost::json::array consumers;
  for (const QueueModeState::Consumer& c : state.consumers) {
    consumers.push_back(consumer_json(c, recent));
  }
  out["consumers"] = std::move(consumers);
  return out;
}

}  // namespace sluice
