// The shared record of one request waiting in a PermitGate: the gate's queue and the waiter's
// PermitWait handle both point at it. Private to PermitGate and PermitWait.
#pragma once

#include <functional>
#include <list>
#include <memory>

#include "filters/limiters/permit.h"
#include "src/core/criticality.h"
#include "src/core/dispatcher.h"

namespace sluice {

class PermitGate;

struct GateWaiter {
  std::weak_ptr<PermitGate> gate;  // weak: a queued waiter must not keep its gate alive
  Dispatcher* dispatcher = nullptr;
  // Called with the permit, or with an empty Permit when the waiter was evicted (a full queue
  // made room for a more critical request).
  std::function<void(Permit)> on_grant;
  Criticality criticality = Criticality::Critical;

  // Guarded by the gate's mutex.
  bool queued = false;
  std::list<std::shared_ptr<GateWaiter>>::iterator position;  // in its class's queue

  // Touched only on `dispatcher`'s thread (cancel and delivery both run there, so they never
  // race), except `grant`, which the granting thread fills before posting the delivery.
  bool cancelled = false;
  bool delivered = false;
  Permit grant;
};

}  // namespace sluice
