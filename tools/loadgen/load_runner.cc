#include "tools/loadgen/load_runner.h"

#include <signal.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <utility>

#include "tools/loadgen/client_stream_call.h"
#include "tools/loadgen/record_csv_writer.h"
#include "tools/loadgen/run_summary.h"
#include "tools/loadgen/unary_call.h"

namespace sluice::loadgen {
namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(10);

double to_s(Duration d) { return std::chrono::duration<double>(d).count(); }

std::string format_ms(const boost::json::value& v) {
  if (v.is_null()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v.to_number<double>());
  return buf;
}

}  // namespace

LoadRunner::LoadRunner(LoadgenOptions options)
    : options_(std::move(options)),
      work_(boost::asio::make_work_guard(io_)),
      timer_(io_),
      drain_timer_(io_),
      signals_(io_, SIGINT, SIGTERM) {}

bool LoadRunner::connect() {
  for (uint32_t i = 0; i < options_.channels; ++i) {
    grpc::ChannelArguments args;
    // A distinct argument per channel keeps gRPC from sharing one subchannel (one connection)
    // between them, which would defeat the point of several channels.
    args.SetInt("sluice.loadgen.channel", static_cast<int>(i));
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    args.SetMaxSendMessageSize(64 * 1024 * 1024);
    auto channel =
        grpc::CreateCustomChannel(options_.target, grpc::InsecureChannelCredentials(), args);
    // Connect before the clock starts, so the first calls do not pay for the handshake.
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
      std::cerr << "sluice-loadgen: could not connect to " << options_.target << "\n";
      return false;
    }
    stubs_.push_back(sluice::test::TestService::NewStub(channel));
    channels_.push_back(std::move(channel));
  }
  return true;
}

int LoadRunner::run() {
  if (!connect()) return 1;

  sluice::test::Request request;
  request.set_payload(std::string(options_.size, 'q'));
  request.set_response_size(options_.response_size);
  if (options_.service_time) {
    const int64_t nanos = options_.service_time->count();
    request.mutable_service_time()->set_seconds(nanos / 1'000'000'000);
    request.mutable_service_time()->set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
  }

  start_ = SteadyClock::now();
  start_unix_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  setup_ = std::make_unique<CallSetup>(CallSetup{io_, start_, std::move(request), options_.deadline,
                                                 options_.metadata, options_.stream_messages,
                                                 options_.stream_rate, options_.max_lateness});
  if (options_.phases.front().kind == LoopKind::kOpen) {
    open_.emplace(ArrivalSchedule(options_.phases, options_.arrivals, options_.seed),
                  options_.max_outstanding, options_.max_lateness, RealClock::instance(), start_);
  } else {
    closed_.emplace(options_.phases, options_.think_time, RealClock::instance(), start_);
  }
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) interrupt();
  });

  boost::asio::post(io_, [this] { tick(); });
  io_.run();

  const boost::json::object s = summary();
  if (!options_.quiet) print_table(s, std::cout);
  return write_outputs(s) ? 0 : 1;
}

void LoadRunner::tick() {
  if (plan_over_) return;
  if (open_) {
    for (const SlotDecision& d : open_->poll()) {
      CallRecord r;
      r.id = d.slot.index;
      r.phase = d.slot.phase;
      r.scheduled = d.due - start_;
      r.kind = d.outcome == SlotOutcome::kLaunch       ? RecordKind::kCall
               : d.outcome == SlotOutcome::kSkippedCap ? RecordKind::kSkippedCap
                                                       : RecordKind::kSkippedLate;
      records_.push_back(r);
      if (r.kind == RecordKind::kCall) launch(records_.size() - 1, 0);
    }
    if (open_->finished()) plan_over_ = true;
    arm(open_->next_due());
  } else {
    for (const Launch& l : closed_->poll()) {
      CallRecord r;
      r.id = next_call_id_++;
      r.phase = l.phase;
      r.worker = l.worker;
      r.scheduled = l.due - start_;
      records_.push_back(r);
      launch(records_.size() - 1, l.worker);
    }
    if (closed_->finished()) plan_over_ = true;
    arm(closed_->next_due());
  }
  maybe_finish();
}

