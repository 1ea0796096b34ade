// What every test-upstream call does the same way: in-flight and cancellation accounting, running
// work items on the worker pool, and the response metadata a request asks for.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "integration/upstream/service_schedule.h"
#include "integration/upstream/upstream_stats.h"
#include "integration/upstream/worker_pool.h"
#include "sluice_test.pb.h"

namespace sluice::itest {

// Shared state every call reaches; owned by main, outlives the server.
struct ServiceDeps {
  WorkerPool& pool;
  UpstreamStats& stats;
  ServiceSchedule& schedule;
  const Clock& clock;
};

class CallScope {
 public:
  // Counts the call as started and in flight, and records the deadline the caller sent.
  CallScope(ServiceDeps& deps, Method method, grpc::CallbackServerContext* ctx);
  // Counts the call as finished (reactors are destroyed in OnDone).
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  // Runs one work item for `request` (its service_time override, if any). `done(true)` after the
  // service time; `done(false)` at once if the call is cancelled first. Exactly one of the two.
  void run_job(const sluice::test::Request& request, std::function<void(bool)> done);
  // Reactor OnCancel: counts it, drops a queued work item, and ends a work item in service early
  // (done(false)) so the call finishes now; its worker stays busy for the rest of the service
  // time, as a real server's would.
  void on_cancel();
  bool cancelled() const { return cancelled_.load(); }

  // Counts one processed message of `payload_bytes`.
  void processed(size_t payload_bytes) { deps_.stats.message_processed(payload_bytes); }

  // Must run before the first response message (or Finish) is sent. Idempotent.
  void add_initial_metadata(const sluice::test::Request& request);
  // Must run before Finish: echoed metadata, requested trailing metadata, x-upstream-deadline-ms.
  // Returns INVALID_ARGUMENT (and adds nothing) if a requested key or value is not legal gRPC
  // metadata, which gRPC would otherwise abort the process for; the reactor finishes with it.
  grpc::Status add_trailing_metadata(const sluice::test::Request& request);

  // A response payload of `size` bytes.
  static std::string payload(uint32_t size);

 private:
  // Client metadata worth echoing: not HTTP/2 pseudo-headers or gRPC's own headers.
  template <typename Add>
  void echo_client_metadata(Add add) const;

  ServiceDeps& deps_;
  grpc::CallbackServerContext* ctx_;
  int64_t deadline_ms_ = -1;  // remaining at call start; -1 = no deadline
  bool initial_sent_ = false;
  // Decouples a work item's completion from the reactor: whichever of the timer and on_cancel
  // fires first runs `done`; the later one only touches this, never the (maybe deleted) reactor.
  struct PendingJob {
    std::atomic<bool> fired{false};
    std::function<void(bool)> done;
    void fire(bool served) {
      if (!fired.exchange(true)) done(served);
    }
  };

  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;  // guards pending_ and job_id_ against on_cancel's thread
  std::shared_ptr<PendingJob> pending_;
  WorkerPool::JobId job_id_ = 0;
};

}  // namespace sluice::itest
