// type: fixed_semaphore. At most `max_concurrency` requests in flight; the rest wait in the
// permit gate's queue (LimiterGateConfig) or are shed when it is full.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>

#include "filters/filter_registry.h"
#include "filters/limiter_config.h"

namespace sluice {

struct FixedSemaphoreConfig : LimiterGateConfig {
  uint32_t max_concurrency = 0;  // required, >= 1

  bool operator==(const FixedSemaphoreConfig&) const = default;
  void dump(boost::json::object& out) const;
};

FilterType fixed_semaphore_filter_type();

}  // namespace sluice
