// The simulated upstream's service time over the run: consecutive phases, e.g. 10 ms for 12 s,
// 40 ms for 12 s, 10 ms for 12 s (the slowdown of "gRPC under pressure", part 2).
#pragma once

#include <vector>

#include "src/core/time.h"

namespace sluice {

class ServiceSchedule {
 public:
  struct Phase {
    Duration service;
    Duration length;
  };

  explicit ServiceSchedule(std::vector<Phase> phases);

  // Service time of a request whose service starts `since_start` into the run; the last phase
  // extends forever.
  Duration service_at(Duration since_start) const;
  Duration total() const;
  const std::vector<Phase>& phases() const { return phases_; }
  // When phase `index` begins.
  Duration phase_start(size_t index) const;

 private:
  std::vector<Phase> phases_;
};

}  // namespace sluice
