// The FilterFactory of every limiter filter (fixed_semaphore, rtt_gradient, aimd): one
// AdmissionController shared by all workers, one LimiterFilter per request. Built by
// make_limiter_filter() (limiter_config.h) from each type's registry entry. A reload that keeps
// the filter makes a new factory (with the new rules) around the same controller.
#pragma once

#include <memory>
#include <string>

#include "filters/admission_controller.h"
#include "filters/filter.h"

namespace sluice {

class LimiterFilterFactory final : public FilterFactory {
 public:
  LimiterFilterFactory(std::string name, std::string type,
                       std::shared_ptr<AdmissionController> controller, LimiterGateConfig rules);

  // FilterFactory
  const std::string& name() const override { return name_; }
  const std::string& type() const override { return type_; }
  std::unique_ptr<StreamFilter> create() override;
  std::unique_ptr<LimiterSnapshot> snapshot() const override;
  void on_demand_pressure() override { controller_->on_demand_pressure(); }

  AdmissionController& controller() { return *controller_; }
  const std::shared_ptr<AdmissionController>& shared_controller() const { return controller_; }

 private:
  const std::string name_;
  const std::string type_;
  std::shared_ptr<AdmissionController> controller_;
  const LimiterGateConfig rules_;  // read by this version's requests
};

}  // namespace sluice
