#include "filters/filter_chain.h"

#include <stdexcept>
#include <utility>

namespace sluice {

FilterChain::FilterChain(std::string listener_name,
                         std::vector<std::shared_ptr<FilterFactory>> factories)
    : listener_name_(std::move(listener_name)), factories_(std::move(factories)) {}

std::vector<LimiterSnapshot> FilterChain::snapshots() const {
  std::vector<LimiterSnapshot> out;
  for (const auto& factory : factories_) {
    if (auto s = factory->snapshot()) {
      s->listener = listener_name_;
      out.push_back(std::move(*s));
    }
  }
  return out;
}

std::unique_ptr<FilterChain> make_filter_chain(const std::vector<FilterConfig>& configs,
                                               const std::string& listener_name,
                                               StatsRegistry& registry, const Clock& clock,
                                               const FilterRegistry& types) {
  std::vector<std::shared_ptr<FilterFactory>> factories;
  for (const FilterConfig& c : configs) {
    const FilterType* type = types.find(c.type);
    if (type == nullptr) throw std::invalid_argument("unknown filter type '" + c.type + "'");
    const std::string& name = c.name.empty() ? c.type : c.name;
    if (!c.params) throw std::invalid_argument("filter '" + name + "': no parameters");
    factories.push_back(
        type->make(FilterBuildContext{listener_name, name, registry, clock, nullptr}, *c.params));
  }
  return std::make_unique<FilterChain>(listener_name, std::move(factories));
}

}  // namespace sluice
