#include "tools/loadgen/call.h"

#include <charconv>

namespace sluice::loadgen {
namespace {

constexpr std::string_view kQueueHeader = "x-sluice-queue-us";

std::optional<int64_t> find_number(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find(grpc::string_ref(kQueueHeader.data(), kQueueHeader.size()));
  if (it == metadata.end()) return std::nullopt;
  int64_t value = 0;
  const char* begin = it->second.data();
  const char* end = begin + it->second.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

void Call::prepare(const CallSetup& setup, grpc::ClientContext& ctx) {
  for (const auto& [key, value] : setup.metadata) ctx.AddMetadata(key, value);
  if (setup.deadline) {
    ctx.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::duration_cast<std::chrono::system_clock::duration>(*setup.deadline));
  }
}

CallResult Call::result_of(const grpc::Status& status, const grpc::ClientContext& ctx,
                           TimePoint start, TimePoint end) {
  CallResult result;
  result.status = status.error_code();
  result.message = status.error_message();
  result.queue_us = queue_us(ctx);
  result.start = start;
  result.end = end;
  return result;
}

std::optional<int64_t> Call::queue_us(const grpc::ClientContext& ctx) {
  if (auto v = find_number(ctx.GetServerInitialMetadata())) return v;
  return find_number(ctx.GetServerTrailingMetadata());
}

}  // namespace sluice::loadgen
