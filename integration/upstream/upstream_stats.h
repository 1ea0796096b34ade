// The test upstream's counters: what tests assert on through the Stats RPC and what the process
// prints as JSON when it exits. Lock-free: every call updates them.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice_test.pb.h"

namespace sluice::itest {

enum class Method { kUnary, kServerStream, kClientStream, kBidi, kFail };
inline constexpr size_t kMethodCount = 5;

// The name used in StatsResponse.calls_started and in sluice-test-client's --method.
std::string_view method_name(Method method);

class UpstreamStats {
 public:
  void call_started(Method method);
  void call_finished();
  void call_cancelled();
  void message_processed(size_t payload_bytes);
  void note_deadline_ms(int64_t remaining_ms);

  // Zeroes the counters; max_in_flight restarts from the current in-flight count.
  void reset();
  // Fills the counter fields of `out` (not the worker-pool or schedule fields).
  void fill(sluice::test::StatsResponse& out) const;

 private:
  std::array<std::atomic<uint64_t>, kMethodCount> started_{};
  std::atomic<uint64_t> cancelled_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint64_t> messages_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> max_in_flight_{0};
  std::atomic<int64_t> last_deadline_ms_{-1};
};

}  // namespace sluice::itest
