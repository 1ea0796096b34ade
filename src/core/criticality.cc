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

namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char c = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (c != b[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<Criticality> parse_criticality(std::string_view name) {
#define SLUICE_PARSE(e, n) \
  if (equals_ignoring_case(name, n)) return Criticality::e;
  SLUICE_CRITICALITIES(SLUICE_PARSE)
#undef SLUICE_PARSE
  return std::nullopt;
}

}  // namespace sluice
