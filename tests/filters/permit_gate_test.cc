#include "filters/limiters/permit_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <list>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "tests/fakes/fake_dispatcher.h"

namespace sluice {
namespace {

using Status = PermitGate::Status;

// A request as the gate sees it: the permit it got (now or later) and its place in the queue.
struct Request {
  std::optional<Permit> permit;
  PermitWait wait;
  Status status = Status::Rejected;
};

class PermitGateTest : public ::testing::Test {
 protected:
  std::unique_ptr<Request> acquire(FakeDispatcher& d) {
    auto r = std::make_unique<Request>();
    Request* raw = r.get();
    auto got = gate_->acquire(d, [raw](Permit p) { raw->permit = std::move(p); });
    r->status = got.status;
    if (got.status == Status::Admitted) r->permit = std::move(got.permit);
    r->wait = std::move(got.wait);
    return r;
  }
  void make(uint32_t limit, uint32_t max_queue, PermitGate::Order order) {
    gate_ = PermitGate::create(limit, max_queue, order);
  }

  FakeClock clock_;
  FakeDispatcher worker0_{clock_, 0};
  FakeDispatcher worker1_{clock_, 1};
  std::shared_ptr<PermitGate> gate_ = PermitGate::create(2, 3, PermitGate::Order::Fifo);
};

TEST_F(PermitGateTest, AdmitsUpToTheLimitThenQueues) {
  auto a = acquire(worker0_);
  auto b = acquire(worker0_);
  auto c = acquire(worker0_);
  EXPECT_EQ(a->status, Status::Admitted);
  EXPECT_EQ(b->status, Status::Admitted);
  EXPECT_EQ(c->status, Status::Queued);
  EXPECT_EQ(gate_->in_flight(), 2u);
  EXPECT_EQ(gate_->queued(), 1u);
}

TEST_F(PermitGateTest, RejectsAtOnceWhenTheQueueIsFull) {
  std::vector<std::unique_ptr<Request>> rs;
  for (int i = 0; i < 5; ++i) rs.push_back(acquire(worker0_));
  auto sixth = acquire(worker0_);
  EXPECT_EQ(sixth->status, Status::Rejected);
  EXPECT_EQ(gate_->queued(), 3u);
}

TEST_F(PermitGateTest, ZeroMaxQueueMeansNoWaiting) {
  make(1, 0, PermitGate::Order::Fifo);
  auto a = acquire(worker0_);
  auto b = acquire(worker0_);
  EXPECT_EQ(a->status, Status::Admitted);
  EXPECT_EQ(b->status, Status::Rejected);
}

TEST_F(PermitGateTest, GrantIsPostedNeverDeliveredSynchronously) {
  auto a = acquire(worker0_);
  auto b = acquire(worker0_);
  auto c = acquire(worker0_);
  a->permit.reset();
  EXPECT_FALSE(c->permit.has_value());
  EXPECT_EQ(worker0_.posted(), 1u);
  worker0_.run_pending();
  ASSERT_TRUE(c->permit.has_value());
  EXPECT_EQ(c->permit->in_flight_at_grant(), 2u);
}

TEST_F(PermitGateTest, PermitReleasedOnOneWorkerIsHandedToAWaiterOnAnother) {
  auto a = acquire(worker0_);
  auto b = acquire(worker0_);
  auto c = acquire(worker1_);
  a->permit.reset();  // released on worker 0
  EXPECT_EQ(worker0_.posted(), 0u);
  EXPECT_EQ(worker1_.posted(), 1u);  // the grant runs on the waiter's own worker
  worker1_.run_pending();
  EXPECT_TRUE(c->permit.has_value());
}

TEST_F(PermitGateTest, FifoServesTheOldestWaiterFirst) {
  make(1, 10, PermitGate::Order::Fifo);
  auto holder = acquire(worker0_);
  auto first = acquire(worker0_);
  auto second = acquire(worker0_);
  holder->permit.reset();
  worker0_.run_pending();
  EXPECT_TRUE(first->permit.has_value());
  EXPECT_FALSE(second->permit.has_value());
}

TEST_F(PermitGateTest, LifoServesTheNewestWaiterFirst) {
  make(1, 10, PermitGate::Order::Lifo);
  auto holder = acquire(worker0_);
  std::vector<std::unique_ptr<Request>> waiters;
  for (int i = 0; i < 4; ++i) waiters.push_back(acquire(worker0_));
  std::vector<int> order;
  for (int round = 0; round < 4; ++round) {
    if (round == 0) {
      holder->permit.reset();
    } else {
      for (auto& w : waiters) {
        if (w->permit && w->permit->held()) {
          w->permit->release();
          break;
        }
      }
    }
    worker0_.run_pending();
    for (int i = 0; i < 4; ++i) {
      if (waiters[i]->permit && waiters[i]->permit->held()) order.push_back(i);
    }
  }
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1, 0}));
}

