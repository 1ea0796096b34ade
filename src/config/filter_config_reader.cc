#include "src/config/filter_config_reader.h"

#include <string>

namespace sluice {
namespace {

const DoubleRange kUnitIntervalOpenLow{0.0, true, 1.0, false};  // (0, 1]
const DoubleRange kOpenUnitInterval{0.0, true, 1.0, true};      // (0, 1)
const DoubleRange kPositive{0.0, true};                         // > 0
const DoubleRange kNonNegative{0.0, false};                     // >= 0
const DoubleRange kAboveOne{1.0, true};                         // > 1

QueueOrder read_queue_order(const ConfigNode& node) {
  const std::string v = node.as_one_of({"fifo", "lifo", "adaptive_lifo"});
  if (v == "lifo") return QueueOrder::Lifo;
  if (v == "adaptive_lifo") return QueueOrder::AdaptiveLifo;
  return QueueOrder::Fifo;
}

void read_retry_pushback(const ConfigNode& map, std::optional<Duration>& field) {
  if (auto n = map.find_optional("retry_pushback")) field = n->as_duration();
}

// min_limit <= initial_limit <= max_limit, pointing at a field the operator actually wrote.
void check_limits(const ConfigNode& map, uint32_t initial, uint32_t min, uint32_t max) {
  const auto initial_node = map.find("initial_limit");
  const auto min_node = map.find("min_limit");
  const auto max_node = map.find("max_limit");
  const std::string values = "min_limit (" + std::to_string(min) + ") <= initial_limit (" +
                             std::to_string(initial) + ") <= max_limit (" + std::to_string(max) +
                             ")";
  if (min > max) {
    (max_node ? *max_node : min_node ? *min_node : map).fail("limits must satisfy " + values);
  }
  if (initial < min || initial > max) {
    const auto& bound_node = initial < min ? min_node : max_node;
    (initial_node ? *initial_node
     : bound_node ? *bound_node
                  : map)
        .fail("limits must satisfy " + values);
  }
}

FixedSemaphoreConfig read_fixed_semaphore(const ConfigNode& node) {
  node.check_keys(
      {"type", "name", "max_concurrency", "max_queue", "queue_order", "retry_pushback"});
  FixedSemaphoreConfig c;
  c.max_concurrency = node.require("max_concurrency").as_uint(1);
  if (auto n = node.find("max_queue")) c.max_queue = n->as_uint(0);
  if (auto n = node.find("queue_order")) c.queue_order = read_queue_order(*n);
  read_retry_pushback(node, c.retry_pushback);
  return c;
}

QueueWaitBudgetConfig read_queue_wait_budget(const ConfigNode& node) {
  node.check_keys({"type", "name", "budget", "retry_pushback"});
  QueueWaitBudgetConfig c;
  c.budget = node.require("budget").as_duration();
  read_retry_pushback(node, c.retry_pushback);
  return c;
}

RttGradientConfig read_rtt_gradient(const ConfigNode& node) {
  node.check_keys({"type", "name", "initial_limit", "min_limit", "max_limit", "tolerance",
                   "smoothing", "queue_allowance", "update_interval", "noload_window", "max_queue",
                   "queue_order", "retry_pushback"});
  RttGradientConfig c;
  if (auto n = node.find("initial_limit")) c.initial_limit = n->as_uint(1);
  if (auto n = node.find("min_limit")) c.min_limit = n->as_uint(1);
  if (auto n = node.find("max_limit")) c.max_limit = n->as_uint(1);
  if (auto n = node.find("tolerance")) c.tolerance = n->as_double(kUnitIntervalOpenLow);
  if (auto n = node.find("smoothing")) c.smoothing = n->as_double(kUnitIntervalOpenLow);
  if (auto n = node.find_optional("queue_allowance"))
    c.queue_allowance = n->as_double(kNonNegative);
  if (auto n = node.find("update_interval")) c.update_interval = n->as_duration();
  if (auto n = node.find("noload_window")) c.noload_window = n->as_duration();
  if (auto n = node.find("max_queue")) c.max_queue = n->as_uint(0);
  if (auto n = node.find("queue_order")) c.queue_order = read_queue_order(*n);
  read_retry_pushback(node, c.retry_pushback);
  check_limits(node, c.initial_limit, c.min_limit, c.max_limit);
  return c;
}

AimdConfig read_aimd(const ConfigNode& node) {
  node.check_keys({"type", "name", "latency_slo", "initial_limit", "min_limit", "max_limit",
                   "increase", "backoff", "p99_headroom", "fast_decrease_multiplier", "interval",
                   "window", "max_queue", "queue_order", "retry_pushback"});
  AimdConfig c;
  c.latency_slo = node.require("latency_slo").as_duration();
  if (auto n = node.find("initial_limit")) c.initial_limit = n->as_uint(1);
  if (auto n = node.find("min_limit")) c.min_limit = n->as_uint(1);
  if (auto n = node.find("max_limit")) c.max_limit = n->as_uint(1);
  if (auto n = node.find("increase")) c.increase = n->as_double(kPositive);
  if (auto n = node.find("backoff")) c.backoff = n->as_double(kOpenUnitInterval);
  if (auto n = node.find("p99_headroom")) c.p99_headroom = n->as_double(kUnitIntervalOpenLow);
  if (auto n = node.find("fast_decrease_multiplier")) {
    c.fast_decrease_multiplier = n->as_double(kAboveOne);
  }
  if (auto n = node.find("interval")) c.interval = n->as_duration();
  if (auto n = node.find("window")) c.window = n->as_duration();
  if (auto n = node.find("max_queue")) c.max_queue = n->as_uint(0);
  if (auto n = node.find("queue_order")) c.queue_order = read_queue_order(*n);
  read_retry_pushback(node, c.retry_pushback);
  check_limits(node, c.initial_limit, c.min_limit, c.max_limit);
  return c;
}

}  // namespace

FilterConfig read_filter_config(const ConfigNode& node) {
  // Keys are checked per type below; `type` must be read first to know which keys are allowed.
  if (node.is_null()) node.fail("must be a map with a type, got nothing");
  FilterConfig filter;
  filter.type = node.require("type").as_one_of(
      {"fixed_semaphore", "queue_wait_budget", "rtt_gradient", "aimd"});
  if (auto n = node.find("name")) filter.name = n->as_name();
  if (filter.type == "fixed_semaphore") {
    filter.params = read_fixed_semaphore(node);
  } else if (filter.type == "queue_wait_budget") {
    filter.params = read_queue_wait_budget(node);
  } else if (filter.type == "rtt_gradient") {
    filter.params = read_rtt_gradient(node);
  } else {
    filter.params = read_aimd(node);
  }
  return filter;
}

}  // namespace sluice
