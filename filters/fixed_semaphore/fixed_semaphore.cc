#include "filters/fixed_semaphore/fixed_semaphore.h"

namespace sluice {
namespace {

constexpr std::string_view kType = "fixed_semaphore";

std::shared_ptr<const FilterParams> read(const ConfigNode& node) {
  node.check_keys(limiter_keys({"max_concurrency"}));
  FixedSemaphoreConfig c;
  c.max_concurrency = node.require("max_concurrency").as_uint(1);
  read_gate_config(node, c);
  return std::make_shared<const FilterParamsOf<FixedSemaphoreConfig>>(c);
}

std::unique_ptr<FilterFactory> make(const FilterBuildContext& context, const FilterParams& params) {
  const auto& c = params_of<FixedSemaphoreConfig>(params);
  return make_limiter_filter(context, kType, c.max_concurrency, c, nullptr);
}

}  // namespace

void FixedSemaphoreConfig::dump(boost::json::object& out) const {
  out["max_concurrency"] = max_concurrency;
  dump_gate_config(*this, out);
}

FilterType fixed_semaphore_filter_type() { return {kType, &read, &make}; }

}  // namespace sluice