// Releases the one held permit among `rs` (or `holder`) and returns the index that got it next.
int hand_on(std::unique_ptr<Request>& holder, std::vector<std::unique_ptr<Request>>& rs,
            FakeDispatcher& worker) {
  if (holder && holder->permit && holder->permit->held()) {
    holder->permit->release();
  } else {
    for (auto& r : rs) {
      if (r->permit && r->permit->held()) {
        r->permit->release();
        r.reset(new Request());  // done: forget it
        break;
      }
    }
  }
  worker.run_pending();
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (rs[i]->permit && rs[i]->permit->held()) return static_cast<int>(i);
  }
  return -1;
}

TEST_F(PermitGateTest, AdaptiveLifoIsFifoWhileTheQueueKeepsEmptying) {
  gate_ = PermitGate::create(1, 10, PermitGate::Order::AdaptiveLifo, &clock_,
                             std::chrono::milliseconds(100));
  auto holder = acquire(worker0_);
  std::vector<std::unique_ptr<Request>> waiters;
  for (int i = 0; i < 3; ++i) waiters.push_back(acquire(worker0_));
  clock_.advance(std::chrono::milliseconds(50));  // queued for less than standing_after
  EXPECT_EQ(hand_on(holder, waiters, worker0_), 0);
}

TEST_F(PermitGateTest, AdaptiveLifoServesTheNewestOnceTheQueueIsStanding) {
  gate_ = PermitGate::create(1, 10, PermitGate::Order::AdaptiveLifo, &clock_,
                             std::chrono::milliseconds(100));
  auto holder = acquire(worker0_);
  std::vector<std::unique_ptr<Request>> waiters;
  for (int i = 0; i < 4; ++i) waiters.push_back(acquire(worker0_));
  clock_.advance(std::chrono::milliseconds(100));  // not empty for standing_after: standing
  EXPECT_EQ(hand_on(holder, waiters, worker0_), 3);
  // A newcomer while the queue still stands is served before the older waiters.
  waiters.push_back(acquire(worker0_));
  std::unique_ptr<Request> none;
  EXPECT_EQ(hand_on(none, waiters, worker0_), 4);
  EXPECT_EQ(hand_on(none, waiters, worker0_), 2);
}

TEST_F(PermitGateTest, AdaptiveLifoGoesBackToFifoAfterTheQueueEmpties) {
  gate_ = PermitGate::create(1, 10, PermitGate::Order::AdaptiveLifo, &clock_,
                             std::chrono::milliseconds(100));
  auto holder = acquire(worker0_);
  std::vector<std::unique_ptr<Request>> waiters;
  waiters.push_back(acquire(worker0_));
  clock_.advance(std::chrono::milliseconds(200));
  EXPECT_EQ(hand_on(holder, waiters, worker0_), 0);  // the queue is empty again
  // A fresh backlog is young again: FIFO.
  for (int i = 0; i < 3; ++i) waiters.push_back(acquire(worker0_));
  clock_.advance(std::chrono::milliseconds(20));
  std::unique_ptr<Request> none;
  EXPECT_EQ(hand_on(none, waiters, worker0_), 1);
}

