// Incremental RESP2 reply parser: feed it bytes as they arrive (split anywhere), take complete
// replies out in order.
//
// Own parser rather than hiredis 0.14's redisReader (the one Debian bookworm packages): the
// reader is the easy half of hiredis, and taking it would bring a C library with its own
// allocation and reply-object model (redisReply trees freed by hand, converted once more into
// our types) plus an Asio adapter for its async API, for ~250 lines of code we can test to the
// byte. 0.14 also lacks what a proxy needs of it: its multi-bulk count is trusted for
// allocation (CVE-2021-32765, fixed only in 1.0.1), and it has no configurable limit on bulk
// length, element count or nesting. This parser is bounded by RespLimits, returns a sticky
// error instead of allocating on absurd input, never throws on bad bytes, and is fuzzed
// (fuzz/resp_parser_fuzzer.cc: any split of the input gives the same replies).
//
// RESP2 only: sluice never sends HELLO 3, so RESP3 type bytes are a protocol error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/queue/resp_value.h"

namespace sluice::queue {

// Bounds on what one reply may make the parser hold. Exceeding one is a protocol error (the
// connection is then reset): a real Redis reply for sluice's commands is far below each.
struct RespLimits {
  std::size_t max_line_bytes =
      std::size_t{64} * 1024;  // simple string, error, integer, length line
  std::size_t max_bulk_bytes = std::size_t{64} * 1024 * 1024;  // one bulk string
  std::size_t max_array_elements = std::size_t{1024} * 1024;   // one array's declared length
  std::size_t max_depth = 16;                                  // nested arrays (XREADGROUP needs 5)
  std::size_t max_reply_elements = std::size_t{1024} * 1024;   // values in one top-level reply
  std::size_t max_reply_bytes =
      std::size_t{256} * 1024 * 1024;  // wire bytes of one top-level reply
};

class RespParser {
 public:
  enum class Status {
    NeedMore,  // no complete reply buffered: feed() more bytes, then call next() again
    Value,     // `out` holds the next reply; call next() again, more may be buffered
    Error,     // the byte stream is not RESP2 (or breaks a limit); error() says why. Sticky
               // until reset(): the stream cannot be resynchronised, drop the connection
  };

  explicit RespParser(RespLimits limits = {});

  // Appends bytes received from the server (copied; `bytes` may be reused afterwards).
  void feed(std::string_view bytes);
  Status next(RespValue& out);

  const std::string& error() const { return error_; }
  // Forgets buffered bytes, partial replies and the error (for a new connection).
  void reset();
  // Bytes fed but not yet returned as part of a complete reply.
  std::size_t buffered() const { return buf_.size() - pos_ + reply_bytes_; }

 private:
  struct Frame {
    RespValue array;
    std::size_t remaining;  // elements still to come
  };

  Status fail(std::string message);
  // Attaches a finished value to the open array (or makes it the reply); true when a whole
  // top-level reply is complete in `out`.
  bool emit(RespValue value, RespValue& out);
  // Accounts `n` more wire bytes and one more value to the current reply; false = over a limit.
  bool account(std::size_t bytes, std::size_t values);
  void compact();

  RespLimits limits_;
  std::string buf_;
  std::size_t pos_ = 0;   // first byte not yet consumed
  std::size_t scan_ = 0;  // where the search for the current line's LF resumes
  bool in_bulk_ = false;  // the header is read; waiting for bulk_len_ bytes + CRLF
  std::size_t bulk_len_ = 0;
  std::vector<Frame> stack_;      // open arrays, outermost first
  std::size_t reply_bytes_ = 0;   // consumed wire bytes of the reply being built
  std::size_t reply_values_ = 0;  // values in it so far
  std::string error_;
};

}  // namespace sluice::queue
