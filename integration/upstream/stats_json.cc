#include "integration/upstream/stats_json.h"

#include <boost/json.hpp>

namespace sluice::itest {

std::string stats_to_json(const sluice::test::StatsResponse& stats) {
  boost::json::object started;
  for (const auto& [method, count] : stats.calls_started()) started[method] = count;
  boost::json::object out;
  out["calls_started"] = std::move(started);
  out["calls_cancelled"] = stats.calls_cancelled();
  out["calls_finished"] = stats.calls_finished();
  out["messages_processed"] = stats.messages_processed();
  out["bytes_processed"] = stats.bytes_processed();
  out["in_flight"] = stats.in_flight();
  out["max_in_flight"] = stats.max_in_flight();
  out["queue_length"] = stats.queue_length();
  out["max_queue_length"] = stats.max_queue_length();
  out["workers"] = stats.workers();
  out["busy_workers"] = stats.busy_workers();
  out["max_in_service"] = stats.max_in_service();
  out["current_service_time_us"] = stats.current_service_time_us();
  out["last_deadline_ms"] = stats.last_deadline_ms();
  out["jobs_dropped"] = stats.jobs_dropped();
  out["uptime_ms"] = stats.uptime_ms();
  return boost::json::serialize(out);
}

}  // namespace sluice::itest
