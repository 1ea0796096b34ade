#include "filters/rtt_gradient/rtt_gradient.h"

#include "src/config/config_dump.h"

namespace sluice {
namespace {

constexpr std::string_view kRttGradientType = "rtt_gradient";

std::shared_ptr<const FilterParams> read_rtt_gradient(const ConfigNode& node) {
  node.check_keys(limiter_keys({"initial_limit", "min_limit", "max_limit", "tolerance",
                                "delay_tolerance", "smoothing", "queue_allowance",
                                "update_interval", "noload_window", "min_samples"}));
  RttGradientConfig c;
  if (auto n = node.find("initial_limit")) c.initial_limit = n->as_uint(1);
  if (auto n = node.find("min_limit")) c.min_limit = n->as_uint(1);
  if (auto n = node.find("max_limit")) c.max_limit = n->as_uint(1);
  if (auto n = node.find("tolerance")) c.tolerance = n->as_double(kUnitIntervalOpenLow);
  if (auto n = node.find("delay_tolerance")) c.delay_tolerance = n->as_duration(true);
  if (auto n = node.find("smoothing")) c.smoothing = n->as_double(kUnitIntervalOpenLow);
  if (auto n = node.find_optional("queue_allowance")) {
    c.queue_allowance = n->as_double(kNonNegative);
  }
  if (auto n = node.find("update_interval")) c.update_interval = n->as_duration();
  if (auto n = node.find("noload_window")) c.noload_window = n->as_duration();
  if (auto n = node.find("min_samples")) c.min_samples = n->as_uint(1);
  read_gate_config(node, c);
  check_limit_bounds(node, c.initial_limit, c.min_limit, c.max_limit);
  return std::make_shared<const FilterParamsOf<RttGradientConfig>>(c);
}

std::unique_ptr<FilterFactory> make_rtt_gradient(const FilterBuildContext& context,
                                                 const FilterParams& params) {
  const auto& c = params_of<RttGradientConfig>(params);
  return make_limiter_filter(context, kRttGradientType, c.initial_limit, c,
                             std::make_unique<VegasLimit>(c));
}

}  // namespace

void RttGradientConfig::dump(boost::json::object& out) const {
  out["initial_limit"] = initial_limit;
  out["min_limit"] = min_limit;
  out["max_limit"] = max_limit;
  out["tolerance"] = tolerance;
  out["delay_tolerance"] = dump_duration(delay_tolerance);
  out["smoothing"] = smoothing;
  out["queue_allowance"] = queue_allowance ? boost::json::value(*queue_allowance) : nullptr;
  out["update_interval"] = dump_duration(update_interval);
  out["noload_window"] = dump_duration(noload_window);
  out["min_samples"] = min_samples;
  dump_gate_config(*this, out);
}

FilterType rtt_gradient_filter_type() {
  return {kRttGradientType, &read_rtt_gradient, &make_rtt_gradient};
}

}  // namespace sluice
