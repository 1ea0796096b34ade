#include "src/core/criticality.h"

namespace sluice {

const char* to_string(Criticality c) {
  switch (c) {
#define SLUICE_CASE(e, name) \
  case Criticality::e:       \
    return name;
    SLUICE_CRITICALITIES(SLUICE_CASE)
#undef SLUICE_CASE
  }
  return "critical";
}

std::optional<Criticality> parse_criticality(std::string_view name) {
#define SLUICE_PARSE(e, n) \
  if (name == n) return Criticality::e;
  SLUICE_CRITICALITIES(SLUICE_PARSE)
#undef SLUICE_PARSE
  return std::nullopt;
}

}  // namespace sluice
