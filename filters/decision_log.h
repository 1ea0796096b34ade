// The last few limit changes of one limiter filter, for /limits: a small ring, thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "filters/limiter_snapshot.h"

namespace sluice {

class DecisionLog {
 public:
  static constexpr size_t kCapacity = 32;

  void add(LimitDecision decision);
  std::vector<LimitDecision> recent() const;  // oldest first

 private:
  mutable std::mutex mu_;
  std::deque<LimitDecision> decisions_;
};

}  // namespace sluice
