// What the load generator keeps about every scheduled slot: the call it became (or why it did
// not), its times relative to the start of the run, and what the server answered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/time.h"

namespace sluice::loadgen {

enum class RecordKind {
  kCall,         // a call was started; status says how it ended
  kSkippedCap,   // open loop: the slot came while the cap on outstanding calls was reached
  kSkippedLate,  // open loop: the generator reached the slot too late to send it on time
};

struct CallRecord {
  uint64_t id = 0;
  size_t phase = 0;
  RecordKind kind = RecordKind::kCall;
  uint32_t worker = 0;  // closed loop: the worker that made the call
  Duration scheduled{0};
  Duration start{0};  // kCall only
  Duration end{0};    // kCall only
  int status = -1;    // gRPC status code; -1 when no call was made
  std::string message;
  // x-sluice-queue-us from initial or trailing metadata; absent when the server did not send it.
  std::optional<int64_t> queue_us;
  // Client streaming: messages written, and send slots skipped because a write was in flight.
  uint64_t messages_sent = 0;
  uint64_t send_slots_skipped = 0;

  Duration latency() const { return end - start; }
};

// "OK", "DEADLINE_EXCEEDED", ... as in the gRPC spec; "CODE_<n>" outside the known range.
std::string status_name(int code);
std::string_view kind_name(RecordKind kind);

}  // namespace sluice::loadgen
