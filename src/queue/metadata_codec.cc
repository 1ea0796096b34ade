#include "src/queue/metadata_codec.h"

namespace sluice::queue {

void append_netstring(std::string& out, std::string_view bytes) {
  out += std::to_string(bytes.size());
  out += ':';
  out.append(bytes.data(), bytes.size());
  out += ',';
}

std::optional<std::string_view> read_netstring(std::string_view& in) {
  constexpr std::size_t kMaxDigits = 10;  // up to 9,999,999,999: beyond any Redis value
  std::size_t len = 0;
  std::size_t i = 0;
  while (i < in.size() && in[i] >= '0' && in[i] <= '9') {
    if (i == kMaxDigits) return std::nullopt;
    len = len * 10 + static_cast<std::size_t>(in[i] - '0');
    ++i;
  }
  // Canonical lengths only ("0" or no leading zero), so every encoding is the only one.
  if (i == 0 || (i > 1 && in[0] == '0') || i >= in.size() || in[i] != ':') return std::nullopt;
  const std::size_t start = i + 1;
  if (len > in.size() - start || in.size() - start - len < 1 || in[start + len] != ',') {
    return std::nullopt;
  }
  const std::string_view bytes = in.substr(start, len);
  in.remove_prefix(start + len + 1);
  return bytes;
}

std::string encode_metadata(const Metadata& metadata) {
  std::string out;
  std::size_t size = 0;
  for (const auto& [name, value] : metadata) size += name.size() + value.size() + 8;
  out.reserve(size);
  for (const auto& [name, value] : metadata) {
    append_netstring(out, name);
    append_netstring(out, value);
  }
  return out;
}

std::optional<Metadata> decode_metadata(std::string_view in) {
  Metadata out;
  while (!in.empty()) {
    const auto name = read_netstring(in);
    if (!name) return std::nullopt;
    const auto value = read_netstring(in);
    if (!value) return std::nullopt;
    out.emplace_back(std::string(*name), std::string(*value));
  }
  return out;
}

}  // namespace sluice::queue