TEST_F(PermitGateTest, AdaptiveLifoWithoutAClockFallsBackToFifo) {
  gate_ = PermitGate::create(1, 10, PermitGate::Order::AdaptiveLifo, nullptr);
  EXPECT_EQ(gate_->order(), PermitGate::Order::Fifo);
}

TEST_F(PermitGateTest, ShrinkingRevokesNothingAndStopsAdmissionsUntilBelowTheNewLimit) {
  make(4, 10, PermitGate::Order::Fifo);
  std::vector<std::unique_ptr<Request>> held;
  for (int i = 0; i < 4; ++i) held.push_back(acquire(worker0_));
  auto w1 = acquire(worker0_);
  auto w2 = acquire(worker0_);
  gate_->set_limit(2);
  EXPECT_EQ(gate_->in_flight(), 4u);  // admitted work keeps running
  held[0]->permit.reset();
  held[1]->permit.reset();
  worker0_.run_pending();
  EXPECT_FALSE(w1->permit.has_value());  // 2 in flight: not below the new limit
  held[2]->permit.reset();
  worker0_.run_pending();
  EXPECT_TRUE(w1->permit.has_value());
  EXPECT_FALSE(w2->permit.has_value());
  EXPECT_EQ(gate_->in_flight(), 2u);
}

TEST_F(PermitGateTest, GrowingTheLimitWakesWaiters) {
  auto a = acquire(worker0_);
  auto b = acquire(worker0_);
  auto c = acquire(worker0_);
  auto d = acquire(worker1_);
  auto e = acquire(worker1_);
  gate_->set_limit(4);
  clock_.run_pending();
  EXPECT_TRUE(c->permit.has_value());
  EXPECT_TRUE(d->permit.has_value());
  EXPECT_FALSE(e->permit.has_value());
  EXPECT_EQ(gate_->in_flight(), 4u);
  EXPECT_EQ(gate_->queued(), 1u);
}

TEST_F(PermitGateTest, GrantRacingACancelIsReturnedAndGoesToTheNextWaiter) {
  make(1, 10, PermitGate::Order::Fifo);
  auto holder = acquire(worker0_);
  auto gone = acquire(worker1_);
  auto next = acquire(worker0_);
  holder->permit.reset();  // the grant for `gone` is now posted to worker 1
  gone->wait.cancel();     // ... and `gone` is cancelled before worker 1 runs it
  clock_.run_pending();
  EXPECT_FALSE(gone->permit.has_value());
  ASSERT_TRUE(next->permit.has_value());
  EXPECT_EQ(gate_->in_flight(), 1u);
  EXPECT_EQ(gate_->queued(), 0u);
  next->permit.reset();
  EXPECT_EQ(gate_->in_flight(), 0u);
}

TEST_F(PermitGateTest, TryAcquireDoesNotOvertakeTheQueue) {
  make(1, 10, PermitGate::Order::Fifo);
  auto holder = acquire(worker0_);
  auto waiter = acquire(worker0_);
  holder->permit.reset();  // the permit travels to `waiter`
  EXPECT_FALSE(gate_->try_acquire().has_value());
}

