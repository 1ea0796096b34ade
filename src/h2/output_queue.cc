#include "src/h2/output_queue.h"

#include <algorithm>
#include <cstring>

namespace sluice::h2 {

void OutputQueue::append(const uint8_t* data, std::size_t length) {
  while (length > 0) {
    if (!block_ || block_used_ == kBlockSize) {
      // A block stays alive while any segment references it; a fresh one is started otherwise.
      block_ = std::make_shared_for_overwrite<uint8_t[]>(kBlockSize);
      block_used_ = 0;
    }
    const std::size_t n = std::min(length, kBlockSize - block_used_);
    uint8_t* dst = block_.get() + block_used_;
    std::memcpy(dst, data, n);
    // Extend the last segment when it ends exactly where this copy starts (same block).
    if (!segments_.empty() && segments_.back().keep.get() == block_.get() &&
        segments_.back().data + segments_.back().length == dst) {
      segments_.back().length += n;
    } else {
      segments_.push_back(Segment{block_, dst, n});
    }
    block_used_ += n;
    size_ += n;
    data += n;
    length -= n;
  }
}

void OutputQueue::append_shared(std::shared_ptr<const uint8_t[]> keep, const uint8_t* data,
                                std::size_t length) {
  if (length == 0) return;
  if (length <= kCopyAtMost) {
    // A small payload costs less to copy than to keep as its own segment: the owned block stays
    // one contiguous segment, so one gathered write carries many small messages (Asio sends at
    // most 64 segments per system call).
    append(data, length);
    return;
  }
  if (!segments_.empty() && segments_.back().keep == keep &&
      segments_.back().data + segments_.back().length == data) {
    segments_.back().length += length;
  } else {
    segments_.push_back(Segment{std::move(keep), data, length});
  }
  size_ += length;
}

void OutputQueue::consume(std::size_t n) {
  size_ -= n;
  while (n > 0) {
    Segment& front = segments_.front();
    if (n < front.length) {
      front.data += n;
      front.length -= n;
      return;
    }
    n -= front.length;
    segments_.pop_front();
  }
  if (segments_.empty() && block_ && block_.use_count() == 1) {
    block_used_ = 0;  // reuse the owned block from its start
  }
}

void OutputQueue::clear() {
  segments_.clear();
  size_ = 0;
  block_.reset();
  block_used_ = 0;
}

}  // namespace sluice::h2
