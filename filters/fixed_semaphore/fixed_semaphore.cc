#include "filters/fixed_semaphore/fixed_semaphore.h"

namespace sluice {
namespace {

constexpr std::string_view kFixedSemaphoreType = "fixed_semaphore";

std::shared_ptr<const FilterParams> read_fixed_semaphore(const ConfigNode& node) {
  node.check_keys(limiter_keys({"max_concurrency"}));
  FixedSemaphoreConfig c;
  c.max_concurrency = node.require("max_concurrency").as_uint(1);
  read_gate_config(node, c);
  return std::make_shared<const FilterParamsOf<FixedSemaphoreConfig>>(c);
}

std::unique_ptr<FilterFactory> make_fixed_semaphore(const FilterBuildContext& context,
                                                    const FilterParams& params) {
  const auto& c = params_of<FixedSemaphoreConfig>(params);
  return make_limiter_filter(context, kFixedSemaphoreType, c.max_concurrency, c, nullptr);
}

}  // namespace

void FixedSemaphoreConfig::dump(boost::json::object& out) const {
  out["max_concurrency"] = max_concurrency;
  dump_gate_config(*this, out);
}

FilterType fixed_semaphore_filter_type() {
  return {kFixedSemaphoreType, &read_fixed_semaphore, &make_fixed_semaphore};
}

}  // namespace sluice