// The release-versus-enqueue race, round after round: one thread releases the only permit
// while another finds none and queues. When both are done, a waiter must never sit in the queue
// next to a free permit (a lost wake-up): either it was admitted, or its grant is on its way.
TEST_F(PermitGateTest, ReleaseRacingAnEnqueueNeverStrandsAWaiterNextToAFreePermit) {
  make(1, 10, PermitGate::Order::Fifo);
  constexpr int kRounds = 100000;
  std::atomic<int> go{0};
  std::atomic<int> released{0};
  std::atomic<int> acquired{0};
  std::optional<Permit> holder;
  std::unique_ptr<Request> contender;
  std::thread releaser([&] {
    for (int round = 1; round <= kRounds; ++round) {
      while (go.load(std::memory_order_acquire) != round) std::this_thread::yield();
      holder.reset();
      released.store(round, std::memory_order_release);
    }
  });
  std::thread enqueuer([&] {
    for (int round = 1; round <= kRounds; ++round) {
      while (go.load(std::memory_order_acquire) != round) std::this_thread::yield();
      contender = acquire(worker1_);
      acquired.store(round, std::memory_order_release);
    }
  });
  int stranded = 0;
  for (int round = 1; round <= kRounds; ++round) {
    holder = gate_->try_acquire();
    ASSERT_TRUE(holder.has_value());
    go.store(round, std::memory_order_release);
    while (released.load(std::memory_order_acquire) != round ||
           acquired.load(std::memory_order_acquire) != round) {
      std::this_thread::yield();
    }
    if (contender->status == Status::Queued && gate_->queued() == 1 && gate_->in_flight() == 0) {
      ++stranded;
      contender->wait.cancel();
    }
    worker1_.run_pending();
    contender.reset();
    ASSERT_EQ(gate_->in_flight(), 0u);
    ASSERT_EQ(gate_->queued(), 0u);
  }
  releaser.join();
  enqueuer.join();
  EXPECT_EQ(stranded, 0);
}

// Real threads, each playing a worker that pumps its own dispatcher: in-flight, as counted by an
// independent atomic incremented when a request gets its permit and decremented just before it
// gives it back, never exceeds the limit; every request ends admitted, cancelled or rejected;
// afterwards in-flight and the queue are back to 0.
class PermitGateStressTest : public ::testing::TestWithParam<PermitGate::Order> {};

struct StressResult {
  uint64_t admitted = 0;
  uint64_t cancelled = 0;
  uint64_t rejected = 0;
  uint32_t max_seen = 0;
};

StressResult run_stress(PermitGate& gate, std::vector<std::unique_ptr<FakeDispatcher>>& workers,
                        uint32_t max_allowed, int requests_per_worker, bool toggle_limit) {
  std::atomic<uint32_t> holding{0};
  std::atomic<uint32_t> max_seen{0};
  std::atomic<uint64_t> admitted{0};
  std::atomic<uint64_t> cancelled{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<bool> violation{false};
  std::atomic<int> running{static_cast<int>(workers.size())};

  auto on_permit = [&] {
    const uint32_t now = holding.fetch_add(1) + 1;
    if (now > max_allowed) violation = true;
    uint32_t seen = max_seen.load();
    while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
    }
  };

  std::vector<std::thread> threads;
  for (size_t t = 0; t < workers.size(); ++t) {
    threads.emplace_back([&, t] {
      FakeDispatcher& d = *workers[t];
      std::mt19937 rng(static_cast<uint32_t>(1234 + t));
      struct Slot {
        std::optional<Permit> permit;  // filled at once, or by the grant callback
        PermitWait wait;
        bool counted = false;
        int hold = 0;      // pumps to hold the permit for
        int patience = 0;  // pumps to wait before giving up
      };
      std::list<Slot> slots;  // a list: grant callbacks keep references to their slot
      int started = 0;
      while (started < requests_per_worker || !slots.empty()) {
        // Workers keep 1..4 requests going, so the queue keeps emptying and refilling and both
        // the lock-free fast path and the queued path race with releases.
        while (started < requests_per_worker && slots.size() < 1 + t % 4) {
          ++started;
          Slot& s = slots.emplace_back();
          s.patience = rng() % 8 == 0 ? static_cast<int>(rng() % 5) : 1 << 30;
          auto got = gate.acquire(d, [&s](Permit p) { s.permit = std::move(p); });
          if (got.status == PermitGate::Status::Rejected) {
            rejected.fetch_add(1);
            slots.pop_back();
            continue;
          }
          if (got.status == PermitGate::Status::Admitted) s.permit = std::move(got.permit);
          s.wait = std::move(got.wait);
        }
        d.run_pending();  // grants for this worker's waiters arrive here
        for (auto it = slots.begin(); it != slots.end();) {
          Slot& s = *it;
          if (s.permit && !s.counted) {
            on_permit();
            s.counted = true;
            s.hold = static_cast<int>(rng() % 3);
          }
          if (s.counted && s.hold-- == 0) {
            holding.fetch_sub(1);
            s.permit.reset();
            admitted.fetch_add(1);
            it = slots.erase(it);
          } else if (!s.counted && s.patience-- == 0) {
            s.wait.cancel();
            cancelled.fetch_add(1);
            it = slots.erase(it);
          } else {
            ++it;
          }
        }
        std::this_thread::yield();
      }
      running.fetch_sub(1);
      // Keep delivering: a grant for a cancelled waiter may still arrive and must bounce.
      while (running.load() > 0) {
        d.run_pending();
        std::this_thread::yield();
      }
    });
  }
  std::thread toggler;
  if (toggle_limit) {
    toggler = std::thread([&] {
      uint32_t l = 1;
      while (running.load() > 0) {
        gate.set_limit(l);
        l = l % max_allowed + 1;
        std::this_thread::yield();
      }
      gate.set_limit(max_allowed);
    });
  }
  for (auto& th : threads) th.join();
  if (toggle_limit) toggler.join();
  for (auto& w : workers) w->run_pending();

  EXPECT_FALSE(violation.load()) << "in flight exceeded " << max_allowed;
  return StressResult{admitted.load(), cancelled.load(), rejected.load(), max_seen.load()};
}

