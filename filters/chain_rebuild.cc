#include "filters/chain_rebuild.h"

#include <stdexcept>
#include <utility>

namespace sluice {

ChainRebuild::ChainRebuild(const std::shared_ptr<const FilterChain>& running,
                           const std::vector<FilterConfig>& running_configs,
                           std::vector<FilterConfig> configs, std::string listener,
                           StatsRegistry& registry, const Clock& clock, const FilterRegistry& types)
    : listener_(std::move(listener)), registry_(registry), clock_(clock), types_(types) {
  for (FilterConfig& c : configs) {
    Entry e;
    e.config = std::move(c);
    if (e.config.name.empty()) e.config.name = e.config.type;
    for (std::size_t i = 0; running && i < running_configs.size() && i < running->size(); ++i) {
      const FilterConfig& old = running_configs[i];
      const std::string& old_name = old.name.empty() ? old.type : old.name;
      if (old_name != e.config.name || old.type != e.config.type) continue;
      kept_.push_back(e.config.name + " (" + e.config.type + ")");
      if (old == e.config) {
        e.factory = running->shared_factory(i);
      } else {
        e.previous = running->shared_factory(i);
      }
      break;
    }
    if (!e.factory && !e.previous) {
      const FilterType* type = types_.find(e.config.type);
      if (type == nullptr)
        throw std::invalid_argument("unknown filter type '" + e.config.type + "'");
      if (!e.config.params) {
        throw std::invalid_argument("filter '" + e.config.name + "': no parameters");
      }
      e.factory =
          type->make(FilterBuildContext{listener_, e.config.name, registry_, clock_, nullptr},
                     *e.config.params);
    }
    entries_.push_back(std::move(e));
  }
}

std::shared_ptr<FilterChain> ChainRebuild::commit() {
  std::vector<std::shared_ptr<FilterFactory>> factories;
  for (Entry& e : entries_) {
    if (e.previous) {
      // Found by the constructor, so the type exists and the parameters are its own.
      const FilterType* type = types_.find(e.config.type);
      e.factory = type->make(
          FilterBuildContext{listener_, e.config.name, registry_, clock_, e.previous.get()},
          *e.config.params);
      e.previous.reset();
    }
    factories.push_back(std::move(e.factory));
  }
  entries_.clear();
  if (factories.empty()) return nullptr;
  return std::make_shared<FilterChain>(listener_, std::move(factories));
}

}  // namespace sluice
