#include "src/h2/closed_streams.h"

namespace sluice::h2 {

ClosedStreams::ClosedStreams(std::size_t capacity, std::size_t max_gaps)
    : capacity_(capacity), max_gaps_(max_gaps) {}

void ClosedStreams::opened(int32_t stream_id) {
  if (stream_id <= highest_) return;
  // Client stream ids are odd: the next one expected is highest_ + 2 (1 for the first).
  const int32_t expected = highest_ == 0 ? 1 : highest_ + 2;
  if (stream_id > expected) {
    gaps_.emplace_back(expected, stream_id - 2);
    if (gaps_.size() > max_gaps_) gaps_.pop_front();
  }
  highest_ = stream_id;
}

void ClosedStreams::closed(int32_t stream_id, How how) {
  if (how_.insert_or_assign(stream_id, how).second) order_.push_back(stream_id);
  if (order_.size() > capacity_) {
    how_.erase(order_.front());
    order_.pop_front();
  }
}

ClosedStreams::Verdict ClosedStreams::judge(int32_t stream_id, bool headers) const {
  if (auto it = how_.find(stream_id); it != how_.end()) {
    switch (it->second) {
      case How::LocalReset:
        // 5.1 "closed": frames the client sent before it saw our RST_STREAM MUST be ignored.
        return Verdict::Ignore;
      case How::PeerReset:
      case How::Ended:
        // 5.1 "closed": the client closed (or ended) the stream itself, so nothing it sends
        // now can be a race; 5.1 allows a connection error STREAM_CLOSED (6.1 for DATA).
        return Verdict::StreamClosed;
    }
  }
  for (const auto& [first, last] : gaps_) {
    if (stream_id >= first && stream_id <= last) {
      // Never opened, and implicitly closed by a higher id (5.1.1): HEADERS on it is an
      // unexpected stream identifier (PROTOCOL_ERROR); DATA on a closed stream is
      // STREAM_CLOSED (6.1), a connection error as no race can explain it.
      return headers ? Verdict::ProtocolError : Verdict::StreamClosed;
    }
  }
  return Verdict::Ignore;  // forgotten, or above the last stream id of a GOAWAY we sent
}

}  // namespace sluice::h2
