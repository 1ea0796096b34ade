#include "filters/limiters/permit_wait.h"

#include "filters/limiters/gate_waiter.h"
#include "filters/limiters/permit_gate.h"

namespace sluice {

PermitWait& PermitWait::operator=(PermitWait&& other) noexcept {
  if (this != &other) {
    cancel();
    waiter_ = std::move(other.waiter_);
  }
  return *this;
}

void PermitWait::cancel() {
  std::shared_ptr<GateWaiter> w = std::move(waiter_);
  if (!w || w->delivered || w->cancelled) return;
  if (auto gate = w->gate.lock()) {
    if (gate->remove_waiter(*w)) return;  // still queued: no grant will ever come
  }
  // Popped by a releaser on another thread: the grant is posted and will bounce.
  w->cancelled = true;
  w->on_grant = nullptr;
}

bool PermitWait::waiting() const { return waiter_ && !waiter_->delivered && !waiter_->cancelled; }

}  // namespace sluice
