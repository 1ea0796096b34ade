#include "filters/limiter_config.h"

#include <boost/json/array.hpp>
#include <string>
#include <utility>

#include "filters/admission_controller.h"
#include "filters/limiter_filter_factory.h"
#include "src/config/config_dump.h"

namespace sluice {

PermitHold LimiterGateConfig::hold_for(std::string_view path) const {
  for (const PermitRule& r : streams) {
    if (path_matches(r.match, path)) return r.hold;
  }
  return PermitHold::End;
}

std::vector<std::string_view> limiter_keys(std::initializer_list<std::string_view> own) {
  std::vector<std::string_view> keys{"type", "name"};
  keys.insert(keys.end(), own.begin(), own.end());
  keys.insert(keys.end(), {"max_queue", "queue_order", "retry_pushback", "streams"});
  return keys;
}

void read_gate_config(const ConfigNode& node, LimiterGateConfig& gate) {
  if (auto n = node.find("max_queue")) gate.max_queue = n->as_uint(0);
  if (auto n = node.find("queue_order")) {
    const std::string v = n->as_one_of({"fifo", "lifo", "adaptive_lifo"});
    gate.queue_order = v == "lifo"            ? QueueOrder::Lifo
                       : v == "adaptive_lifo" ? QueueOrder::AdaptiveLifo
                                              : QueueOrder::Fifo;
  }
  if (auto n = node.find_optional("retry_pushback")) gate.retry_pushback = n->as_duration();
  if (auto list = node.find("streams")) {
    for (const ConfigNode& r : list->elements()) {
      r.check_keys({"match", "permit"});
      PermitRule rule;
      rule.match = r.require("match").as_path_match();
      const std::string hold = r.require("permit").as_one_of({"end", "first_message", "none"});
      rule.hold = hold == "first_message" ? PermitHold::FirstMessage
                  : hold == "none"        ? PermitHold::None
                                          : PermitHold::End;
      gate.streams.push_back(std::move(rule));
    }
  }
}

void dump_gate_config(const LimiterGateConfig& gate, boost::json::object& out) {
  out["max_queue"] = gate.max_queue;
  switch (gate.queue_order) {
    case QueueOrder::Fifo:
      out["queue_order"] = "fifo";
      break;
    case QueueOrder::Lifo:
      out["queue_order"] = "lifo";
      break;
    case QueueOrder::AdaptiveLifo:
      out["queue_order"] = "adaptive_lifo";
      break;
  }
  out["retry_pushback"] = dump_optional_duration(gate.retry_pushback);
  boost::json::array streams;
  for (const PermitRule& r : gate.streams) {
    const char* hold = r.hold == PermitHold::FirstMessage ? "first_message"
                       : r.hold == PermitHold::None       ? "none"
                                                          : "end";
    streams.push_back(boost::json::object{{"match", r.match}, {"permit", hold}});
  }
  out["streams"] = std::move(streams);
}

void check_limit_bounds(const ConfigNode& node, uint32_t initial, uint32_t min, uint32_t max) {
  const auto initial_node = node.find("initial_limit");
  const auto min_node = node.find("min_limit");
  const auto max_node = node.find("max_limit");
  const std::string values = "min_limit (" + std::to_string(min) + ") <= initial_limit (" +
                             std::to_string(initial) + ") <= max_limit (" + std::to_string(max) +
                             ")";
  if (min > max) {
    (max_node ? *max_node : min_node ? *min_node : node).fail("limits must satisfy " + values);
  }
  if (initial < min || initial > max) {
    const auto& bound_node = initial < min ? min_node : max_node;
    (initial_node ? *initial_node
     : bound_node ? *bound_node
                  : node)
        .fail("limits must satisfy " + values);
  }
}

std::unique_ptr<FilterFactory> make_limiter_filter(const FilterBuildContext& context,
                                                   std::string_view type, uint32_t limit,
                                                   const LimiterGateConfig& gate,
                                                   std::unique_ptr<Limiter> algorithm) {
  AdmissionController::Options o;
  o.listener = context.listener;
  o.filter = context.name;
  o.type = std::string(type);
  o.limit = limit;
  o.max_queue = gate.max_queue;
  o.order = gate.queue_order;
  // A reload keeps the filter: the same controller (gate, waiters, algorithm state, stats) takes
  // the new options.
  if (auto* previous = dynamic_cast<LimiterFilterFactory*>(context.previous);
      previous != nullptr && previous->type() == o.type) {
    previous->controller().reconfigure(o, std::move(algorithm));
    return std::make_unique<LimiterFilterFactory>(context.name, o.type,
                                                  previous->shared_controller(), gate);
  }
  return std::make_unique<LimiterFilterFactory>(
      context.name, o.type,
      std::make_shared<AdmissionController>(o, std::move(algorithm), context.stats, context.clock),
      gate);
}

}  // namespace sluice
