#include "integration/common/grpc_status_name.h"

#include <array>
#include <string_view>

namespace sluice::itest {

std::string grpc_status_name(int code) {
  static constexpr std::array<std::string_view, 17> kNames{"OK",
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
  if (code >= 0 && static_cast<std::size_t>(code) < kNames.size()) {
    return std::string(kNames[static_cast<std::size_t>(code)]);
  }
  return "UNKNOWN_CODE_" + std::to_string(code);
}

}  // namespace sluice::itest
