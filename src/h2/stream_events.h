// One side of a proxied stream as an HTTP/2 session sees it: the session reports what the peer
// sent and asks for the bytes to send. Implemented by the proxy; faked in tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::h2 {

class BodyBuffer;

class StreamEvents {
 public:
  virtual ~StreamEvents() = default;
  // A header block starts. `initial` is true for a request's headers (server side) or the
  // first response block (client side); false for trailers or the final response after 1xx.
  virtual void on_headers_begin(bool initial) = 0;
  // One field of the current block; `never_indexed` when the peer sent it as an HPACK
  // never-indexed literal (to be forwarded the same way). Returns 0 to accept, or an HTTP/2
  // error code to reset the stream with (the rest of the block and its on_headers_end() are
  // then skipped).
  virtual uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) = 0;
  virtual void on_headers_end(bool end_stream) = 0;
  // A DATA payload (never padding). Its connection-level window is already consumed; its
  // stream-level window is consumed by the proxy once the bytes are handed to the other side.
  virtual void on_data(const uint8_t* data, std::size_t length) = 0;
  // END_STREAM arrived on a DATA frame.
  virtual void on_data_end() = 0;
  // Our END_STREAM (on DATA, HEADERS or trailers) went out.
  virtual void on_end_stream_sent() {}
  // The stream is closed; the session forgets this object after the call.
  virtual void on_close(uint32_t error_code) = 0;
  // What to send as DATA on this stream (nullptr: nothing to send yet).
  virtual BodyBuffer* outgoing() = 0;
  // `n` bytes of outgoing() were queued for the socket.
  virtual void on_outgoing_sent(std::size_t n) = 0;
};

}  // namespace sluice::h2
