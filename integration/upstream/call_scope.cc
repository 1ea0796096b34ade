#include "integration/upstream/call_scope.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace sluice::itest {
namespace {

bool is_echoable(std::string_view key) {
  return !key.starts_with(":") && !key.starts_with("grpc-") && key != "user-agent" && key != "te" &&
         key != "content-type" && key != "host" && key != "accept-encoding";
}

// Why `key: value` is not legal metadata to send, or nullopt if it is.
std::optional<std::string> metadata_error(std::string_view key, std::string_view value) {
  if (key.empty() || key.starts_with("grpc-")) return "reserved or empty key";
  for (char c : key) {
    bool legal =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!legal) return "key must be lowercase [0-9a-z_.-]";
  }
  if (!key.ends_with("-bin")) {
    for (char c : value) {
      if (c < 0x20 || c > 0x7e) return "value of a non -bin key must be printable ASCII";
    }
  }
  return std::nullopt;
}

std::optional<Duration> service_override(const sluice::test::Request& request) {
  if (!request.has_service_time()) return std::nullopt;
  const auto& d = request.service_time();
  return std::chrono::seconds(d.seconds()) + std::chrono::nanoseconds(d.nanos());
}

}  // namespace

CallScope::CallScope(ServiceDeps& deps, Method method, grpc::CallbackServerContext* ctx)
    : deps_(deps), ctx_(ctx) {
  deps_.stats.call_started(method);
  deps_.schedule.note_request(deps_.clock.now());
  auto deadline = ctx_->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    auto remaining = deadline - std::chrono::system_clock::now();
    // Clamped: an already expired deadline still shows up as "had a deadline".
    deadline_ms_ = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(remaining).count());
    deps_.stats.note_deadline_ms(deadline_ms_);
  }
}

CallScope::~CallScope() { deps_.stats.call_finished(); }

void CallScope::run_job(const sluice::test::Request& request, std::function<void(bool)> done) {
  auto job = std::make_shared<PendingJob>();
  job->done = std::move(done);
  {
    std::lock_guard lock(mutex_);
    pending_ = job;
  }
  WorkerPool::JobId id =
      deps_.pool.submit(service_override(request), [job](bool served) { job->fire(served); });
  bool cancelled_meanwhile = false;
  {
    std::lock_guard lock(mutex_);
    job_id_ = id;
    cancelled_meanwhile = cancelled_.load();
  }
  // on_cancel ran before job_id_ was set: it could not unqueue this item, maybe not fire it.
  if (cancelled_meanwhile) {
    deps_.pool.cancel(id);
    job->fire(false);
  }
}

void CallScope::on_cancel() {
  std::shared_ptr<PendingJob> job;
  WorkerPool::JobId id = 0;
  {
    std::lock_guard lock(mutex_);
    cancelled_.store(true);
    job = pending_;
    id = job_id_;
  }
  if (id != 0) deps_.pool.cancel(id);
  if (job) job->fire(false);
  // Counted last: whoever sees the count also sees the dropped work item (Stats reads the
  // counters before the pool).
  deps_.stats.call_cancelled();
}

template <typename Add>
void CallScope::echo_client_metadata(Add add) const {
  for (const auto& [key, value] : ctx_->client_metadata()) {
    std::string_view k(key.data(), key.size());
    if (is_echoable(k)) add(std::string(k), std::string(value.data(), value.size()));
  }
}

void CallScope::add_initial_metadata(const sluice::test::Request& request) {
  if (initial_sent_) return;
  initial_sent_ = true;
  if (request.echo_metadata()) {
    echo_client_metadata([this](std::string k, std::string v) { ctx_->AddInitialMetadata(k, v); });
  }
}

grpc::Status CallScope::add_trailing_metadata(const sluice::test::Request& request) {
  for (const auto& [key, value] : request.trailing_metadata()) {
    if (auto error = metadata_error(key, value)) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "trailing_metadata '" + key + "': " + *error);
    }
  }
  if (request.echo_metadata()) {
    echo_client_metadata([this](std::string k, std::string v) { ctx_->AddTrailingMetadata(k, v); });
  }
  for (const auto& [key, value] : request.trailing_metadata()) {
    ctx_->AddTrailingMetadata(key, value);
  }
  if (deadline_ms_ >= 0) {
    ctx_->AddTrailingMetadata("x-upstream-deadline-ms", std::to_string(deadline_ms_));
  }
  return grpc::Status::OK;
}

std::string CallScope::payload(uint32_t size) { return std::string(size, 'r'); }

}  // namespace sluice::itest
