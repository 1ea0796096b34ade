// Durations and sizes as operators write them in YAML ("8ms", "1.5s", "64KiB"), and back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/core/time.h"

namespace sluice {

// Accepts a non-negative decimal number followed by a unit: ns, us (or µs), ms, s, m, h
// ("250us", "1.5s"). A bare number is rejected: "timeout: 5" is ambiguous, so units are required.
// Fractions must resolve to whole nanoseconds. nullopt on malformed input or overflow.
std::optional<Duration> parse_duration(std::string_view text);

// Accepts plain bytes ("65535") or a number with a binary (KiB, MiB, GiB, TiB) or decimal
// (KB, MB, GB, TB) unit. Fractions are allowed when the result is a whole number of bytes
// ("1.5KiB" = 1536). nullopt on malformed input or overflow.
std::optional<uint64_t> parse_size(std::string_view text);

// The largest unit that represents `d` exactly as an integer: "8ms", "1s", "1500ms", "0s".
// parse_duration(format_duration(d)) == d for every non-negative d.
std::string format_duration(Duration d);

// Binary units when exact ("64KiB", "1MiB"), else decimal units when exact ("64KB"), else bytes.
// parse_size(format_size(n)) == n for every n.
std::string format_size(uint64_t bytes);

}  // namespace sluice
