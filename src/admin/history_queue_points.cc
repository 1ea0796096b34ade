#include "src/admin/history_queue_points.h"

namespace sluice {
namespace {

float gauge(const QueueModeState::Stats& stats, std::string_view leaf) {
  return HistoryRound::optional_float(stats.number(leaf));
}

float counter_rate(HistoryRound& round, const QueueModeState::Stats& stats, std::string_view leaf) {
  const StatValue* s = stats.find(leaf);
  if (s == nullptr || s->type == StatType::Histogram) return kNoValue;
  return round.rate(s->name.dotted(), s->number);
}

// The histogram's window (recent_intervals + 1 deep): its last interval for the history, the
// whole window for /queues.
HistogramSnapshot last_interval_and_recent(HistoryRound& round, const StatValue& h,
                                           std::size_t recent_intervals) {
  const HistoryRound::HistogramWindow& w = round.window(h, recent_intervals + 1);
  const HistogramSnapshot recent = HistoryRound::whole(w);
  if (recent.count > 0) round.recent_histograms[h.name.dotted()] = recent;
  return round.last_interval(w);
}

}  // namespace

std::string redis_cpu_key(const std::string& queue) { return "queue:" + queue + ":redis_cpu"; }

void fill_queue_point(HistoryQueuePoint& p, HistoryRound& round, const QueueModeState::Queue& q,
                      std::size_t recent_intervals) {
  const QueueModeState::Stats& s = q.stats;
  for (std::size_t i = 0; i < kQueueOutcomes.size(); ++i) {
    p.rq_per_s[i] =
        counter_rate(round, s, std::string("frontend_rq_") + kQueueOutcomes[i] + "_total");
  }
  p.open = gauge(s, "frontend_rq_open");
  p.backlog = gauge(s, "backlog");
  p.pending = gauge(s, "pending");
  p.stream_length = gauge(s, "stream_length");
  p.consumers = gauge(s, "consumers");
  p.drain_rate = gauge(s, "drain_rate");
  p.estimated_wait_ms = gauge(s, "estimated_wait_ms");
  // 0 until the first INFO answer: not a Redis using no memory.
  const auto memory = s.number("redis_used_memory_bytes");
  if (memory && *memory > 0) p.redis_used_memory_bytes = HistoryRound::to_float(*memory);
  if (const auto cpu = s.number("redis_cpu_seconds"); cpu && *cpu > 0) {
    const std::string key = redis_cpu_key(q.name);
    if (const auto ratio = round.windowed_rate(key, *cpu, recent_intervals + 1)) {
      p.redis_cpu_ratio = HistoryRound::to_float(*ratio);
      round.recent_rates[key] = *ratio;
    }
  }
  if (const StatValue* h = s.histogram("frontend_rq_time_us")) {
    const HistogramSnapshot w = last_interval_and_recent(round, *h, recent_intervals);
    p.e2e_p50_ms = HistoryRound::p_ms(w, 0.5);
    p.e2e_p99_ms = HistoryRound::p_ms(w, 0.99);
  }
}

void fill_consumer_point(HistoryConsumerPoint& p, HistoryRound& round,
                         const QueueModeState::Consumer& c, std::size_t recent_intervals) {
  const QueueModeState::Stats& s = c.stats;
  p.limit = HistoryRound::optional_float(c.limit());
  p.in_flight = gauge(s, "consumer_rq_active");
  p.window = gauge(s, "consumer_window");
  p.read_per_s = counter_rate(round, s, "consumer_rq_total");
  p.completed_ok_per_s = counter_rate(round, s, "consumer_rq_completed_grpc_status_0_total");
  // Every other status, summed: one line for "failed" reads better than sixteen.
  std::optional<double> errors;
  for (int status = 1; status <= 16; ++status) {
    if (auto v =
            s.number("consumer_rq_completed_grpc_status_" + std::to_string(status) + "_total")) {
      errors = errors.value_or(0) + *v;
    }
  }
  if (auto v = s.number("consumer_rq_completed_grpc_status_invalid_total")) {
    errors = errors.value_or(0) + *v;
  }
  if (errors) {
    p.completed_error_per_s = round.rate("consumer:" + c.name + ":completed_error", *errors);
  }
  p.expired_per_s = counter_rate(round, s, "consumer_rq_expired_total");
  p.dead_lettered_per_s = counter_rate(round, s, "consumer_rq_dead_lettered_total");
  p.p99_ms = HistoryRound::optional_float(c.limiter_p99_ms());
  if (const StatValue* h = s.histogram("consumer_rq_time_us")) {
    p.rq_time_p99_ms =
        HistoryRound::p_ms(last_interval_and_recent(round, *h, recent_intervals), 0.99);
  }
}

}  // namespace sluice
