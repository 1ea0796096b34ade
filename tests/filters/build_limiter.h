// Builds a limiter filter's factory the way a listener does: through the type's registry entry.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "filters/aimd/aimd.h"
#include "filters/filter_registry.h"
#include "filters/fixed_semaphore/fixed_semaphore.h"
#include "filters/limiter_filter_factory.h"
#include "filters/rtt_gradient/rtt_gradient.h"

namespace sluice {

template <class T>
std::unique_ptr<LimiterFilterFactory> build_limiter(std::string_view type,
                                                    const std::string& listener,
                                                    const std::string& name, const T& params,
                                                    StatsRegistry& registry, const Clock& clock) {
  std::unique_ptr<FilterFactory> f = builtin_filters().find(type)->make(
      FilterBuildContext{listener, name, registry, clock, nullptr}, FilterParamsOf<T>(params));
  return std::unique_ptr<LimiterFilterFactory>(static_cast<LimiterFilterFactory*>(f.release()));
}

}  // namespace sluice
