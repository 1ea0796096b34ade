#include "src/proxy/close_reason.h"

namespace sluice {

const char* to_string(CloseReason reason) {
  switch (reason) {
#define SLUICE_CASE(e, name) \
  case CloseReason::e:       \
    return name;
    SLUICE_CLOSE_REASONS(SLUICE_CASE)
#undef SLUICE_CASE
  }
  return "unknown";
}

}  // namespace sluice
