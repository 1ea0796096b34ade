#include "filters/filter.h"

namespace sluice {

const char* to_string(EndReason reason) {
  switch (reason) {
#define SLUICE_CASE(e, name, help) \
  case EndReason::e:               \
    return name;
    SLUICE_END_REASONS(SLUICE_CASE)
#undef SLUICE_CASE
  }
  return "unknown";
}

const char* describe(EndReason reason) {
  switch (reason) {
#define SLUICE_CASE(e, name, help) \
  case EndReason::e:               \
    return help;
    SLUICE_END_REASONS(SLUICE_CASE)
#undef SLUICE_CASE
  }
  return "";
}

}  // namespace sluice
