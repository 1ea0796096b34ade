// The semaphore behind every limiter filter, shared by all workers: exact admission, a bounded
// FIFO, LIFO or adaptive-LIFO queue of waiters, and cross-worker hand-off of released permits.
//
// Traffic classes: waiters queue per criticality, and a grant always goes to the most critical
// class that has a waiter (queue order within a class). A full queue makes room for a more
// critical arrival by evicting the newest waiter of its least critical class (that waiter gets
// an empty Permit and is shed); an arrival that nothing waiting is less critical than is
// rejected. One limit for all classes: classes decide who waits and who is shed, not how much
// the upstream takes.
//
// Adaptive LIFO (Facebook's "Fail at Scale"): FIFO while the queue keeps emptying, LIFO once it
// has not been empty for `standing_after`. Under a standing queue FIFO makes every admitted
// request wait nearly the whole queue-wait budget; LIFO admits the newest, whose wait is about
// one release gap, and lets the oldest reach their budget and be shed. Goodput is unchanged (a
// waiter is still there at every release); admitted latency drops to about the service time.
//
// Invariants (each enforced where noted in permit_gate.cc):
//  - in_flight() <= limit() at every admission: a permit is only ever taken by a CAS from
//    n < limit to n + 1 (try_take). Lowering the limit revokes nothing; admissions stop until
//    in-flight drops below it.
//  - No lost wake-up: whenever a permit is free and someone is queued, some thread will grant
//    it. Releasers decrement in-flight *then* look at the waiter count; enqueuers publish the
//    waiter count *then* retry the CAS (both sequentially consistent). Whichever of the two runs
//    second sees the other's write, so either the releaser grants or the enqueuer does.
//  - A grant is a Permit moved into the waiter and delivered by posting to the waiter's own
//    Dispatcher. If the waiter cancelled in the meantime, the delivery drops the Permit, which
//    releases it, which grants the next waiter: a permit is never lost and never delivered twice.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "filters/limiters/permit.h"
#include "filters/limiters/permit_wait.h"
#include "src/core/criticality.h"
#include "src/core/dispatcher.h"
#include "src/core/time.h"

namespace sluice {

struct GateWaiter;

class PermitGate : public std::enable_shared_from_this<PermitGate> {
 public:
  enum class Order { Fifo, Lifo, AdaptiveLifo };
  static constexpr Duration kDefaultStandingAfter = std::chrono::milliseconds(100);
  enum class Status {
    Admitted,  // `permit` holds the permit: go on
    Queued,    // keep `wait`; on_grant will run on the dispatcher, unless cancelled first
    Rejected,  // the queue is full: shed now
  };
  struct Acquisition {
    Status status = Status::Rejected;
    Permit permit;
    PermitWait wait;
  };

  // Gates are shared (permits keep theirs alive), so they only exist as shared_ptr.
  // `clock` is needed (and must outlive the gate) for Order::AdaptiveLifo only.
  static std::shared_ptr<PermitGate> create(uint32_t limit, uint32_t max_queue, Order order,
                                            const Clock* clock = nullptr,
                                            Duration standing_after = kDefaultStandingAfter);
  PermitGate(const PermitGate&) = delete;
  PermitGate& operator=(const PermitGate&) = delete;

  // Takes a permit now if one is free and nobody is queued ahead; never queues.
  std::optional<Permit> try_acquire();
  // Takes a permit now, or queues as `criticality`. `on_grant` runs later on `dispatcher`'s
  // thread with the permit (or with an empty one if the waiter is evicted), unless the returned
  // PermitWait is cancelled or destroyed first. Never calls `on_grant` synchronously. Any thread.
  Acquisition acquire(Dispatcher& dispatcher, Criticality criticality,
                      std::function<void(Permit)> on_grant);
  Acquisition acquire(Dispatcher& dispatcher, std::function<void(Permit)> on_grant) {
    return acquire(dispatcher, Criticality::Critical, std::move(on_grant));
  }
  // Growing grants queued waiters at once; shrinking revokes nothing. Any thread.
  void set_limit(uint32_t limit);
  // A reload: later arrivals see the new bound and order. Waiters already queued stay, in their
  // order, even beyond a lowered bound (arrivals are then shed, or evict as at a full queue).
  // AdaptiveLifo needs the clock given at creation (without one it stays Fifo). Any thread.
  void set_max_queue(uint32_t max_queue);
  void set_order(Order order);

  uint32_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint32_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  uint32_t queued() const { return waiting_.load(std::memory_order_relaxed); }
  uint32_t queued(Criticality c) const {
    return class_waiting_[index_of(c)].load(std::memory_order_relaxed);
  }
  // Waiters evicted for a more critical arrival, since the gate was made.
  uint64_t evicted() const { return evicted_.load(std::memory_order_relaxed); }
  uint32_t max_queue() const { return max_queue_.load(std::memory_order_relaxed); }
  Order order() const { return order_.load(std::memory_order_relaxed); }

 private:
  friend class Permit;
  friend class PermitWait;
  PermitGate(uint32_t limit, uint32_t max_queue, Order order, const Clock* clock,
             Duration standing_after);
  // Whether the next grant takes the newest waiter (under mu_).
  bool take_newest_locked() const;

  // Returns in-flight after taking a permit, or 0 when none is free.
  uint32_t try_take();
  void release_one();
  // Pops waiters while permits are free; the caller posts their deliveries after unlocking.
  void grant_locked(std::vector<std::shared_ptr<GateWaiter>>& granted);
  // Removes the newest waiter of the least critical class below `than`, for eviction.
  std::shared_ptr<GateWaiter> evict_locked(Criticality than);
  void unlink_locked(GateWaiter& w);
  void grant_waiters();
  static void post_deliveries(const std::vector<std::shared_ptr<GateWaiter>>& granted);
  // Removes a still-queued waiter; false when it was already popped for a grant.
  bool remove_waiter(GateWaiter& waiter);

  std::atomic<uint32_t> limit_;
  std::atomic<uint32_t> in_flight_{0};
  std::atomic<uint32_t> waiting_{0};  // == queue_.size(), readable without the lock
  std::atomic<uint32_t> max_queue_;
  std::atomic<Order> order_;
  const Clock* clock_;
  const Duration standing_after_;
  std::array<std::atomic<uint32_t>, kCriticalityCount> class_waiting_{};
  std::atomic<uint64_t> evicted_{0};
  std::mutex mu_;
  // One queue per class, indexed by index_of(Criticality); front = oldest.
  std::array<std::list<std::shared_ptr<GateWaiter>>, kCriticalityCount> queues_;
  TimePoint nonempty_since_{};  // when the queue last went from empty to non-empty (under mu_)
};

}  // namespace sluice
