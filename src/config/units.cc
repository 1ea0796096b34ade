#include "src/config/units.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <numeric>

namespace sluice {
namespace {

struct Unit {
  std::string_view suffix;
  uint64_t scale;
};

// Longest suffixes first so that "ms" is not read as "m" + garbage.
constexpr std::array<Unit, 7> kDurationUnits{{
    {"ns", 1},
    {"us", 1'000},
    {"\u00b5s", 1'000},
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

constexpr std::array<Unit, 9> kSizeUnits{{
    {"KiB", uint64_t{1} << 10},
    {"MiB", uint64_t{1} << 20},
    {"GiB", uint64_t{1} << 30},
    {"TiB", uint64_t{1} << 40},
    {"KB", 1'000},
    {"MB", 1'000'000},
    {"GB", 1'000'000'000},
    {"TB", 1'000'000'000'000},
    {"", 1},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The decimal number at the start of `text` ("12", "1.5"), split into its two digit runs.
struct Decimal {
  std::string_view whole;
  std::string_view fraction;
  size_t length = 0;  // characters consumed
};

std::optional<Decimal> read_decimal(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == 0) return std::nullopt;
  Decimal d{text.substr(0, i), {}, i};
  if (i < text.size() && text[i] == '.') {
    size_t j = i + 1;
    while (j < text.size() && is_digit(text[j])) ++j;
    if (j == i + 1) return std::nullopt;  // "1." is not a number
    d.fraction = text.substr(i + 1, j - i - 1);
    d.length = j;
  }
  return d;
}

// whole.fraction * scale, exactly, or nullopt when it overflows or is not a whole number.
std::optional<uint64_t> scale_exact(const Decimal& d, uint64_t scale) {
  uint64_t whole = 0;
  auto [end, ec] = std::from_chars(d.whole.data(), d.whole.data() + d.whole.size(), whole);
  if (ec != std::errc() || end != d.whole.data() + d.whole.size()) return std::nullopt;
  uint64_t result = 0;
  if (__builtin_mul_overflow(whole, scale, &result)) return std::nullopt;

  std::string_view fraction = d.fraction;
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (fraction.empty()) return result;
  // More digits than any unit's scale can absorb cannot give a whole number.
  if (fraction.size() > 18) return std::nullopt;
  uint64_t numerator = 0;
  std::from_chars(fraction.data(), fraction.data() + fraction.size(), numerator);
  uint64_t denominator = 1;
  for (size_t i = 0; i < fraction.size(); ++i) denominator *= 10;
  // numerator * scale / denominator must be exact: cancel the common factor first so that the
  // product cannot overflow for any input that passes.
  const uint64_t g = std::gcd(scale, denominator);
  const uint64_t reduced_denominator = denominator / g;
  if (numerator % reduced_denominator != 0) return std::nullopt;
  uint64_t fraction_value = 0;
  if (__builtin_mul_overflow(numerator / reduced_denominator, scale / g, &fraction_value)) {
    return std::nullopt;
  }
  if (__builtin_add_overflow(result, fraction_value, &result)) return std::nullopt;
  return result;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
  const auto number = read_decimal(text);
  if (!number) return std::nullopt;
  const std::string_view suffix = text.substr(number->length);
  for (const Unit& unit : kDurationUnits) {
    if (suffix != unit.suffix) continue;
    const auto ns = scale_exact(*number, unit.scale);
    if (!ns || *ns > static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max())) {
      return std::nullopt;
    }
    return Duration(static_cast<Duration::rep>(*ns));
  }
  return std::nullopt;  // no unit, or an unknown one
}

std::optional<uint64_t> parse_size(std::string_view text) {
  const auto number = read_decimal(text);
  if (!number) return std::nullopt;
  const std::string_view suffix = text.substr(number->length);
  for (const Unit& unit : kSizeUnits) {
    if (suffix == unit.suffix) return scale_exact(*number, unit.scale);
  }
  return std::nullopt;
}

std::string format_duration(Duration d) {
  const auto ns = d.count();
  if (ns == 0) return "0s";
  if (ns < 0) return std::to_string(ns) + "ns";  // not produced by the loader; kept exact anyway
  const auto n = static_cast<uint64_t>(ns);
  // The largest unit that divides it; "us" is the canonical spelling of microseconds.
  const auto unit =
      std::find_if(kDurationUnits.rbegin(), kDurationUnits.rend(),
                   [n](const auto& u) { return u.suffix != "\u00b5s" && n % u.scale == 0; });
  if (unit == kDurationUnits.rend()) return std::to_string(n) + "ns";
  return std::to_string(n / unit->scale) + std::string(unit->suffix);
}

std::string format_size(uint64_t bytes) {
  if (bytes == 0) return "0";
  const Unit* best = nullptr;
  // Binary units first: window and frame sizes are powers of two in practice.
  for (const Unit& unit : kSizeUnits) {
    if (unit.suffix.empty() || bytes % unit.scale != 0) continue;
    const bool binary = unit.suffix.find('i') != std::string_view::npos;
    if (best == nullptr) {
      best = &unit;
      continue;
    }
    const bool best_binary = best->suffix.find('i') != std::string_view::npos;
    if (binary == best_binary && unit.scale > best->scale) best = &unit;
  }
  if (best == nullptr) return std::to_string(bytes);
  return std::to_string(bytes / best->scale) + std::string(best->suffix);
}

}  // namespace sluice