void LoadRunner::arm(std::optional<TimePoint> due) {
  if (!due) return;
  timer_.expires_at(*due);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

void LoadRunner::launch(size_t record, uint32_t worker) {
  // Open loop: the slot number, so skipped slots and calls share one id space; closed loop: the
  // call's sequence number.
  const uint64_t call_id = records_[record].id;
  auto& stub = *stubs_[next_channel_];
  next_channel_ = (next_channel_ + 1) % stubs_.size();
  CallDone done = [this, call_id, record, worker](CallResult result) {
    on_done(call_id, record, std::move(result));
    if (closed_) {
      closed_->on_call_done(worker);
      tick();
    }
  };
  std::shared_ptr<Call> call;
  if (options_.method != CallMethod::kClientStream) {
    call = std::make_shared<UnaryCall>(*setup_, stub, options_.method == CallMethod::kFail,
                                       std::move(done));
  } else {
    call = std::make_shared<ClientStreamCall>(*setup_, stub, call_id, std::move(done));
  }
  active_.emplace(call_id, call);
  call->start();
}

void LoadRunner::on_done(uint64_t call_id, size_t record, CallResult result) {
  CallRecord& r = records_[record];
  r.start = result.start - start_;
  r.end = result.end - start_;
  r.status = result.status;
  r.message = std::move(result.message);
  r.queue_us = result.queue_us;
  r.messages_sent = result.messages_sent;
  r.send_slots_skipped = result.send_slots_skipped;
  for (SendRecord& s : result.sends) sends_.push_back(s);
  if (open_) open_->on_call_done();
  // Erasing destroys the call unless a posted reaction still holds it; either way it is over.
  active_.erase(call_id);
  maybe_finish();
}

void LoadRunner::maybe_finish() {
  if (done_ || !plan_over_) return;
  if (active_.empty()) {
    done_ = true;
    finished_at_ = SteadyClock::now();
    timer_.cancel();
    drain_timer_.cancel();
    signals_.cancel();
    work_.reset();
    return;
  }
  if (drain_timer_.expiry() > SteadyClock::time_point{}) return;  // already armed
  Duration drain = options_.drain_timeout.value_or(
      options_.deadline ? *options_.deadline + std::chrono::seconds(5)
                        : Duration(std::chrono::seconds(60)));
  drain_timer_.expires_after(drain);
  drain_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) drain_expired();
  });
}

void LoadRunner::drain_expired() {
  // Calls still running are cancelled, and recorded as CANCELLED: never dropped.
  std::cerr << "sluice-loadgen: " << active_.size() << " calls still running after the plan; "
            << "cancelling them\n";
  for (auto& [id, call] : active_) call->cancel();
}

void LoadRunner::interrupt() {
  std::cerr << "sluice-loadgen: interrupted; cancelling " << active_.size() << " calls\n";
  interrupted_ = true;
  plan_over_ = true;
  timer_.cancel();
  for (auto& [id, call] : active_) call->cancel();
  maybe_finish();
}

boost::json::object LoadRunner::summary() const {
  std::vector<PhaseInfo> infos;
  for (size_t i = 0; i < options_.phases.size(); ++i) {
    PhaseInfo info;
    info.name = options_.phases[i].name;
    if (open_) {
      info.start = open_->schedule().phase_start(i);
      info.end = open_->schedule().phase_end(i);
    } else if (i < closed_->windows().size()) {
      const PhaseWindow& w = closed_->windows()[i];
      info.start = w.start - start_;
      info.end = w.end.value_or(finished_at_) - start_;
    }
    infos.push_back(std::move(info));
  }
  RunSummary summary(std::move(infos));
  for (const CallRecord& r : records_) summary.add(r);
  boost::json::object out = summary.to_json();

  boost::json::object config;
  config["target"] = options_.target;
  config["phases"] = options_.phases_text;
  config["loop"] = open_ ? "open" : "closed";
  config["arrivals"] = options_.arrivals == ArrivalProcess::kPoisson ? "poisson" : "fixed";
  config["seed"] = options_.seed;
  config["max_outstanding"] = options_.max_outstanding;
  config["max_lateness_ms"] = to_ms(options_.max_lateness);
  config["think_time_ms"] = to_ms(options_.think_time);
  config["deadline_ms"] =
      options_.deadline ? boost::json::value(to_ms(*options_.deadline)) : boost::json::value();
  config["method"] = options_.method == CallMethod::kUnary          ? "unary"
                     : options_.method == CallMethod::kClientStream ? "client_stream"
                                                                    : "fail";
  config["size"] = options_.size;
  config["response_size"] = options_.response_size;
  config["service_time_ms"] = options_.service_time
                                  ? boost::json::value(to_ms(*options_.service_time))
                                  : boost::json::value();
  config["stream_messages"] = options_.stream_messages;
  config["stream_rate"] = options_.stream_rate;
  config["channels"] = options_.channels;
  out["config"] = std::move(config);
  out["start_unix_ms"] = start_unix_ms_;
  out["duration_s"] = to_s(finished_at_ - start_);
  out["interrupted"] = interrupted_;
  return out;
}

