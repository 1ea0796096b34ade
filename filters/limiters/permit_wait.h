// A request's place in a PermitGate's queue. Move-only; cancels itself on destruction. Use it on
// the dispatcher the request waits on: the grant is delivered there, and cancel() and delivery
// never race because they run on the same thread.
#pragma once

#include <memory>

namespace sluice {

struct GateWaiter;

class PermitWait {
 public:
  PermitWait() = default;
  explicit PermitWait(std::shared_ptr<GateWaiter> waiter) : waiter_(std::move(waiter)) {}
  ~PermitWait() { cancel(); }
  PermitWait(PermitWait&& other) noexcept = default;
  PermitWait& operator=(PermitWait&& other) noexcept;
  PermitWait(const PermitWait&) = delete;
  PermitWait& operator=(const PermitWait&) = delete;

  // Leaves the queue. If a grant is already on its way, it will find the waiter gone and return
  // the permit to the gate (which hands it to the next waiter). The grant callback never runs
  // after cancel(). Idempotent; a no-op once the grant was delivered.
  void cancel();
  // Still waiting: neither cancelled nor granted.
  bool waiting() const;

 private:
  std::shared_ptr<GateWaiter> waiter_;
};

}  // namespace sluice
