// The FilterFactory of every limiter filter (fixed_semaphore, rtt_gradient, aimd): one
// AdmissionController shared by all workers, one LimiterFilter per request. Built by
// make_limiter_filter() (limiter_config.h) from each type's registry entry.
#pragma once

#include <memory>
#include <string>

#include "filters/admission_controller.h"
#include "filters/filter.h"

namespace sluice {

class LimiterFilterFactory final : public FilterFactory {
 public:
  LimiterFilterFactory(std::string name, std::string type,
                       std::shared_ptr<AdmissionController> controller);

  // FilterFactory
  const std::string& name() const override { return name_; }
  const std::string& type() const override { return type_; }
  std::unique_ptr<StreamFilter> create() override;
  std::unique_ptr<LimiterSnapshot> snapshot() const override;

  AdmissionController& controller() { return *controller_; }

 private:
  const std::string name_;
  const std::string type_;
  std::shared_ptr<AdmissionController> controller_;
};

}  // namespace sluice
