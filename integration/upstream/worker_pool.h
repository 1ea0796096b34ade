// The upstream's service capacity: a FIFO queue of jobs served by N simulated workers. A job holds
// a worker for its service time (a timer, no CPU), then its completion runs.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "integration/upstream/service_schedule.h"
#include "integration/upstream/timer.h"
#include "src/core/time.h"

namespace sluice::itest {

class WorkerPool {
 public:
  using JobId = uint64_t;
  // served=true: the job held a worker for its service time. false: cancel() dropped it.
  using Done = std::function<void(bool served)>;

  struct Snapshot {
    uint32_t workers = 0;  // 0 = unlimited
    uint32_t busy = 0;
    // Most jobs in service at once since the last reset_counters(): from a worker taking a job
    // until its service time ends, before its completion runs (busy also covers the completion).
    uint32_t max_in_service = 0;
    uint64_t queue_length = 0;
    uint64_t max_queue_length = 0;
    uint64_t served = 0;
    uint64_t dropped = 0;
  };

  // workers == 0 means unlimited: every job starts at once and nothing queues.
  WorkerPool(uint32_t workers, ServiceSchedule& schedule, Timer& timer, const Clock& clock);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a job behind earlier ones. `service_time` overrides the schedule, which is otherwise
  // read when a worker picks the job up. A zero service time completes on the caller's thread.
  JobId submit(std::optional<Duration> service_time, Done done);

  // Drops a job that is still waiting for a worker; its done(false) runs on this thread. A job
  // already holding a worker is not interrupted (that work is wasted, as in a real server).
  bool cancel(JobId id);

  Snapshot snapshot() const;
  // Restarts max_queue_length, max_in_service and the served/dropped counts.
  void reset_counters();

 private:
  struct Job {
    JobId id;
    std::optional<Duration> service_time;
    Done done;
  };

  // Runs `job` on the worker the caller holds; then keeps that worker busy with whatever is
  // queued. Loops instead of recursing so a run of zero-time jobs cannot grow the stack.
  void run_on_worker(Job job);
  void begin_service();
  void end_service();
  // Frees the calling worker, or hands it the next queued job.
  std::optional<Job> release_worker();

  const uint32_t workers_;
  ServiceSchedule& schedule_;
  Timer& timer_;
  const Clock& clock_;

  mutable std::mutex mutex_;
  std::deque<Job> queue_;
  uint32_t busy_ = 0;
  uint32_t in_service_ = 0;
  uint32_t max_in_service_ = 0;
  JobId next_id_ = 1;
  uint64_t max_queue_length_ = 0;
  uint64_t served_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace sluice::itest
