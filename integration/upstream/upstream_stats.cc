#include "integration/upstream/upstream_stats.h"

#include <string>

namespace sluice::itest {

std::string_view method_name(Method method) {
  switch (method) {
    case Method::kUnary:
      return "unary";
    case Method::kServerStream:
      return "server_stream";
    case Method::kClientStream:
      return "client_stream";
    case Method::kBidi:
      return "bidi";
    case Method::kFail:
      return "fail";
  }
  return "unknown";
}

void UpstreamStats::call_started(Method method) {
  started_[static_cast<size_t>(method)].fetch_add(1, std::memory_order_relaxed);
  int64_t now = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  int64_t seen = max_in_flight_.load(std::memory_order_relaxed);
  while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
  }
}

void UpstreamStats::call_finished() {
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  finished_.fetch_add(1, std::memory_order_relaxed);
}

void UpstreamStats::call_cancelled() { cancelled_.fetch_add(1, std::memory_order_relaxed); }

void UpstreamStats::message_processed(size_t payload_bytes) {
  messages_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(payload_bytes, std::memory_order_relaxed);
}

void UpstreamStats::note_deadline_ms(int64_t remaining_ms) {
  last_deadline_ms_.store(remaining_ms, std::memory_order_relaxed);
}

void UpstreamStats::reset() {
  for (auto& s : started_) s.store(0);
  cancelled_.store(0);
  finished_.store(0);
  messages_.store(0);
  bytes_.store(0);
  max_in_flight_.store(in_flight_.load());
  last_deadline_ms_.store(-1);
}

void UpstreamStats::fill(sluice::test::StatsResponse& out) const {
  auto& started = *out.mutable_calls_started();
  for (size_t i = 0; i < kMethodCount; ++i) {
    started[std::string(method_name(static_cast<Method>(i)))] = started_[i].load();
  }
  out.set_calls_cancelled(cancelled_.load());
  out.set_calls_finished(finished_.load());
  out.set_messages_processed(messages_.load());
  out.set_bytes_processed(bytes_.load());
  out.set_in_flight(in_flight_.load());
  out.set_max_in_flight(max_in_flight_.load());
  out.set_last_deadline_ms(last_deadline_ms_.load());
}

}  // namespace sluice::itest
