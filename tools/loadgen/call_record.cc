#include "tools/loadgen/call_record.h"

#include <array>

namespace sluice::loadgen {

std::string status_name(int code) {
  static constexpr std::array<std::string_view, 17> kNames = {"OK",
                                                              "CANCELLED",
                                                              "UNKNOWN",
                                                              "INVALID_ARGUMENT",
                                                              "DEADLINE_EXCEEDED",
                                                              "NOT_FOUND",
                                                              "ALREADY_EXISTS",
                                                              "PERMISSION_DENIED",
                                                              "RESOURCE_EXHAUSTED",
                                                              "FAILED_PRECONDITION",
                                                              "ABORTED",
                                                              "OUT_OF_RANGE",
                                                              "UNIMPLEMENTED",
                                                              "INTERNAL",
                                                              "UNAVAILABLE",
                                                              "DATA_LOSS",
                                                              "UNAUTHENTICATED"};
  if (code >= 0 && static_cast<size_t>(code) < kNames.size()) return std::string(kNames[code]);
  return "CODE_" + std::to_string(code);
}

std::string_view kind_name(RecordKind kind) {
  switch (kind) {
    case RecordKind::kCall:
      return "call";
    case RecordKind::kSkippedCap:
      return "skipped_cap";
    case RecordKind::kSkippedLate:
      return "skipped_late";
  }
  return "call";
}

}  // namespace sluice::loadgen
