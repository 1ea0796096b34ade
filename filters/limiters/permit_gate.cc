#include "filters/limiters/permit_gate.h"

#include <algorithm>
#include <utility>

#include "filters/limiters/gate_waiter.h"

namespace sluice {

std::shared_ptr<PermitGate> PermitGate::create(uint32_t limit, uint32_t max_queue, Order order,
                                               const Clock* clock, Duration standing_after) {
  return std::shared_ptr<PermitGate>(
      new PermitGate(limit, max_queue, order, clock, standing_after));
}

PermitGate::PermitGate(uint32_t limit, uint32_t max_queue, Order order, const Clock* clock,
                       Duration standing_after)
    : limit_(limit),
      max_queue_(max_queue),
      order_(order == Order::AdaptiveLifo && clock == nullptr ? Order::Fifo : order),
      clock_(clock),
      standing_after_(standing_after) {}

bool PermitGate::take_newest_locked() const {
  switch (order_.load(std::memory_order_relaxed)) {
    case Order::Fifo:
      return false;
    case Order::Lifo:
      return true;
    case Order::AdaptiveLifo:
      // A standing queue: it has not been empty for standing_after_.
      return clock_->now() - nonempty_since_ >= standing_after_;
  }
  return false;
}

uint32_t PermitGate::try_take() {
  // The only way a permit is ever taken: exact under any contention, never check-then-act.
  uint32_t current = in_flight_.load(std::memory_order_seq_cst);
  while (current < limit_.load(std::memory_order_seq_cst)) {
    if (in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_seq_cst)) {
      return current + 1;
    }
  }
  return 0;
}

std::optional<Permit> PermitGate::try_acquire() {
  if (waiting_.load(std::memory_order_seq_cst) > 0) return std::nullopt;
  if (const uint32_t n = try_take()) return Permit(shared_from_this(), n);
  return std::nullopt;
}

PermitGate::Acquisition PermitGate::acquire(Dispatcher& dispatcher, Criticality criticality,
                                            std::function<void(Permit)> on_grant) {
  Acquisition result;
  // Fast path, lock-free. Skipped while others queue so that arrivals do not overtake them
  // (a newcomer that slips past a waiter enqueued a moment ago is harmless: exactness holds).
  if (waiting_.load(std::memory_order_seq_cst) == 0) {
    if (const uint32_t n = try_take()) {
      result.status = Status::Admitted;
      result.permit = Permit(shared_from_this(), n);
      return result;
    }
  }
  std::vector<std::shared_ptr<GateWaiter>> granted;
  std::shared_ptr<GateWaiter> evicted;
  {
    std::lock_guard lock(mu_);
    if (waiting_.load(std::memory_order_relaxed) == 0) {
      if (const uint32_t n = try_take()) {
        result.status = Status::Admitted;
        result.permit = Permit(shared_from_this(), n);
        return result;
      }
    }
    if (waiting_.load(std::memory_order_relaxed) >= max_queue_.load(std::memory_order_relaxed)) {
      // Full: make room by shedding a less critical waiter, or shed the arrival.
      evicted = evict_locked(criticality);
      if (!evicted) {
        result.status = Status::Rejected;
        return result;
      }
    }
    auto waiter = std::make_shared<GateWaiter>();
    waiter->gate = weak_from_this();
    waiter->dispatcher = &dispatcher;
    waiter->on_grant = std::move(on_grant);
    waiter->criticality = criticality;
    waiter->queued = true;
    if (waiting_.load(std::memory_order_relaxed) == 0 && clock_ != nullptr) {
      nonempty_since_ = clock_->now();
    }
    auto& queue = queues_[index_of(criticality)];
    waiter->position = queue.insert(queue.end(), waiter);
    class_waiting_[index_of(criticality)].fetch_add(1, std::memory_order_relaxed);
    // Publish the waiter, then look for a permit released since our failed CAS: the enqueuer's
    // half of the no-lost-wake-up handshake (see release_one).
    waiting_.fetch_add(1, std::memory_order_seq_cst);
    grant_locked(granted);
    result.status = Status::Queued;
    result.wait = PermitWait(std::move(waiter));
  }
  if (evicted) {
    evicted_.fetch_add(1, std::memory_order_relaxed);
    granted.push_back(std::move(evicted));  // delivered an empty Permit: it is shed
  }
  post_deliveries(granted);
  return result;
}

