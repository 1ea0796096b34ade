#include "src/h2/flood_guard.h"

#include <algorithm>

namespace sluice::h2 {

namespace {

// RFC 9113 frame types and flags (nghttp2's names are in its header; these keep this class
// free of nghttp2, so it is tested on plain bytes).
constexpr uint8_t kData = 0x0;
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kPriority = 0x2;
constexpr uint8_t kWindowUpdate = 0x8;
constexpr uint8_t kContinuation = 0x9;
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriorityFlag = 0x20;

// Bytes of a frame's payload that are content: padding and the HEADERS priority block removed.
// A malformed frame (more padding than payload) counts as empty; nghttp2 rejects it anyway.
uint32_t content_length(uint8_t type, uint8_t flags, uint32_t length, uint8_t pad_length) {
  int64_t n = length;
  if ((flags & kPadded) != 0) n -= 1 + static_cast<int64_t>(pad_length);
  if (type == kHeaders && (flags & kPriorityFlag) != 0) n -= 5;
  return static_cast<uint32_t>(std::max<int64_t>(n, 0));
}

}  // namespace

FloodGuard::FloodGuard(const FloodLimits& limits, std::size_t skip)
    : limits_(limits), skip_(skip) {}

FloodGuard::Verdict FloodGuard::scan(const uint8_t* data, std::size_t length) {
  const uint8_t* const begin = data;
  std::size_t header_start = 0;  // where the frame header being read starts in these bytes
  data_frames_.clear();
  while (length > 0 && verdict_ == Verdict::Ok) {
    if (skip_ > 0) {
      const std::size_t n = std::min(skip_, length);
      skip_ -= n;
      data += n;
      length -= n;
      continue;
    }
    if (want_pad_length_) {
      want_pad_length_ = false;
      --payload_left_;
      const uint8_t pad = *data;
      ++data;
      --length;
      verdict_ = on_frame(pad);
      continue;
    }
    if (dependency_used_ < dependency_want_) {
      dependency_ = (dependency_ << 8) | *data;
      ++data;
      --length;
      --payload_left_;
      if (++dependency_used_ == dependency_want_) {
        dependency_want_ = 0;
        if ((dependency_ & 0x7fffffffu) == stream_id_ && stream_id_ != 0) {
          self_dependent_.push_back(static_cast<int32_t>(stream_id_));
        }
      }
      continue;
    }
    if (payload_left_ > 0) {
      const std::size_t n = std::min(payload_left_, length);
      payload_left_ -= n;
      data += n;
      length -= n;
      continue;
    }
    if (header_used_ == 0) header_start = static_cast<std::size_t>(data - begin);
    const std::size_t n = std::min(kHeaderSize - header_used_, length);
    std::copy_n(data, n, header_.begin() + static_cast<std::ptrdiff_t>(header_used_));
    header_used_ += n;
    data += n;
    length -= n;
    if (header_used_ < kHeaderSize) break;
    header_used_ = 0;
    length_ = (uint32_t{header_[0]} << 16) | (uint32_t{header_[1]} << 8) | header_[2];
    type_ = header_[3];
    flags_ = header_[4];
    stream_id_ = ((uint32_t{header_[5]} << 24) | (uint32_t{header_[6]} << 16) |
                  (uint32_t{header_[7]} << 8) | header_[8]) &
                 0x7fffffffu;
    payload_left_ = length_;
    if (type_ == kData) data_frames_.emplace_back(header_start, static_cast<int32_t>(stream_id_));
    if (type_ == kPriority && length_ == 5) {  // other lengths: nghttp2's FRAME_SIZE_ERROR
      dependency_used_ = 0;
      dependency_want_ = 4;
      dependency_ = 0;
    }
    if ((type_ == kData || type_ == kHeaders) && (flags_ & kPadded) != 0 && length_ > 0) {
      want_pad_length_ = true;  // the verdict waits for the pad length byte
    } else {
      verdict_ = on_frame(0);
    }
  }
  return verdict_;
}

FloodGuard::Verdict FloodGuard::on_frame(uint8_t pad_length) {
  switch (type_) {
    case kData:
      return check_empty(content_length(type_, flags_, length_, pad_length) == 0 &&
                         (flags_ & kEndStream) == 0);
    case kHeaders:
      if ((stream_id_ & 1u) != 0 && stream_id_ > highest_stream_id_) {
        highest_stream_id_ = stream_id_;
        ++streams_opened_;
      }
      return check_empty(content_length(type_, flags_, length_, pad_length) == 0 &&
                         (flags_ & kEndStream) == 0);
    case kContinuation:
      return check_empty(length_ == 0);
    case kPriority:
      ++priority_frames_;
      if (priority_frames_ >
          uint64_t{limits_.max_priority_frames_per_stream} * (1 + streams_opened_)) {
        return Verdict::PriorityFlood;
      }
      return Verdict::Ok;
    case kWindowUpdate:
      // Envoy's budget: a few for the connection, two per stream, and some per DATA frame the
      // client had to acknowledge.
      ++window_updates_;
      if (window_updates_ >
          5 + 2 * (streams_opened_ +
                   uint64_t{limits_.max_window_updates_per_data_frame_sent} * data_frames_sent_)) {
        return Verdict::WindowUpdateFlood;
      }
      return Verdict::Ok;
    default:
      return Verdict::Ok;
  }
}

FloodGuard::Verdict FloodGuard::check_empty(bool empty) {
  if (!empty) {
    consecutive_empty_ = 0;
    return Verdict::Ok;
  }
  if (++consecutive_empty_ > limits_.max_consecutive_empty_frames) return Verdict::EmptyFrames;
  return Verdict::Ok;
}

const char* FloodGuard::describe(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "ok";
    case Verdict::EmptyFrames:
      return "too many consecutive frames with an empty payload";
    case Verdict::PriorityFlood:
      return "too many PRIORITY frames";
    case Verdict::WindowUpdateFlood:
      return "too many WINDOW_UPDATE frames";
  }
  return "unknown";
}

}  // namespace sluice::h2
