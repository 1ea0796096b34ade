#include "tools/loadgen/call_record.h"

#include <array>

#include "integration/common/grpc_status_name.h"

namespace sluice::loadgen {

std::string status_name(int code) { return itest::grpc_status_name(code); }

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
