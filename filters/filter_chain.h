// A listener's filter chain, built from config and shared by all workers, and the interface
// through which the proxy's stream drives one request through it (see ActiveChain). A reload
// builds a new chain (ChainRebuild) whose kept filters share their state with the old one; a
// request keeps the chain it started with.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "filters/filter.h"
#include "filters/filter_registry.h"
#include "filters/limiter_snapshot.h"
#include "src/config/config.h"
#include "src/core/dispatcher.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// Implemented by the proxy's stream. Called on the stream's dispatcher thread. An implementation
// must not destroy the ActiveChain from inside admit() or shed(): the filter that triggered the
// call is still on the stack. Defer destruction (post it), as streams do anyway.
class ChainCallbacks {
 public:
  virtual ~ChainCallbacks() = default;
  virtual const RequestInfo& request() const = 0;
  virtual Dispatcher& dispatcher() = 0;
  // Every filter passed: send the request upstream now.
  virtual void admit() = 0;
  // Filter `filter_index` rejected the request: answer it locally with `reply` now.
  virtual void shed(const LocalReply& reply, int filter_index) = 0;
};

class FilterChain {
 public:
  FilterChain(std::string listener_name, std::vector<std::shared_ptr<FilterFactory>> factories);

  const std::string& listener_name() const { return listener_name_; }
  size_t size() const { return factories_.size(); }
  FilterFactory& factory(size_t index) const { return *factories_[index]; }
  const std::shared_ptr<FilterFactory>& shared_factory(size_t index) const {
    return factories_[index];
  }
  // Live state of every limiter filter, with the listener filled in, for /limits.
  std::vector<LimiterSnapshot> snapshots() const;

 private:
  const std::string listener_name_;
  std::vector<std::shared_ptr<FilterFactory>> factories_;
};

// Builds a listener's chain from the types of `types`. Throws std::invalid_argument on an
// unknown filter type or a type whose params do not match (the loader prevents both; this is
// startup, so exceptions are fine).
std::unique_ptr<FilterChain> make_filter_chain(const std::vector<FilterConfig>& configs,
                                               const std::string& listener_name,
                                               StatsRegistry& registry, const Clock& clock,
                                               const FilterRegistry& types = builtin_filters());

}  // namespace sluice

// The per-request driver belongs to the same interface: users of the chain get it from here.
#include "filters/active_chain.h"  // IWYU pragma: export
