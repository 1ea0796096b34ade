// Runs a load plan against one target: connects the channels, drives the open- or closed-loop
// scheduler from a timer on one io_context thread, keeps a record of every slot, and writes the
// CSV files and the JSON summary at the end.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <unordered_map>
#include <vector>

#include "tools/loadgen/call.h"
#include "tools/loadgen/call_record.h"
#include "tools/loadgen/closed_loop_scheduler.h"
#include "tools/loadgen/loadgen_options.h"
#include "tools/loadgen/open_loop_scheduler.h"
#include "tools/loadgen/send_csv_writer.h"

namespace sluice::loadgen {

class LoadRunner {
 public:
  explicit LoadRunner(LoadgenOptions options);
  LoadRunner(const LoadRunner&) = delete;
  LoadRunner& operator=(const LoadRunner&) = delete;

  // Runs the plan to the end; returns the process exit code (0 ok, 1 could not connect or write).
  int run();

 private:
  bool connect();
  void tick();
  void arm(std::optional<TimePoint> due);
  void launch(size_t record, uint32_t worker);
  void on_done(uint64_t call_id, size_t record, CallResult result);
  void maybe_finish();
  void drain_expired();
  void interrupt();
  boost::json::object summary() const;
  bool write_outputs(const boost::json::object& summary) const;
  void print_table(const boost::json::object& summary, std::ostream& out) const;

  LoadgenOptions options_;
  boost::asio::io_context io_;
  // Keeps io_.run() going while calls are in flight and no timer is armed; reset when done.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::signal_set signals_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<sluice::test::TestService::Stub>> stubs_;
  std::unique_ptr<CallSetup> setup_;
  std::optional<OpenLoopScheduler> open_;
  std::optional<ClosedLoopScheduler> closed_;
  TimePoint start_;
  int64_t start_unix_ms_ = 0;
  TimePoint finished_at_;
  bool plan_over_ = false;  // no more calls will be started (plan done or interrupted)
  bool done_ = false;
  bool interrupted_ = false;
  uint64_t next_call_id_ = 0;
  size_t next_channel_ = 0;
  std::vector<CallRecord> records_;
  std::vector<SendRecord> sends_;
  std::unordered_map<uint64_t, std::shared_ptr<Call>> active_;
};

}  // namespace sluice::loadgen
