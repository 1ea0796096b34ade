// What every limiter filter (fixed_semaphore, rtt_gradient, aimd) shares: the fields of its
// permit gate's queue, read and dumped here once (each limiter's config struct derives from
// LimiterGateConfig), and the builder of its FilterFactory.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "filters/filter_registry.h"
#include "filters/limiters/limiter.h"
#include "filters/limiters/permit_gate.h"
#include "src/config/config_node.h"

namespace sluice {

// fifo; lifo; adaptive_lifo: FIFO until the queue has not emptied for 100 ms, then LIFO.
using QueueOrder = PermitGate::Order;

// How long a request of a method holds its permit (`streams:` rules). A long-lived stream (a
// watch, a telemetry upload) holding a permit for its whole life would starve the unary calls of
// a small limit.
enum class PermitHold : uint8_t {
  End,           // until the stream ends (the default: right for unary calls and short streams)
  FirstMessage,  // until the first response message (or the end, if that comes first)
  None,          // not limited by this filter at all
};

struct PermitRule {
  std::string match;  // an exact :path, or a prefix ending in '*'
  PermitHold hold = PermitHold::End;

  bool operator==(const PermitRule&) const = default;
};

struct LimiterGateConfig {
  uint32_t max_queue = 1000;  // waiters beyond this are shed at once
  QueueOrder queue_order = QueueOrder::Fifo;
  std::optional<Duration> retry_pushback;  // sent with a shed reply when set
  std::vector<PermitRule> streams;         // first match wins; no match: PermitHold::End

  // The hold for a request with this :path.
  PermitHold hold_for(std::string_view path) const;
  bool operator==(const LimiterGateConfig&) const = default;
};

// type, name, `own` and the gate's keys: what check_keys() allows for a limiter entry.
std::vector<std::string_view> limiter_keys(std::initializer_list<std::string_view> own);
void read_gate_config(const ConfigNode& node, LimiterGateConfig& gate);
void dump_gate_config(const LimiterGateConfig& gate, boost::json::object& out);
// min_limit <= initial_limit <= max_limit, failing at a field the operator actually wrote.
void check_limit_bounds(const ConfigNode& node, uint32_t initial, uint32_t min, uint32_t max);

// The shared state of the filter (AdmissionController: gate, algorithm, stats) and its factory.
// `algorithm` null: a fixed limit of `limit`; otherwise `limit` is ignored (the algorithm's own
// initial limit is used). With context.previous (a reload kept the filter) the previous
// factory's controller is reconfigured and shared instead of a new one being made.
std::unique_ptr<FilterFactory> make_limiter_filter(const FilterBuildContext& context,
                                                   std::string_view type, uint32_t limit,
                                                   const LimiterGateConfig& gate,
                                                   std::unique_ptr<Limiter> algorithm);

}  // namespace sluice
