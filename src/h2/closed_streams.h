// What a server session remembers of the client's streams that are gone, so that a DATA or
// HEADERS frame on one gets the answer RFC 9113 5.1 asks for. nghttp2 forgets a stream once
// it closes (sluice sends SETTINGS_NO_RFC7540_PRIORITIES, so none are kept for the priority
// tree) and then ignores every frame on it; this class tells the cases apart.
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

namespace sluice::h2 {

class ClosedStreams {
 public:
  // How a stream closed.
  enum class How : uint8_t {
    LocalReset,  // we sent RST_STREAM: the client may have sent frames before it saw it
    PeerReset,   // the client sent RST_STREAM: it knows the stream is gone
    Ended,       // END_STREAM both ways: the client had ended its side
  };
  // What to do with a DATA or HEADERS frame on a stream that is not open.
  enum class Verdict : uint8_t {
    Ignore,         // let nghttp2 discard it (counted against the connection window)
    StreamClosed,   // connection error STREAM_CLOSED
    ProtocolError,  // connection error PROTOCOL_ERROR
  };

  // Remembers the last `capacity` closed streams and `max_gaps` ranges of skipped ids; a
  // stream forgotten since is treated as one we reset (ignored), as nghttp2 does.
  explicit ClosedStreams(std::size_t capacity = 256, std::size_t max_gaps = 32);

  // A HEADERS frame for a stream id higher than any before arrived (it opens that stream and,
  // RFC 9113 5.1.1, closes every lower idle one). Ids that are not higher are ignored.
  void opened(int32_t stream_id);
  void closed(int32_t stream_id, How how);
  // The highest stream id the client opened (0: none).
  int32_t highest() const { return highest_; }

  // A frame on `stream_id` (odd, <= highest(), not open in nghttp2): what RFC 9113 asks.
  Verdict judge(int32_t stream_id, bool headers) const;

 private:
  std::size_t capacity_;
  std::size_t max_gaps_;
  int32_t highest_ = 0;
  boost::unordered_flat_map<int32_t, How> how_;
  std::deque<int32_t> order_;                     // closed ids, oldest first (for forgetting)
  std::deque<std::pair<int32_t, int32_t>> gaps_;  // [first, last] ids skipped, never opened
};

}  // namespace sluice::h2
