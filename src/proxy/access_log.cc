#include "src/proxy/access_log.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "src/core/iso8601.h"

namespace sluice {

AccessLog::AccessLog(const AccessLogConfig& config, std::size_t capacity, StatsRegistry* stats)
    : capacity_(capacity == 0 ? 1 : capacity) {
  if (!config.enabled) return;
  file_ = std::fopen(config.path.c_str(), "a");
  if (file_ == nullptr) {
    throw std::runtime_error("access_log: cannot open " + config.path + ": " +
                             std::generic_category().message(errno));
  }
  if (stats != nullptr) {
    dropped_counter_ = &stats->counter(StatName{"server", {}, "access_log_dropped_total"},
                                       "Access log entries dropped because the writer fell behind");
  }
  pending_.reserve(capacity_);
  writer_ = std::thread([this] { run(); });
}

AccessLog::~AccessLog() {
  if (file_ == nullptr) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  std::fclose(file_);
}

void AccessLog::log(AccessLogEntry entry) {
  if (file_ == nullptr) return;
  bool was_empty = false;
  {
    std::lock_guard lock(mu_);
    if (pending_.size() >= capacity_) {
      ++dropped_;
      if (dropped_counter_ != nullptr) dropped_counter_->inc();
      return;
    }
    was_empty = pending_.empty();
    pending_.push_back(std::move(entry));
  }
  // Only the first entry of a batch wakes the writer; the rest ride along.
  if (was_empty) wake_.notify_one();
}

uint64_t AccessLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::string AccessLog::format(const AccessLogEntry& e) {
  boost::json::object o;
  o["timestamp"] = iso8601(e.timestamp);
  o["method"] = e.method;
  o["path"] = e.path;
  if (e.grpc_status >= 0) {
    o["grpc_status"] = e.grpc_status;
  } else {
    o["grpc_status"] = nullptr;
  }
  o["outcome"] = e.outcome;
  o["queue_wait_us"] = e.queue_wait_us;
  if (e.upstream_us >= 0) {
    o["upstream_us"] = e.upstream_us;
  } else {
    o["upstream_us"] = nullptr;
  }
  o["total_us"] = e.total_us;
  o["bytes_in"] = e.bytes_in;
  o["bytes_out"] = e.bytes_out;
  return boost::json::serialize(o);
}

void AccessLog::run() {
  std::vector<AccessLogEntry> batch;
  batch.reserve(capacity_);
  std::string text;
  for (;;) {
    bool stop = false;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      batch.swap(pending_);
      stop = stopping_ && batch.empty();
    }
    if (stop) return;
    text.clear();
    for (const AccessLogEntry& e : batch) {
      text += format(e);
      text += '\n';
    }
    batch.clear();
    // One write and flush per batch: a reader tailing the file sees whole lines promptly.
    std::fwrite(text.data(), 1, text.size(), file_);
    std::fflush(file_);
  }
}

}  // namespace sluice
