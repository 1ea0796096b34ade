// An ordered list of header fields stored in one contiguous byte array. A typical gRPC block fits
// the inline storage (no allocation at all); a larger one spills to the heap in two allocations,
// not two per field. Names are lower-case as HTTP/2 requires.
#pragma once

#include <nghttp2/nghttp2.h>

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::h2 {

class HeaderBlock {
 public:
  HeaderBlock() = default;
  HeaderBlock(const HeaderBlock&) = default;
  HeaderBlock& operator=(const HeaderBlock&) = default;
  // Out of line: GCC 12 reports a false -Wstringop-overread when it inlines small_vector's move
  // of inline elements into a caller that knows the block's contents.
  HeaderBlock(HeaderBlock&& other) noexcept;
  HeaderBlock& operator=(HeaderBlock&& other) noexcept;

  // `never_index` sends the field as an HPACK literal that is never indexed: for a value that
  // differs on every message (a timer, a queue time), which would only churn both sides'
  // dynamic tables and evict the fields that repeat; and for a field that arrived that way
  // (RFC 7541 section 7.1.3: an intermediary must keep the never-indexed representation).
  void add(std::string_view name, std::string_view value, bool never_index = false);
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
  static nghttp2_nv make_nv(std::string_view name, std::string_view value,
                            bool never_index = false);

 private:
  struct Field {
    uint32_t name_offset;
    uint32_t name_length;
    uint32_t value_offset;
    uint32_t value_length;
    uint8_t nv_flags;  // NGHTTP2_NV_FLAG_*
  };
  // Sized for a gRPC request's headers (~150-300 bytes, 6-10 fields with a grpc++ client).
  static constexpr std::size_t kInlineBytes = 256;
  static constexpr std::size_t kInlineFields = 10;
  boost::container::small_vector<char, kInlineBytes> storage_;
  boost::container::small_vector<Field, kInlineFields> fields_;
  std::string_view bytes() const { return {storage_.data(), storage_.size()}; }
};

}  // namespace sluice::h2
