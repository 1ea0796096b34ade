#include "filters/limiter_filter_factory.h"

#include <utility>

#include "filters/limiter_filter.h"

namespace sluice {

LimiterFilterFactory::LimiterFilterFactory(std::string name, std::string type,
                                           std::shared_ptr<AdmissionController> controller,
                                           LimiterGateConfig rules)
    : name_(std::move(name)),
      type_(std::move(type)),
      controller_(std::move(controller)),
      rules_(std::move(rules)) {}

std::unique_ptr<StreamFilter> LimiterFilterFactory::create() {
  return std::make_unique<LimiterFilter>(controller_, rules_);
}

std::unique_ptr<LimiterSnapshot> LimiterFilterFactory::snapshot() const {
  return controller_->snapshot();
}

}  // namespace sluice
