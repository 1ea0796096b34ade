// The optional request access log: one JSON object per line, written by a background thread so
// a worker never does file I/O. Off by default (admin.access_log.enabled).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/config/config.h"
#include "src/stats/stats_registry.h"

namespace sluice {

// One finished request, as the proxy reports it.
struct AccessLogEntry {
  std::chrono::system_clock::time_point timestamp;  // when the request headers arrived
  std::string method;
  std::string path;
  int grpc_status = -1;  // -1: none (non-gRPC request, or reset before a status)
  std::string outcome;   // "admitted", "shed", "deadline_exceeded", "reset", ...
  int64_t queue_wait_us = 0;
  int64_t upstream_us = -1;  // -1: never reached the upstream
  int64_t total_us = 0;
  uint64_t bytes_in = 0;   // request body bytes
  uint64_t bytes_out = 0;  // response body bytes
};

class AccessLog {
 public:
  static constexpr std::size_t kDefaultCapacity = 16384;

  // Opens config.path for appending and starts the writer thread when enabled; throws
  // std::runtime_error naming the path when it cannot be opened. `capacity` bounds the entries
  // waiting to be written; when `stats` is given, drops are counted in
  // server.access_log_dropped_total.
  explicit AccessLog(const AccessLogConfig& config, std::size_t capacity = kDefaultCapacity,
                     StatsRegistry* stats = nullptr);
  // Writes every entry already queued, then joins the writer.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  bool enabled() const { return file_ != nullptr; }
  // Queues one entry; never blocks on I/O. When the queue is full the entry is dropped and
  // counted. A no-op when disabled.
  void log(AccessLogEntry entry);
  uint64_t dropped() const;

  // The JSON line (without '\n') an entry is written as; exposed for tests.
  static std::string format(const AccessLogEntry& entry);

 private:
  void run();

  std::size_t capacity_;
  std::FILE* file_ = nullptr;
  Counter* dropped_counter_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  // Entries waiting for the writer; the writer swaps it with its own batch, so both vectors keep
  // their capacity and the steady state allocates nothing for the queue itself.
  std::vector<AccessLogEntry> pending_;
  uint64_t dropped_ = 0;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace sluice
