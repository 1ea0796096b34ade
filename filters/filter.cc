#include "filters/filter.h"

namespace sluice {

const char* to_string(EndReason reason) {
  switch (reason) {
    case EndReason::Completed:
      return "completed";
    case EndReason::Shed:
      return "shed";
    case EndReason::ClientReset:
      return "client_reset";
    case EndReason::DeadlineExceeded:
      return "deadline_exceeded";
    case EndReason::UpstreamUnavailable:
      return "upstream_unavailable";
    case EndReason::UpstreamReset:
      return "upstream_reset";
    case EndReason::Drained:
      return "drained";
    case EndReason::Internal:
      return "internal";
  }
  return "unknown";
}

}  // namespace sluice
