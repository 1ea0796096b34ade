#include "filters/aimd/aimd.h"

#include "src/config/config_dump.h"

namespace sluice {
namespace {

constexpr std::string_view kAimdType = "aimd";

std::shared_ptr<const FilterParams> read_aimd(const ConfigNode& node) {
  node.check_keys(limiter_keys({"latency_slo", "initial_limit", "min_limit", "max_limit",
                                "increase", "backoff", "p99_headroom", "fast_decrease_multiplier",
                                "interval", "window", "min_samples", "noload_window"}));
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
  if (auto n = node.find("min_samples")) c.min_samples = n->as_uint(1);
  if (auto n = node.find("noload_window")) c.noload_window = n->as_duration();
  read_gate_config(node, c);
  check_limit_bounds(node, c.initial_limit, c.min_limit, c.max_limit);
  return std::make_shared<const FilterParamsOf<AimdConfig>>(c);
}

std::unique_ptr<FilterFactory> make_aimd(const FilterBuildContext& context,
                                         const FilterParams& params) {
  const auto& c = params_of<AimdConfig>(params);
  return make_limiter_filter(context, kAimdType, c.initial_limit, c,
                             std::make_unique<AimdLimit>(c));
}

}  // namespace

void AimdConfig::dump(boost::json::object& out) const {
  out["latency_slo"] = dump_duration(latency_slo);
  out["initial_limit"] = initial_limit;
  out["min_limit"] = min_limit;
  out["max_limit"] = max_limit;
  out["increase"] = increase;
  out["backoff"] = backoff;
  out["p99_headroom"] = p99_headroom;
  out["fast_decrease_multiplier"] = fast_decrease_multiplier;
  out["interval"] = dump_duration(interval);
  out["window"] = dump_duration(window);
  out["min_samples"] = min_samples;
  out["noload_window"] = dump_duration(noload_window);
  dump_gate_config(*this, out);
}

FilterType aimd_filter_type() { return {kAimdType, &read_aimd, &make_aimd}; }

}  // namespace sluice
