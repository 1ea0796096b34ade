// When each request message's write started and completed, relative to the call's start. A
// blocking write that completes late is HTTP/2 flow control (backpressure) holding the client.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <vector>

#include "src/core/time.h"

namespace sluice::itest {

class SendLog {
 public:
  // `offered_rate` in messages/s (0 = unpaced), reported alongside what was achieved.
  SendLog(TimePoint call_start, double offered_rate);

  void record(TimePoint write_start, TimePoint write_done);

  uint64_t count() const { return done_.size(); }

  // {offered_rate, count, first_ms, last_ms, achieved_rate, write_ms_p50, write_ms_max,
  //  per_second: [writes completed in second 0, 1, ...]}
  boost::json::object summary() const;

 private:
  TimePoint call_start_;
  double offered_rate_;
  std::vector<Duration> done_;     // completion offsets, in order
  std::vector<Duration> blocked_;  // how long each write took
};

}  // namespace sluice::itest
