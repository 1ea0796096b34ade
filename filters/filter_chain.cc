#include "filters/filter_chain.h"

#include <stdexcept>
#include <utility>

#include "filters/limiter_filter_factory.h"
#include "filters/queue_wait_budget_factory.h"

namespace sluice {
namespace {

template <typename T>
const T& params_as(const FilterConfig& config) {
  if (const T* p = std::get_if<T>(&config.params)) return *p;
  throw std::invalid_argument("filter '" + config.name + "': parameters do not match type '" +
                              config.type + "'");
}

}  // namespace

FilterChain::FilterChain(std::string listener_name,
                         std::vector<std::unique_ptr<FilterFactory>> factories)
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
                                               StatsRegistry& registry, const Clock& clock) {
  std::vector<std::unique_ptr<FilterFactory>> factories;
  for (const FilterConfig& c : configs) {
    const std::string& name = c.name.empty() ? c.type : c.name;
    if (c.type == "fixed_semaphore") {
      factories.push_back(LimiterFilterFactory::fixed_semaphore(
          listener_name, name, params_as<FixedSemaphoreConfig>(c), registry, clock));
    } else if (c.type == "rtt_gradient") {
      factories.push_back(LimiterFilterFactory::rtt_gradient(
          listener_name, name, params_as<RttGradientConfig>(c), registry, clock));
    } else if (c.type == "aimd") {
      factories.push_back(LimiterFilterFactory::aimd(listener_name, name, params_as<AimdConfig>(c),
                                                     registry, clock));
    } else if (c.type == "queue_wait_budget") {
      factories.push_back(std::make_unique<QueueWaitBudgetFactory>(
          listener_name, name, params_as<QueueWaitBudgetConfig>(c), registry, clock));
    } else {
      throw std::invalid_argument("unknown filter type '" + c.type + "'");
    }
  }
  return std::make_unique<FilterChain>(listener_name, std::move(factories));
}

}  // namespace sluice
