// The gRPC status codes (grpc/doc/statuscodes.md), shared by filters (local replies) and the
// proxy (statuses it sends and counts). One list, from which the enum and the names come.
#pragma once

#include <cstdint>
#include <optional>

namespace sluice {

// X(Enumerator, value, CANONICAL_NAME)
#define SLUICE_GRPC_STATUSES(X)                   \
  X(Ok, 0, "OK")                                  \
  X(Cancelled, 1, "CANCELLED")                    \
  X(Unknown, 2, "UNKNOWN")                        \
  X(InvalidArgument, 3, "INVALID_ARGUMENT")       \
  X(DeadlineExceeded, 4, "DEADLINE_EXCEEDED")     \
  X(NotFound, 5, "NOT_FOUND")                     \
  X(AlreadyExists, 6, "ALREADY_EXISTS")           \
  X(PermissionDenied, 7, "PERMISSION_DENIED")     \
  X(ResourceExhausted, 8, "RESOURCE_EXHAUSTED")   \
  X(FailedPrecondition, 9, "FAILED_PRECONDITION") \
  X(Aborted, 10, "ABORTED")                       \
  X(OutOfRange, 11, "OUT_OF_RANGE")               \
  X(Unimplemented, 12, "UNIMPLEMENTED")           \
  X(Internal, 13, "INTERNAL")                     \
  X(Unavailable, 14, "UNAVAILABLE")               \
  X(DataLoss, 15, "DATA_LOSS")                    \
  X(Unauthenticated, 16, "UNAUTHENTICATED")

enum class GrpcStatus : uint8_t {
#define SLUICE_ENUMERATOR(e, v, name) e = v,
  SLUICE_GRPC_STATUSES(SLUICE_ENUMERATOR)
#undef SLUICE_ENUMERATOR
};

inline constexpr int kGrpcStatusCount = 17;

// "RESOURCE_EXHAUSTED", ...
const char* grpc_status_name(GrpcStatus status);
// The code as sent in grpc-status.
constexpr int to_int(GrpcStatus status) { return static_cast<int>(status); }
// A known code (0..16), or nullopt.
std::optional<GrpcStatus> grpc_status_from_int(int code);

}  // namespace sluice
