// Methods and durations the limiter tests share.
#pragma once

#include <chrono>
#include <cstdint>

#include "filters/limiters/latency_baselines.h"

namespace sluice {

inline const uint64_t kGet = method_key("/pkg.Svc/Get");
inline const uint64_t kReport = method_key("/pkg.Reports/Generate");

// `v` milliseconds, fractional.
inline Duration ms(double v) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(v));
}

}  // namespace sluice
