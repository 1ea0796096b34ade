#include "tools/loadgen/run_summary.h"

#include <algorithm>
#include <utility>

namespace sluice::loadgen {

RunSummary::RunSummary(std::vector<PhaseInfo> phases)
    : phases_(std::move(phases)), per_phase_(phases_.size()) {}

void RunSummary::add(const CallRecord& record) {
  if (record.phase < per_phase_.size()) account(per_phase_[record.phase], record);
  account(overall_, record);
}

void RunSummary::account(Stats& stats, const CallRecord& record) {
  ++stats.slots;
  switch (record.kind) {
    case RecordKind::kSkippedCap:
      ++stats.skipped_cap;
      return;
    case RecordKind::kSkippedLate:
      ++stats.skipped_late;
      return;
    case RecordKind::kCall:
      break;
  }
  ++stats.calls;
  const std::string name = status_name(record.status);
  ++stats.by_status[name];
  const double duration_ms = to_ms(record.latency());
  if (record.status == 0) {
    stats.ok_latency_ms.add(duration_ms);
  } else {
    stats.failed_duration_ms[name].add(duration_ms);
  }
  if (record.queue_us) {
    const double queue_ms = static_cast<double>(*record.queue_us) / 1000.0;
    stats.queue_wait_ms.add(queue_ms);
    if (record.status == 0) stats.ok_queue_wait_ms.add(queue_ms);
  }
  stats.start_lag_ms.add(to_ms(record.start - record.scheduled));
  stats.messages_sent += record.messages_sent;
  stats.send_slots_skipped += record.send_slots_skipped;
}

boost::json::object RunSummary::stats_json(const Stats& stats, Duration window) {
  auto count = [&stats](const char* status) -> uint64_t {
    auto it = stats.by_status.find(status);
    return it == stats.by_status.end() ? 0 : it->second;
  };
  const double seconds = std::chrono::duration<double>(window).count();
  auto per_second = [seconds](uint64_t n) -> boost::json::value {
    if (seconds <= 0) return nullptr;
    return static_cast<double>(n) / seconds;
  };
  boost::json::object o;
  o["window_s"] = seconds;
  o["slots"] = stats.slots;
  o["calls"] = stats.calls;
  o["skipped_cap"] = stats.skipped_cap;
  o["skipped_late"] = stats.skipped_late;
  boost::json::object statuses;
  for (const auto& [name, n] : stats.by_status) statuses[name] = n;
  o["status"] = std::move(statuses);
  o["ok"] = count("OK");
  o["timed_out"] = count("DEADLINE_EXCEEDED");
  o["shed"] = count("RESOURCE_EXHAUSTED");
  o["offered_per_s"] = per_second(stats.slots);
  o["goodput_per_s"] = per_second(count("OK"));
  o["shed_per_s"] = per_second(count("RESOURCE_EXHAUSTED"));
  o["ok_latency_ms"] = stats.ok_latency_ms.to_json();
  o["queue_wait_ms"] = stats.queue_wait_ms.to_json();
  o["ok_queue_wait_ms"] = stats.ok_queue_wait_ms.to_json();
  boost::json::object failed;
  for (const auto& [name, d] : stats.failed_duration_ms) failed[name] = d.to_json();
  o["failed_duration_ms"] = std::move(failed);
  boost::json::object lag = stats.start_lag_ms.to_json();
  o["start_lag_ms"] = std::move(lag);
  if (stats.messages_sent > 0 || stats.send_slots_skipped > 0) {
    o["messages_sent"] = stats.messages_sent;
    o["send_slots_skipped"] = stats.send_slots_skipped;
  }
  return o;
}

boost::json::object RunSummary::to_json() const {
  boost::json::array phases;
  Duration first{0}, last{0};
  for (size_t i = 0; i < phases_.size(); ++i) {
    const PhaseInfo& p = phases_[i];
    boost::json::object o = stats_json(per_phase_[i], p.end - p.start);
    o["name"] = p.name;
    o["start_s"] = std::chrono::duration<double>(p.start).count();
    o["end_s"] = std::chrono::duration<double>(p.end).count();
    phases.push_back(std::move(o));
    first = i == 0 ? p.start : std::min(first, p.start);
    last = std::max(last, p.end);
  }
  boost::json::object out;
  out["phases"] = std::move(phases);
  out["overall"] = stats_json(overall_, last - first);
  return out;
}

}  // namespace sluice::loadgen
