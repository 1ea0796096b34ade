#include "filters/limiter_filter_factory.h"

#include <utility>

#include "filters/limiter_filter.h"
#include "filters/limiters/aimd_limit.h"
#include "filters/limiters/vegas_limit.h"

namespace sluice {
namespace {

PermitGate::Order gate_order(QueueOrder order) {
  switch (order) {
    case QueueOrder::Fifo:
      return PermitGate::Order::Fifo;
    case QueueOrder::Lifo:
      return PermitGate::Order::Lifo;
    case QueueOrder::AdaptiveLifo:
      return PermitGate::Order::AdaptiveLifo;
  }
  return PermitGate::Order::Fifo;
}

}  // namespace

LimiterFilterFactory::LimiterFilterFactory(std::string name, std::string type,
                                           std::shared_ptr<AdmissionController> controller)
    : name_(std::move(name)), type_(std::move(type)), controller_(std::move(controller)) {}

std::unique_ptr<LimiterFilterFactory> LimiterFilterFactory::fixed_semaphore(
    const std::string& listener, const std::string& name, const FixedSemaphoreConfig& config,
    StatsRegistry& registry, const Clock& clock) {
  AdmissionController::Options o{listener,
                                 name,
                                 "fixed_semaphore",
                                 config.max_concurrency,
                                 config.max_queue,
                                 gate_order(config.queue_order),
                                 config.retry_pushback};
  return std::make_unique<LimiterFilterFactory>(
      name, o.type, std::make_shared<AdmissionController>(o, nullptr, registry, clock));
}

std::unique_ptr<LimiterFilterFactory> LimiterFilterFactory::rtt_gradient(
    const std::string& listener, const std::string& name, const RttGradientConfig& config,
    StatsRegistry& registry, const Clock& clock) {
  VegasLimit::Options v;
  v.initial_limit = config.initial_limit;
  v.min_limit = config.min_limit;
  v.max_limit = config.max_limit;
  v.tolerance = config.tolerance;
  v.smoothing = config.smoothing;
  v.queue_allowance = config.queue_allowance;
  v.update_interval = config.update_interval;
  v.noload_window = config.noload_window;
  AdmissionController::Options o{listener,
                                 name,
                                 "rtt_gradient",
                                 config.initial_limit,
                                 config.max_queue,
                                 gate_order(config.queue_order),
                                 config.retry_pushback};
  return std::make_unique<LimiterFilterFactory>(
      name, o.type,
      std::make_shared<AdmissionController>(o, std::make_unique<VegasLimit>(v), registry, clock));
}

std::unique_ptr<LimiterFilterFactory> LimiterFilterFactory::aimd(const std::string& listener,
                                                                 const std::string& name,
                                                                 const AimdConfig& config,
                                                                 StatsRegistry& registry,
                                                                 const Clock& clock) {
  AimdLimit::Options a;
  a.latency_slo = config.latency_slo;
  a.initial_limit = config.initial_limit;
  a.min_limit = config.min_limit;
  a.max_limit = config.max_limit;
  a.increase = config.increase;
  a.backoff = config.backoff;
  a.p99_headroom = config.p99_headroom;
  a.fast_decrease_multiplier = config.fast_decrease_multiplier;
  a.interval = config.interval;
  a.window = config.window;
  AdmissionController::Options o{listener,
                                 name,
                                 "aimd",
                                 config.initial_limit,
                                 config.max_queue,
                                 gate_order(config.queue_order),
                                 config.retry_pushback};
  return std::make_unique<LimiterFilterFactory>(
      name, o.type,
      std::make_shared<AdmissionController>(o, std::make_unique<AimdLimit>(a), registry, clock));
}

std::unique_ptr<StreamFilter> LimiterFilterFactory::create() {
  return std::make_unique<LimiterFilter>(controller_);
}

std::unique_ptr<LimiterSnapshot> LimiterFilterFactory::snapshot() const {
  return controller_->snapshot();
}

}  // namespace sluice
