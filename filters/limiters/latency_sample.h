// One latency sample, as limit algorithms receive it.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/core/time.h"

namespace sluice {

struct LatencySample {
  uint64_t method = 0;  // a hash of the :path (method_key())
  Duration rtt{};       // admission -> first response message (or a trailers-only OK)
  // Permits held while it ran: the larger of the counts when it was admitted and when its answer
  // began (in-flight at admission alone is a lower bound: a burst admitted after it is missed).
  // What a decrease starts from.
  uint32_t concurrency = 1;
  // Permits held when it was admitted, itself included: the requests ahead of it at a FIFO
  // upstream, so what decides whether it could have queued. What the knee is measured in.
  uint32_t admitted_at = 1;
  // When it was admitted (its answer began at admitted + rtt). Unset (the epoch) when the caller
  // does not know: the algorithm takes `now - rtt`.
  TimePoint admitted{};
  // It waited for its permit (demand exceeded the limit when it came).
  bool waited = false;
};

// The key LatencySample::method takes for `path`.
uint64_t method_key(std::string_view path);

}  // namespace sluice
