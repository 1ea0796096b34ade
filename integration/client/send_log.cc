#include "integration/client/send_log.h"

#include <algorithm>

namespace sluice::itest {

SendLog::SendLog(TimePoint call_start, double offered_rate)
    : call_start_(call_start), offered_rate_(offered_rate) {}

void SendLog::record(TimePoint write_start, TimePoint write_done) {
  done_.push_back(write_done - call_start_);
  blocked_.push_back(write_done - write_start);
}

boost::json::object SendLog::summary() const {
  boost::json::object out;
  out["offered_rate"] = offered_rate_;
  out["count"] = done_.size();
  boost::json::array per_second;
  if (done_.empty()) {
    out["per_second"] = std::move(per_second);
    return out;
  }
  double first_ms = to_ms(done_.front());
  double last_ms = to_ms(done_.back());
  out["first_ms"] = first_ms;
  out["last_ms"] = last_ms;
  // Rate between the first and last completion: n-1 intervals. A single write has no rate.
  out["achieved_rate"] = done_.size() > 1 && last_ms > first_ms
                             ? static_cast<double>(done_.size() - 1) * 1000.0 / (last_ms - first_ms)
                             : 0.0;
  std::vector<Duration> blocked = blocked_;
  std::sort(blocked.begin(), blocked.end());
  out["write_ms_p50"] = to_ms(blocked[blocked.size() / 2]);
  out["write_ms_max"] = to_ms(blocked.back());
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(done_.back()).count();
  std::vector<uint64_t> buckets(static_cast<size_t>(seconds) + 1, 0);
  for (Duration d : done_) {
    ++buckets[static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(d).count())];
  }
  for (uint64_t b : buckets) per_second.push_back(b);
  out["per_second"] = std::move(per_second);
  return out;
}

}  // namespace sluice::itest
