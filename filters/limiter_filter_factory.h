// Builds the limiter filters (`fixed_semaphore`, `rtt_gradient`, `aimd`) of one listener: one
// AdmissionController shared by all workers, one LimiterFilter per request.
#pragma once

#include <memory>
#include <string>

#include "filters/admission_controller.h"
#include "filters/filter.h"
#include "src/config/config.h"

namespace sluice {

class LimiterFilterFactory final : public FilterFactory {
 public:
  LimiterFilterFactory(std::string name, std::string type,
                       std::shared_ptr<AdmissionController> controller);

  static std::unique_ptr<LimiterFilterFactory> fixed_semaphore(const std::string& listener,
                                                               const std::string& name,
                                                               const FixedSemaphoreConfig& config,
                                                               StatsRegistry& registry,
                                                               const Clock& clock);
  static std::unique_ptr<LimiterFilterFactory> rtt_gradient(const std::string& listener,
                                                            const std::string& name,
                                                            const RttGradientConfig& config,
                                                            StatsRegistry& registry,
                                                            const Clock& clock);
  static std::unique_ptr<LimiterFilterFactory> aimd(const std::string& listener,
                                                    const std::string& name,
                                                    const AimdConfig& config,
                                                    StatsRegistry& registry, const Clock& clock);

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