void PermitGate::unlink_locked(GateWaiter& w) {
  queues_[index_of(w.criticality)].erase(w.position);
  w.queued = false;
  class_waiting_[index_of(w.criticality)].fetch_sub(1, std::memory_order_relaxed);
  waiting_.fetch_sub(1, std::memory_order_seq_cst);
}

std::shared_ptr<GateWaiter> PermitGate::evict_locked(Criticality than) {
  for (const Criticality c : kCriticalities) {
    if (c >= than) return nullptr;  // nothing waiting is less critical than the arrival
    auto& queue = queues_[index_of(c)];
    if (queue.empty()) continue;
    std::shared_ptr<GateWaiter> w = queue.back();  // the newest of the least critical class
    unlink_locked(*w);
    return w;
  }
  return nullptr;
}

void PermitGate::set_limit(uint32_t limit) {
  const uint32_t old = limit_.exchange(limit, std::memory_order_seq_cst);
  if (limit > old) grant_waiters();
}

void PermitGate::set_max_queue(uint32_t max_queue) {
  max_queue_.store(max_queue, std::memory_order_relaxed);
}

void PermitGate::set_order(Order order) {
  std::lock_guard lock(mu_);  // take_newest_locked() reads it under the lock
  if (order == Order::AdaptiveLifo && clock_ == nullptr) order = Order::Fifo;
  // nonempty_since_ is kept whatever the order, so an adaptive queue knows how long it stood.
  order_.store(order, std::memory_order_relaxed);
}

void PermitGate::release_one() {
  // The releaser's half of the handshake: free the permit, then look for waiters.
  in_flight_.fetch_sub(1, std::memory_order_seq_cst);
  grant_waiters();
}

void PermitGate::grant_waiters() {
  if (waiting_.load(std::memory_order_seq_cst) == 0) return;
  std::vector<std::shared_ptr<GateWaiter>> granted;
  {
    std::lock_guard lock(mu_);
    grant_locked(granted);
  }
  post_deliveries(granted);
}

void PermitGate::grant_locked(std::vector<std::shared_ptr<GateWaiter>>& granted) {
  while (waiting_.load(std::memory_order_relaxed) > 0) {
    // The most critical class that has a waiter; queue order within it.
    const auto found =
        std::find_if(queues_.rbegin(), queues_.rend(), [](const auto& q) { return !q.empty(); });
    if (found == queues_.rend()) return;
    std::list<std::shared_ptr<GateWaiter>>* queue = &*found;
    const uint32_t n = try_take();
    if (n == 0) return;
    std::shared_ptr<GateWaiter> w = take_newest_locked() ? queue->back() : queue->front();
    unlink_locked(*w);
    w->grant = Permit(shared_from_this(), n);
    granted.push_back(std::move(w));
  }
}

void PermitGate::post_deliveries(const std::vector<std::shared_ptr<GateWaiter>>& granted) {
  for (const auto& w : granted) {
    w->dispatcher->post([w] {
      Permit permit = std::move(w->grant);
      // The waiter left while the grant travelled: dropping `permit` returns it to the gate,
      // which hands it to the next waiter.
      if (w->cancelled) return;
      w->delivered = true;
      std::function<void(Permit)> on_grant = std::move(w->on_grant);
      on_grant(std::move(permit));
    });
  }
}

bool PermitGate::remove_waiter(GateWaiter& waiter) {
  std::function<void(Permit)> dropped;  // destroyed outside the lock: it may own anything
  {
    std::lock_guard lock(mu_);
    if (!waiter.queued) return false;
    unlink_locked(waiter);
    dropped = std::move(waiter.on_grant);
  }
  return true;
}

}  // namespace sluice
