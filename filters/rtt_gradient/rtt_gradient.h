// type: rtt_gradient. The Vegas-style limit (VegasLimit; its options and their defaults are the
// YAML fields) in front of the permit gate's queue (LimiterGateConfig).
#pragma once

#include <boost/json/object.hpp>

#include "filters/filter_registry.h"
#include "filters/limiter_config.h"
#include "filters/rtt_gradient/vegas_limit.h"

namespace sluice {

struct RttGradientConfig : VegasLimit::Options, LimiterGateConfig {
  bool operator==(const RttGradientConfig&) const = default;
  void dump(boost::json::object& out) const;
};

FilterType rtt_gradient_filter_type();

}  // namespace sluice
