#include "integration/upstream/worker_pool.h"

#include <algorithm>
#include <utility>

namespace sluice::itest {

WorkerPool::WorkerPool(uint32_t workers, ServiceSchedule& schedule, Timer& timer,
                       const Clock& clock)
    : workers_(workers), schedule_(schedule), timer_(timer), clock_(clock) {}

WorkerPool::JobId WorkerPool::submit(std::optional<Duration> service_time, Done done) {
  Job job{0, service_time, std::move(done)};
  {
    std::lock_guard lock(mutex_);
    job.id = next_id_++;
    if (workers_ != 0 && busy_ >= workers_) {
      JobId id = job.id;
      queue_.push_back(std::move(job));
      max_queue_length_ = std::max<uint64_t>(max_queue_length_, queue_.size());
      return id;
    }
    ++busy_;
  }
  JobId id = job.id;
  run_on_worker(std::move(job));
  return id;
}

bool WorkerPool::cancel(JobId id) {
  Done done;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(queue_.begin(), queue_.end(), [id](const Job& j) { return j.id == id; });
    if (it == queue_.end()) return false;
    done = std::move(it->done);
    queue_.erase(it);
    ++dropped_;
  }
  done(false);
  return true;
}

void WorkerPool::begin_service() {
  std::lock_guard lock(mutex_);
  ++in_service_;
  max_in_service_ = std::max(max_in_service_, in_service_);
}

void WorkerPool::end_service() {
  std::lock_guard lock(mutex_);
  --in_service_;
}

void WorkerPool::run_on_worker(Job job) {
  for (;;) {
    TimePoint now = clock_.now();
    Duration service = job.service_time ? *job.service_time : schedule_.service_time_at(now);
    begin_service();
    if (service > Duration::zero()) {
      timer_.schedule(now + service, [this, done = std::move(job.done)] {
        end_service();  // before the response can leave
        done(true);
        if (auto next = release_worker()) run_on_worker(std::move(*next));
      });
      return;
    }
    end_service();
    job.done(true);
    auto next = release_worker();
    if (!next) return;
    job = std::move(*next);
  }
}

std::optional<WorkerPool::Job> WorkerPool::release_worker() {
  std::lock_guard lock(mutex_);
  ++served_;
  if (queue_.empty()) {
    --busy_;
    return std::nullopt;
  }
  Job next = std::move(queue_.front());
  queue_.pop_front();
  return next;
}

WorkerPool::Snapshot WorkerPool::snapshot() const {
  std::lock_guard lock(mutex_);
  return Snapshot{workers_,          busy_,   max_in_service_, queue_.size(),
                  max_queue_length_, served_, dropped_};
}

void WorkerPool::reset_counters() {
  std::lock_guard lock(mutex_);
  max_queue_length_ = queue_.size();
  max_in_service_ = in_service_;
  served_ = 0;
  dropped_ = 0;
}

}  // namespace sluice::itest