bool LoadRunner::write_outputs(const boost::json::object& s) const {
  bool ok = true;
  auto open = [&ok](const std::string& path, std::ofstream& out) {
    out.open(path);
    if (!out) {
      std::cerr << "sluice-loadgen: cannot write " << path << "\n";
      ok = false;
    }
    return static_cast<bool>(out);
  };
  if (!options_.csv_path.empty()) {
    std::ofstream out;
    if (open(options_.csv_path, out)) {
      std::vector<std::string> names;
      for (const Phase& p : options_.phases) names.push_back(p.name);
      RecordCsvWriter writer(out, std::move(names));
      for (const CallRecord& r : records_) writer.write(r);
    }
  }
  if (!options_.sends_csv_path.empty()) {
    std::ofstream out;
    if (open(options_.sends_csv_path, out)) {
      SendCsvWriter writer(out);
      std::vector<SendRecord> sorted = sends_;
      std::stable_sort(sorted.begin(), sorted.end(), [](const SendRecord& a, const SendRecord& b) {
        return a.call_id != b.call_id ? a.call_id < b.call_id : a.seq < b.seq;
      });
      for (const SendRecord& r : sorted) writer.write(r);
    }
  }
  if (!options_.summary_path.empty()) {
    std::ofstream out;
    if (open(options_.summary_path, out)) out << boost::json::serialize(s) << "\n";
  }
  return ok;
}

void LoadRunner::print_table(const boost::json::object& s, std::ostream& out) const {
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %7s %7s %7s %7s %7s %7s %9s %8s %8s %8s %8s\n", "phase",
                "slots", "ok", "shed", "timeout", "other", "skipped", "goodput/s", "p50_ms",
                "p95_ms", "p99_ms", "max_ms");
  out << line;
  auto row = [&](const std::string& name, const boost::json::object& p) {
    const uint64_t ok = p.at("ok").to_number<uint64_t>();
    const uint64_t shed = p.at("shed").to_number<uint64_t>();
    const uint64_t timeout = p.at("timed_out").to_number<uint64_t>();
    const uint64_t calls = p.at("calls").to_number<uint64_t>();
    const uint64_t skipped =
        p.at("skipped_cap").to_number<uint64_t>() + p.at("skipped_late").to_number<uint64_t>();
    const auto& lat = p.at("ok_latency_ms").as_object();
    const boost::json::value& goodput = p.at("goodput_per_s");
    std::snprintf(line, sizeof line,
                  "%-12s %7llu %7llu %7llu %7llu %7llu %7llu %9s %8s %8s %8s %8s\n", name.c_str(),
                  static_cast<unsigned long long>(p.at("slots").to_number<uint64_t>()),
                  static_cast<unsigned long long>(ok), static_cast<unsigned long long>(shed),
                  static_cast<unsigned long long>(timeout),
                  static_cast<unsigned long long>(calls - ok - shed - timeout),
                  static_cast<unsigned long long>(skipped), format_ms(goodput).c_str(),
                  format_ms(lat.at("p50")).c_str(), format_ms(lat.at("p95")).c_str(),
                  format_ms(lat.at("p99")).c_str(), format_ms(lat.at("max")).c_str());
    out << line;
  };
  for (const auto& p : s.at("phases").as_array()) {
    const auto& o = p.as_object();
    row(std::string(o.at("name").as_string()), o);
  }
  row("overall", s.at("overall").as_object());
}

}  // namespace sluice::loadgen
