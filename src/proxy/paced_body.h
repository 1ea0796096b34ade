// Read pacing for one direction of a proxied stream. The sending peer's DATA waits here until
// the receiving side's session has taken it for its socket; only then is its stream-level
// flow-control credit returned to the sender (WINDOW_UPDATE). So at most one stream window is
// held per direction, a request waiting for admission holds nothing beyond its first window,
// and a slow receiver slows its sender through HTTP/2 itself: sluice's memory stays flat however
// long an overload lasts.
//
// For a transparent retry the request body can be sent again from its first byte (rewind()):
// a copy of what arrived is kept, up to a limit, until the answer starts (drop_replay()). Bytes
// sent twice return their credit once.
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
    if (replayable_) {
      if (replay_.size() + n > replay_limit_) {
        drop_replay();
      } else {
        replay_.append(data, n);
      }
    }
  }
  // `n` bytes went to the receiving side's socket queue: the sender may send as many again.
  void delivered(std::size_t n) {
    delivered_ += n;
    position_ += n;
    if (position_ > credited_) {  // bytes sent again after rewind() were credited already
      sender_.return_credit(position_ - credited_);
      credited_ = position_;
    }
  }

  // From now on keeps what arrived (all of it: nothing may have been delivered yet) for
  // rewind(), while it stays within `limit` bytes.
  void keep_for_replay(std::size_t limit) {
    replay_limit_ = limit;
    replayable_ = delivered_ == 0 && buffer_.size() <= limit;
    if (replayable_) buffer_.copy_to(replay_);
  }
  bool replayable() const { return replayable_; }
  void drop_replay() {
    replayable_ = false;
    replay_ = h2::BodyBuffer();
  }
  // Starts the body again from its first byte (requires replayable()). The end and trailers
  // already received stay.
  void rewind() {
    h2::BodyBuffer fresh;
    replay_.copy_to(fresh);
    if (buffer_.trailers()) {
      fresh.set_trailers(*buffer_.trailers());
    } else if (buffer_.finished()) {
      fresh.finish();
    }
    buffer_ = std::move(fresh);
    position_ = 0;
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
  uint64_t delivered_ = 0;  // by every attempt
  uint64_t position_ = 0;   // delivered by this attempt (since rewind())
  uint64_t credited_ = 0;   // credit returned to the sender
  h2::BodyBuffer replay_;   // every byte received, while replayable_
  std::size_t replay_limit_ = 0;
  bool replayable_ = false;
};

}  // namespace sluice
