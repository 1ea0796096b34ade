#include "filters/limiters/permit.h"

#include <utility>

#include "filters/limiters/permit_gate.h"

namespace sluice {

Permit::Permit(Permit&& other) noexcept
    : gate_(std::move(other.gate_)), in_flight_at_grant_(other.in_flight_at_grant_) {}

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    release();
    gate_ = std::move(other.gate_);
    in_flight_at_grant_ = other.in_flight_at_grant_;
  }
  return *this;
}

void Permit::release() {
  // Moving the pointer out first makes a second release (or a release re-entered from the gate)
  // a no-op.
  std::shared_ptr<PermitGate> gate = std::move(gate_);
  if (gate) gate->release_one();
}

}  // namespace sluice
