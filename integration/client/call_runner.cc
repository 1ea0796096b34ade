#include "integration/client/call_runner.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

namespace sluice::itest {
namespace {

void copy_metadata(const std::multimap<grpc::string_ref, grpc::string_ref>& from,
                   std::vector<std::pair<std::string, std::string>>& to) {
  for (const auto& [key, value] : from) {
    to.emplace_back(std::string(key.data(), key.size()), std::string(value.data(), value.size()));
  }
}

// Calls TryCancel on the context after a delay unless the call finished first.
class Canceller {
 public:
  Canceller(grpc::ClientContext& ctx, std::optional<Duration> after) {
    if (!after) return;
    thread_ = std::thread([this, &ctx, deadline = SteadyClock::now() + *after] {
      std::unique_lock lock(mutex_);
      if (!wake_.wait_until(lock, deadline, [this] { return done_; })) ctx.TryCancel();
    });
  }
  ~Canceller() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  Canceller(const Canceller&) = delete;
  Canceller& operator=(const Canceller&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

CallRunner::CallRunner(ClientOptions options, std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)), stub_(sluice::test::TestService::NewStub(channel)) {}

sluice::test::Request CallRunner::request() const {
  sluice::test::Request req;
  req.set_payload(std::string(options_.size, 'q'));
  req.set_response_size(options_.response_size);
  if (options_.method == CallMethod::kServerStream) {
    req.set_response_count(static_cast<uint32_t>(options_.count.value_or(1)));
  }
  if (options_.service_time) {
    auto nanos = options_.service_time->count();
    req.mutable_service_time()->set_seconds(nanos / 1'000'000'000);
    req.mutable_service_time()->set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
  }
  req.set_echo_metadata(options_.echo_metadata);
  req.set_status_code(options_.status_code);
  req.set_status_message(options_.status_message);
  for (const auto& [key, value] : options_.trailing_metadata) {
    (*req.mutable_trailing_metadata())[key] = value;
  }
  return req;
}

void CallRunner::prepare(grpc::ClientContext& ctx) const {
  for (const auto& [key, value] : options_.metadata) ctx.AddMetadata(key, value);
  if (options_.deadline) {
    ctx.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::duration_cast<std::chrono::system_clock::duration>(*options_.deadline));
  }
}

CallResult CallRunner::run() {
  CallResult result;
  result.method = options_.method_name;
  result.target = options_.target;
  grpc::ClientContext ctx;
  prepare(ctx);
  start_ = SteadyClock::now();
  SendLog log(start_, options_.rate);
  grpc::Status status;
  {
    Canceller canceller(ctx, options_.cancel_after);
    switch (options_.method) {
      case CallMethod::kUnary:
      case CallMethod::kFail:
        status = unary(ctx, result);
        break;
      case CallMethod::kServerStream:
        status = server_stream(ctx, result);
        break;
      case CallMethod::kClientStream:
        status = client_stream(ctx, result, log);
        break;
      case CallMethod::kBidi:
        status = bidi(ctx, result, log);
        break;
    }
  }
  result.elapsed_ms = to_ms(SteadyClock::now() - start_);
  result.status_code = static_cast<int>(status.error_code());
  result.status_message = status.error_message();
  copy_metadata(ctx.GetServerInitialMetadata(), result.initial_metadata);
  copy_metadata(ctx.GetServerTrailingMetadata(), result.trailing_metadata);
  result.send = log.summary();
  return result;
}

grpc::Status CallRunner::unary(grpc::ClientContext& ctx, CallResult& result) {
  sluice::test::Request req = request();
  sluice::test::Response resp;
  result.messages_sent = 1;
  result.bytes_sent = req.payload().size();
  grpc::Status status = options_.method == CallMethod::kFail ? stub_->Fail(&ctx, req, &resp)
                                                             : stub_->Unary(&ctx, req, &resp);
  if (status.ok()) {
    result.messages_received = 1;
    result.bytes_received = resp.payload().size();
  }
  return status;
}

grpc::Status CallRunner::server_stream(grpc::ClientContext& ctx, CallResult& result) {
  sluice::test::Request req = request();
  auto reader = stub_->ServerStream(&ctx, req);
  result.messages_sent = 1;
  result.bytes_sent = req.payload().size();
  sluice::test::Response resp;
  while (reader->Read(&resp)) {
    ++result.messages_received;
    result.bytes_received += resp.payload().size();
  }
  return reader->Finish();
}

template <typename Stream>
void CallRunner::send_all(Stream& stream, CallResult& result, SendLog& log) {
  sluice::test::Request req = request();
  const Duration interval =
      options_.rate > 0
          ? std::chrono::duration_cast<Duration>(std::chrono::duration<double>(1.0 / options_.rate))
          : Duration::zero();
  TimePoint next = start_;
  auto out_of_time = [this] {
    return options_.duration && SteadyClock::now() - start_ >= *options_.duration;
  };
  for (uint64_t i = 0; !options_.count || i < *options_.count; ++i) {
    if (interval > Duration::zero()) std::this_thread::sleep_until(next);
    if (out_of_time()) break;
    TimePoint write_start = SteadyClock::now();
    if (!stream.Write(req)) break;
    TimePoint write_done = SteadyClock::now();
    log.record(write_start, write_done);
    ++result.messages_sent;
    result.bytes_sent += req.payload().size();
    next = std::max(next + interval, write_done);
    // Metadata flags only matter on the first message; later ones stay smaller.
    if (i == 0) req.clear_trailing_metadata();
  }
}

grpc::Status CallRunner::client_stream(grpc::ClientContext& ctx, CallResult& result, SendLog& log) {
  sluice::test::Response resp;
  auto writer = stub_->ClientStream(&ctx, &resp);
  send_all(*writer, result, log);
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (status.ok()) {
    result.messages_received = 1;
    result.processed = std::make_pair(resp.messages_processed(), resp.bytes_processed());
  }
  return status;
}

grpc::Status CallRunner::bidi(grpc::ClientContext& ctx, CallResult& result, SendLog& log) {
  auto stream = stub_->Bidi(&ctx);
  uint64_t received = 0;
  uint64_t received_bytes = 0;
  // Reads run beside the writes: the upstream answers each message before reading the next, so
  // a writer that waited for answers would never fill the pipe.
  std::thread reader([&] {
    sluice::test::Response resp;
    while (stream->Read(&resp)) {
      ++received;
      received_bytes += resp.payload().size();
    }
  });
  send_all(*stream, result, log);
  stream->WritesDone();
  reader.join();
  result.messages_received = received;
  result.bytes_received = received_bytes;
  return stream->Finish();
}

}  // namespace sluice::itest
