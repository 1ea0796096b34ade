// A binary-safe encoding of a list of byte strings, used for gRPC metadata in a stream entry
// and for the whole reply value in a reply list: netstrings, "<decimal length>:<bytes>," one
// after another (D. J. Bernstein's format). Any byte may appear inside (`-bin` values, NUL,
// CR, LF), and the text stays readable in redis-cli: "12:content-type,16:application/grpc,".
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace sluice::queue {

// Name-value pairs in order, repeats allowed (HTTP/2 header fields as received).
using Metadata = std::vector<std::pair<std::string, std::string>>;

// Appends one netstring.
void append_netstring(std::string& out, std::string_view bytes);

// Parses all of `s` as a decimal integer; false if anything else is there (or it overflows).
template <typename Int>
bool parse_decimal(std::string_view s, Int& out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}
// Reads one netstring from the front of `in` and advances `in` past it. nullopt (and `in`
// unchanged) when the front is not a well-formed netstring: no digits, a leading zero in a
// longer length, more than 10 digits, a length past the end, or no ',' after the bytes.
std::optional<std::string_view> read_netstring(std::string_view& in);

// Pairs as netstrings, name then value.
std::string encode_metadata(const Metadata& metadata);
// The inverse; nullopt unless `in` is exactly an even number of netstrings.
std::optional<Metadata> decode_metadata(std::string_view in);

}  // namespace sluice::queue
