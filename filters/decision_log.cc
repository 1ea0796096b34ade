#include "filters/decision_log.h"

#include <utility>

namespace sluice {

void DecisionLog::add(LimitDecision decision) {
  std::lock_guard lock(mu_);
  decisions_.push_back(std::move(decision));
  if (decisions_.size() > kCapacity) decisions_.pop_front();
}

std::vector<LimitDecision> DecisionLog::recent() const {
  std::lock_guard lock(mu_);
  return {decisions_.begin(), decisions_.end()};
}

}  // namespace sluice
