#include "src/admin/limits_render.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>

namespace sluice {
namespace {

boost::json::value optional_number(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

}  // namespace

boost::json::value render_limits_json(const std::vector<LimiterSnapshot>& limits, TimePoint now,
                                      std::chrono::system_clock::time_point now_wall,
                                      const RecentQueueWait& recent) {
  boost::json::array out;
  for (const LimiterSnapshot& l : limits) {
    boost::json::object o;
    o["listener"] = l.listener;
    o["filter"] = l.filter;
    o["type"] = l.type;
    o["limit"] = l.limit;
    o["in_flight"] = l.in_flight;
    o["queued"] = l.queued;
    o["admitted"] = l.admitted;
    o["shed"] = l.shed;
    o["rtt_noload_ms"] = optional_number(l.rtt_noload_ms);
    o["rtt_smoothed_ms"] = optional_number(l.rtt_smoothed_ms);
    o["gradient"] = optional_number(l.gradient);
    o["p99_ms"] = optional_number(l.p99_ms);
    o["queueing"] = optional_number(l.queueing);
    o["tolerated_slowdown"] = optional_number(l.tolerated_slowdown);
    o["queue_calls"] = optional_number(l.queue_calls);
    o["service_calls"] = optional_number(l.service_calls);
    o["queue_delay_ms"] = optional_number(l.queue_delay_ms);
    o["queue_wait_p99_ms_recent"] = optional_number(recent ? recent(l) : std::nullopt);
    boost::json::object classes;
    for (Criticality c : kCriticalities) {
      const ClassSnapshot& cs = l.classes[index_of(c)];
      boost::json::object j;
      j["admitted"] = cs.admitted;
      j["shed"] = cs.shed;
      j["queued"] = cs.queued;
      classes[to_string(c)] = std::move(j);
    }
    o["classes"] = std::move(classes);
    boost::json::array baselines;
    for (const MethodBaseline& b : l.baselines) {
      boost::json::object j;
      j["method"] = b.method;
      j["rtt_noload_ms"] = optional_number(b.rtt_noload_ms);
      j["samples"] = b.samples;
      baselines.push_back(std::move(j));
    }
    o["baselines"] = std::move(baselines);
    boost::json::array decisions;
    for (const LimitDecision& d : l.recent_decisions) {
      // The steady clock has no calendar meaning; the wall time is reconstructed from the age so
      // a wall-clock step (NTP) never reorders decisions.
      const auto age = now - d.at;
      boost::json::object j;
      j["ms_ago"] = std::chrono::duration_cast<std::chrono::milliseconds>(age).count();
      j["at"] =
          iso8601(now_wall - std::chrono::duration_cast<std::chrono::system_clock::duration>(age));
      j["old_limit"] = d.old_limit;
      j["new_limit"] = d.new_limit;
      j["reason"] = d.reason;
      decisions.push_back(std::move(j));
    }
    o["recent_decisions"] = std::move(decisions);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace sluice
