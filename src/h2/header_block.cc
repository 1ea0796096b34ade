#include "src/h2/header_block.h"

#include <cstring>

namespace sluice::h2 {

HeaderBlock::HeaderBlock(HeaderBlock&& other) noexcept
    : storage_(std::move(other.storage_)), fields_(std::move(other.fields_)) {}

HeaderBlock& HeaderBlock::operator=(HeaderBlock&& other) noexcept {
  storage_ = std::move(other.storage_);
  fields_ = std::move(other.fields_);
  return *this;
}

namespace {
uint8_t nv_flags(bool never_index) {
  return never_index ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
}
}  // namespace

void HeaderBlock::add(std::string_view name, std::string_view value, bool never_index) {
  const std::size_t at = storage_.size();
  const Field f{static_cast<uint32_t>(at), static_cast<uint32_t>(name.size()),
                static_cast<uint32_t>(at + name.size()), static_cast<uint32_t>(value.size()),
                nv_flags(never_index)};
  // Grow without zero-filling, then copy both strings in (small_vector's range insert copies
  // char by char).
  storage_.resize(at + name.size() + value.size(), boost::container::default_init);
  std::memcpy(storage_.data() + at, name.data(), name.size());
  std::memcpy(storage_.data() + f.value_offset, value.data(), value.size());
  fields_.push_back(f);
}

void HeaderBlock::clear() {
  storage_.clear();
  fields_.clear();
}

std::string_view HeaderBlock::name(std::size_t i) const {
  return bytes().substr(fields_[i].name_offset, fields_[i].name_length);
}

std::string_view HeaderBlock::value(std::size_t i) const {
  return bytes().substr(fields_[i].value_offset, fields_[i].value_length);
}

std::optional<std::string_view> HeaderBlock::find(std::string_view n) const {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (name(i) == n) return value(i);
  }
  return std::nullopt;
}

void HeaderBlock::append_nv(std::vector<nghttp2_nv>& out, std::string_view skip) const {
  // nghttp2's API takes non-const pointers but never writes through them.
  auto* base = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(storage_.data()));
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    if (!skip.empty() && name(i) == skip) continue;
    out.push_back(nghttp2_nv{base + f.name_offset, base + f.value_offset, f.name_length,
                             f.value_length, f.nv_flags});
  }
}

nghttp2_nv HeaderBlock::make_nv(std::string_view name, std::string_view value, bool never_index) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), nv_flags(never_index)};
}

}  // namespace sluice::h2
