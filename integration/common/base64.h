// Standard base64 (RFC 4648, with padding) for binary metadata values given on command lines
// and printed in JSON results.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::itest {

std::string base64_encode(std::string_view bytes);

// Accepts padded or unpadded input; returns nullopt on characters outside the alphabet.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sluice::itest
