// Polices the frames a client sends against the floods nghttp2 1.52 leaves to the application
// (CVE-2019-9518 empty frames, PRIORITY and WINDOW_UPDATE floods; Envoy's protocol constraints).
// It reads frame headers from the raw bytes, before nghttp2 sees them, so it also counts frames
// nghttp2 ignores without a callback (PRIORITY once SETTINGS_NO_RFC7540_PRIORITIES is sent).
// For the same reason it is where a PRIORITY frame naming its own stream as its dependency is
// noticed (RFC 9113 5.3.1: a stream error the session then answers).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace sluice::h2 {

// Envoy's defaults. Not in the YAML yet: see the hardening report.
struct FloodLimits {
  // DATA/HEADERS/CONTINUATION frames in a row with no payload and no END_STREAM.
  uint32_t max_consecutive_empty_frames = 1;
  // PRIORITY frames allowed per stream the client opened (+1 for the connection).
  uint32_t max_priority_frames_per_stream = 100;
  // WINDOW_UPDATE frames allowed per DATA frame sluice sent on the connection.
  uint32_t max_window_updates_per_data_frame_sent = 10;
  // Frames nghttp2 may hold for a client that does not read (RST_STREAM, ACKs, ...).
  std::size_t max_outbound_frames = 10000;
};

class FloodGuard {
 public:
  enum class Verdict { Ok, EmptyFrames, PriorityFlood, WindowUpdateFlood };

  // `skip` bytes at the start (the client connection preface) are not frames.
  FloodGuard(const FloodLimits& limits, std::size_t skip);

  // Feeds bytes as they arrive, in any split. Returns the first violation, and keeps returning
  // it: the connection is to be closed.
  Verdict scan(const uint8_t* data, std::size_t length);
  // A DATA frame went out: the client may answer it with WINDOW_UPDATEs.
  void on_data_frame_sent() { ++data_frames_sent_; }
  // Streams of the PRIORITY frames scanned so far that depend on themselves, in order; the
  // caller takes them (and clears the list) after each scan.
  std::vector<int32_t>& self_dependent_streams() { return self_dependent_; }
  // The DATA frames whose header completed in the last scan(): (offset in those bytes where
  // the header starts, 0 if it started in an earlier scan; stream id).
  const std::vector<std::pair<std::size_t, int32_t>>& data_frames() const { return data_frames_; }

  static const char* describe(Verdict v);

 private:
  static constexpr std::size_t kHeaderSize = 9;

  // A complete frame header was read (and, for padded frames, the pad length byte).
  Verdict on_frame(uint8_t pad_length);
  Verdict check_empty(bool empty);

  FloodLimits limits_;
  std::size_t skip_;
  Verdict verdict_ = Verdict::Ok;

  // Parser state: header bytes collected, then payload bytes still to skip.
  std::array<uint8_t, kHeaderSize> header_{};
  std::size_t header_used_ = 0;
  bool want_pad_length_ = false;  // the next payload byte is the pad length
  std::size_t payload_left_ = 0;
  std::size_t dependency_used_ = 0;  // PRIORITY: bytes of the stream dependency read so far
  std::size_t dependency_want_ = 0;  // 4 while reading a PRIORITY frame's dependency, else 0
  uint32_t dependency_ = 0;
  std::vector<int32_t> self_dependent_;
  std::vector<std::pair<std::size_t, int32_t>> data_frames_;
  uint32_t length_ = 0;
  uint8_t type_ = 0;
  uint8_t flags_ = 0;
  uint32_t stream_id_ = 0;

  // Counts.
  uint32_t consecutive_empty_ = 0;
  uint64_t streams_opened_ = 0;
  uint32_t highest_stream_id_ = 0;
  uint64_t priority_frames_ = 0;
  uint64_t window_updates_ = 0;
  uint64_t data_frames_sent_ = 0;
};

}  // namespace sluice::h2
