// Read pacing for one direction of a proxied stream. The sending peer's DATA waits here until
// the receiving side's session has taken it for its socket; only then is its stream-level
// flow-control credit returned to the sender (WINDOW_UPDATE). So at most one stream window is
// held per direction, a request waiting for admission holds nothing beyond its first window,
// and a slow receiver slows its sender through HTTP/2 itself: sluice's memory stays flat however
// long an overload lasts.
//
// The other half of the rule lives in the codec: the connection-level window is returned as
// soon as bytes arrive (h2::Session, on_data_chunk_recv), because the stream windows already
// bound them and one stalled stream must not stall its connection's other streams.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/h2/body_buffer.h"

namespace sluice {

class PacedBody {
 public:
  // Where credit goes back: the sending peer's stream window.
  class Sender {
   public:
    virtual ~Sender() = default;
    virtual void return_credit(std::size_t n) = 0;
  };

  explicit PacedBody(Sender& sender) : sender_(sender) {}

  // What the receiving session sends from (StreamEvents::outgoing()).
  h2::BodyBuffer& buffer() { return buffer_; }
  const h2::BodyBuffer& buffer() const { return buffer_; }

  // DATA arrived from the sender. Its credit is held until delivered().
  void received(const uint8_t* data, std::size_t n) {
    received_ += n;
    buffer_.append(data, n);
  }
  // `n` bytes went to the receiving side's socket queue: the sender may send as many again.
  void delivered(std::size_t n) {
    delivered_ += n;
    sender_.return_credit(n);
  }
  // DATA arrived for a body nobody will read (the stream was answered already): keep the
  // sender's window open until it learns the stream is over.
  void unread(std::size_t n) { sender_.return_credit(n); }

  uint64_t received_bytes() const { return received_; }
  uint64_t delivered_bytes() const { return delivered_; }

 private:
  Sender& sender_;
  h2::BodyBuffer buffer_;
  uint64_t received_ = 0;
  uint64_t delivered_ = 0;
};

}  // namespace sluice
