// One unit of admitted concurrency from a PermitGate. Move-only; returns itself to the gate
// exactly once: on release() or destruction, whichever comes first.
#pragma once

#include <cstdint>
#include <memory>

namespace sluice {

class PermitGate;

class Permit {
 public:
  Permit() = default;
  ~Permit() { release(); }
  Permit(Permit&& other) noexcept;
  Permit& operator=(Permit&& other) noexcept;
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;

  // Returns the permit to its gate, which may hand it straight to a waiter. Idempotent.
  void release();
  bool held() const { return gate_ != nullptr; }
  explicit operator bool() const { return held(); }
  // Permits held at the moment this one was taken, itself included: the concurrency the request
  // was admitted at.
  uint32_t in_flight_at_grant() const { return in_flight_at_grant_; }

 private:
  friend class PermitGate;
  Permit(std::shared_ptr<PermitGate> gate, uint32_t in_flight_at_grant)
      : gate_(std::move(gate)), in_flight_at_grant_(in_flight_at_grant) {}

  std::shared_ptr<PermitGate> gate_;  // keeps the gate alive while the permit is out
  uint32_t in_flight_at_grant_ = 0;
};

}  // namespace sluice
