#include "src/h2/body_buffer.h"

#include <algorithm>
#include <cstring>

namespace sluice::h2 {

void BodyBuffer::append(const uint8_t* data, std::size_t length) {
  if (length == 0) return;
  if (chunks_.empty() && length <= kInline - inline_end_) {
    std::memcpy(inline_ + inline_end_, data, length);
    inline_end_ += length;
    size_ += length;
    return;
  }
  if (!chunks_.empty()) {
    Chunk& tail = chunks_.back();
    const std::size_t room = tail.capacity - tail.end;
    // Bytes already referenced by an OutputQueue sit before `end`, so writing after it is safe.
    if (room >= length) {
      std::memcpy(tail.memory.get() + tail.end, data, length);
      tail.end += length;
      size_ += length;
      return;
    }
  }
  const std::size_t capacity = std::max(length, had_chunk_ ? kMinChunk : kFirstChunk);
  had_chunk_ = true;
  Chunk c{std::make_shared_for_overwrite<uint8_t[]>(capacity), capacity, 0, length};
  std::memcpy(c.memory.get(), data, length);
  chunks_.push_back(std::move(c));
  size_ += length;
}

std::size_t BodyBuffer::take(std::size_t n, OutputQueue& out) {
  std::size_t moved = 0;
  if (inline_begin_ < inline_end_) {
    moved = std::min(n, inline_end_ - inline_begin_);
    out.append(inline_ + inline_begin_, moved);
    inline_begin_ += moved;
    if (inline_begin_ == inline_end_) inline_begin_ = inline_end_ = 0;
  }
  while (moved < n && !chunks_.empty()) {
    Chunk& front = chunks_.front();
    const std::size_t k = std::min(n - moved, front.end - front.begin);
    out.append_shared(front.memory, front.memory.get() + front.begin, k);
    front.begin += k;
    moved += k;
    if (front.begin == front.end) {
      // Keep a tail chunk with room: later appends go after the bytes just referenced.
      if (chunks_.size() == 1 && front.end < front.capacity) break;
      chunks_.erase(chunks_.begin());
    }
  }
  size_ -= moved;
  return moved;
}

std::size_t BodyBuffer::discard() {
  const std::size_t dropped = size_;
  chunks_.clear();
  inline_begin_ = inline_end_ = 0;
  size_ = 0;
  return dropped;
}

void BodyBuffer::copy_to(BodyBuffer& out) const {
  out.append(inline_ + inline_begin_, inline_end_ - inline_begin_);
  for (const Chunk& c : chunks_) out.append(c.memory.get() + c.begin, c.end - c.begin);
}

}  // namespace sluice::h2
