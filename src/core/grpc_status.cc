#include "src/core/grpc_status.h"

namespace sluice {

const char* grpc_status_name(GrpcStatus status) {
  switch (status) {
#define SLUICE_CASE(e, v, name) \
  case GrpcStatus::e:           \
    return name;
    SLUICE_GRPC_STATUSES(SLUICE_CASE)
#undef SLUICE_CASE
  }
  return "UNKNOWN";
}

std::optional<GrpcStatus> grpc_status_from_int(int code) {
  if (code < 0 || code >= kGrpcStatusCount) return std::nullopt;
  return static_cast<GrpcStatus>(code);
}

}  // namespace sluice
