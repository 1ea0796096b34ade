// Traffic classes by criticality, the four levels of Google's SRE book ("Handling Overload")
// that gRPC users know. Ordered from least to most critical: when a limit is reached, waiters are
// served most critical first and a full queue sheds its least critical waiter first.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice {

// X(Enumerator, name)
#define SLUICE_CRITICALITIES(X)      \
  X(Sheddable, "sheddable")          \
  X(SheddablePlus, "sheddable_plus") \
  X(Critical, "critical")            \
  X(CriticalPlus, "critical_plus")

enum class Criticality : uint8_t {
#define SLUICE_ENUMERATOR(e, name) e,
  SLUICE_CRITICALITIES(SLUICE_ENUMERATOR)
#undef SLUICE_ENUMERATOR
};

inline constexpr std::size_t kCriticalityCount = 4;

// Every class, least critical first (the enum's order).
inline constexpr std::array<Criticality, kCriticalityCount> kCriticalities = {
    Criticality::Sheddable, Criticality::SheddablePlus, Criticality::Critical,
    Criticality::CriticalPlus};

constexpr std::size_t index_of(Criticality c) { return static_cast<std::size_t>(c); }
// "sheddable", "sheddable_plus", "critical", "critical_plus".
const char* to_string(Criticality c);
// The class a header value names: one of the names above in any ASCII case, so that
// "CRITICAL_PLUS" (the spelling of Google's Criticality enum) reads as critical_plus.
std::optional<Criticality> parse_criticality(std::string_view name);

}  // namespace sluice