TEST_P(PermitGateStressTest, InFlightNeverExceedsTheLimitAndEverythingReturnsToZero) {
  constexpr uint32_t kLimit = 3;
  auto gate = PermitGate::create(kLimit, 1000, GetParam(), &RealClock::instance());
  FakeClock clock;
  std::vector<std::unique_ptr<FakeDispatcher>> workers;
  for (uint32_t i = 0; i < 4; ++i) workers.push_back(std::make_unique<FakeDispatcher>(clock, i));
  constexpr int kPerWorker = 20000;
  StressResult r = run_stress(*gate, workers, kLimit, kPerWorker, /*toggle_limit=*/false);
  EXPECT_EQ(r.admitted + r.cancelled + r.rejected, 4u * kPerWorker);
  EXPECT_EQ(r.rejected, 0u);      // the queue never fills: at most 10 requests at once
  EXPECT_EQ(r.max_seen, kLimit);  // the limit was reached, and never passed
  EXPECT_EQ(gate->in_flight(), 0u);
  EXPECT_EQ(gate->queued(), 0u);
}

TEST_P(PermitGateStressTest, LimitChangesUnderLoadLoseNoWakeUpAndLeakNoPermit) {
  constexpr uint32_t kMaxLimit = 4;
  auto gate = PermitGate::create(1, 1000, GetParam(), &RealClock::instance());
  FakeClock clock;
  std::vector<std::unique_ptr<FakeDispatcher>> workers;
  for (uint32_t i = 0; i < 4; ++i) workers.push_back(std::make_unique<FakeDispatcher>(clock, i));
  constexpr int kPerWorker = 10000;
  StressResult r = run_stress(*gate, workers, kMaxLimit, kPerWorker, /*toggle_limit=*/true);
  // Every request finished: a lost wake-up would have left a worker waiting forever.
  EXPECT_EQ(r.admitted + r.cancelled + r.rejected, 4u * kPerWorker);
  EXPECT_EQ(gate->in_flight(), 0u);
  EXPECT_EQ(gate->queued(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Orders, PermitGateStressTest,
                         ::testing::Values(PermitGate::Order::Fifo, PermitGate::Order::Lifo,
                                           PermitGate::Order::AdaptiveLifo),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case PermitGate::Order::Fifo:
                               return "Fifo";
                             case PermitGate::Order::Lifo:
                               return "Lifo";
                             case PermitGate::Order::AdaptiveLifo:
                               return "AdaptiveLifo";
                           }
                           return "Unknown";
                         });

}  // namespace
}  // namespace sluice
