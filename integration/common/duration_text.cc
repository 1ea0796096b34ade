#include "integration/common/duration_text.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

namespace sluice::itest {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t nanos;
};

// Longer suffixes first so "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 6> kUnits{{{"ns", 1},
                                      {"us", 1'000},
                                      {"ms", 1'000'000},
                                      {"s", 1'000'000'000},
                                      {"m", 60'000'000'000},
                                      {"h", 3'600'000'000'000}}};

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  if (text == "0") return Duration::zero();
  for (const Unit& unit : kUnits) {
    if (text.size() <= unit.suffix.size() || !text.ends_with(unit.suffix)) continue;
    std::string_view number = text.substr(0, text.size() - unit.suffix.size());
    // Only digits and one '.', so from_chars cannot accept signs, exponents or "inf".
    int dots = 0;
    for (char c : number) {
      if (c == '.') {
        ++dots;
      } else if (c < '0' || c > '9') {
        return std::nullopt;
      }
    }
    if (dots > 1 || number == ".") return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
    double nanos = std::round(value * static_cast<double>(unit.nanos));
    if (nanos > 9.0e18) return std::nullopt;
    return Duration(static_cast<int64_t>(nanos));
  }
  return std::nullopt;
}

std::string format_duration(Duration d) {
  int64_t nanos = d.count();
  if (nanos == 0) return "0";
  // Walk from the largest unit down; the first that divides exactly wins.
  for (auto it = kUnits.rbegin(); it != kUnits.rend(); ++it) {
    if (nanos % it->nanos == 0) {
      return std::to_string(nanos / it->nanos) + std::string(it->suffix);
    }
  }
  return std::to_string(nanos) + "ns";
}

}  // namespace sluice::itest
