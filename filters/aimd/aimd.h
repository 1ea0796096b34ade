// type: aimd. The AIMD limit against a latency SLO (AimdLimit; its options and their defaults
// are the YAML fields) in front of the permit gate's queue (LimiterGateConfig).
#pragma once

#include <boost/json/object.hpp>

#include "filters/aimd/aimd_limit.h"
#include "filters/filter_registry.h"
#include "filters/limiter_config.h"

namespace sluice {

struct AimdConfig : AimdLimit::Options, LimiterGateConfig {
  bool operator==(const AimdConfig&) const = default;
  void dump(boost::json::object& out) const;
};

FilterType aimd_filter_type();

}  // namespace sluice
