// Bytes waiting to be written to one socket, as a list of segments: frame headers and control
// frames are copied into owned blocks; DATA payloads are referenced where they already sit (in a
// BodyBuffer chunk), so a forwarded payload is copied exactly once, on arrival. Small payloads
// are copied along with their frame headers instead, so consecutive small frames stay one segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>

namespace sluice::h2 {

class OutputQueue {
 public:
  // append_shared() copies payloads up to this size instead of referencing them.
  static constexpr std::size_t kCopyAtMost = 512;

  struct Segment {
    std::shared_ptr<const uint8_t[]> keep;  // keeps `data` alive until written
    const uint8_t* data;
    std::size_t length;
  };

  // Copies bytes into an owned block.
  void append(const uint8_t* data, std::size_t length);
  // References bytes kept alive by `keep` (no copy), or copies them when at most kCopyAtMost.
  void append_shared(std::shared_ptr<const uint8_t[]> keep, const uint8_t* data,
                     std::size_t length);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls f(const uint8_t*, size_t) for segments from the front, up to `max_segments`.
  template <class F>
  void for_each_front(std::size_t max_segments, F&& f) const {
    std::size_t n = 0;
    for (const Segment& s : segments_) {
      if (n++ == max_segments) break;
      f(s.data, s.length);
    }
  }
  // Drops `n` written bytes from the front.
  void consume(std::size_t n);
  void clear();

 private:
  static constexpr std::size_t kBlockSize = std::size_t{16} * 1024;

  std::deque<Segment> segments_;
  std::size_t size_ = 0;
  // The owned block currently being filled, and how much of it is used.
  std::shared_ptr<uint8_t[]> block_;
  std::size_t block_used_ = 0;
};

}  // namespace sluice::h2
