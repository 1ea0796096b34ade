// An ordered list of header fields stored in one contiguous string (one or two allocations per
// block instead of two per field). Names are lower-case as HTTP/2 requires.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::h2 {

class HeaderBlock {
 public:
  void reserve(std::size_t fields, std::size_t bytes);
  void add(std::string_view name, std::string_view value);
  void clear();

  std::size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }
  std::string_view name(std::size_t i) const;
  std::string_view value(std::size_t i) const;
  // First value of `name`, if present.
  std::optional<std::string_view> find(std::string_view name) const;
  // Total bytes of names + values (+32 per field, as HPACK counts them).
  std::size_t hpack_size() const { return storage_.size() + 32 * fields_.size(); }

  // Appends nghttp2 name/value entries pointing into this block (valid until the block
  // changes) to `out`, leaving out fields named `skip`.
  void append_nv(std::vector<nghttp2_nv>& out, std::string_view skip = {}) const;

  // A name/value entry for nghttp2 pointing at `name` and `value` (which must outlive it).
  static nghttp2_nv make_nv(std::string_view name, std::string_view value);

 private:
  struct Field {
    uint32_t name_offset;
    uint32_t name_length;
    uint32_t value_offset;
    uint32_t value_length;
  };
  std::string storage_;
  std::vector<Field> fields_;
};

}  // namespace sluice::h2
