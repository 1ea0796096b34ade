// One direction of one stream's body between its arrival from one peer and its hand-off to the
// other: DATA payload bytes (copied in once), end-of-stream, and trailers. Flow control keeps it
// at most one stream window large. A small body (the usual unary message) sits in inline storage
// and costs no allocation; larger ones go to shared chunks the OutputQueue references.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "src/h2/header_block.h"
#include "src/h2/output_queue.h"

namespace sluice::h2 {

class BodyBuffer {
 public:
  // Copies a DATA payload in.
  void append(const uint8_t* data, std::size_t length);
  // Moves up to `n` bytes from the front into `out`: chunk bytes by reference, inline bytes by
  // copy. Returns bytes moved.
  std::size_t take(std::size_t n, OutputQueue& out);

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The sending peer finished (END_STREAM seen, or trailers).
  void finish() { finished_ = true; }
  bool finished() const { return finished_; }
  void set_trailers(HeaderBlock trailers) {
    trailers_ = std::move(trailers);
    finished_ = true;
  }
  const std::optional<HeaderBlock>& trailers() const { return trailers_; }
  // Drops buffered bytes (the stream is going away); returns how many were dropped.
  std::size_t discard();
  // Appends a copy of the buffered bytes (not the end or trailers) to `out`.
  void copy_to(BodyBuffer& out) const;

 private:
  // The first chunk is sized for a small message; later ones coalesce a stream's frames.
  static constexpr std::size_t kFirstChunk = 1024;
  static constexpr std::size_t kMinChunk = std::size_t{16} * 1024;
  // Bytes kept inline until the first chunk is needed (they always precede any chunk's bytes).
  static constexpr std::size_t kInline = 128;
  struct Chunk {
    std::shared_ptr<uint8_t[]> memory;
    std::size_t capacity;
    std::size_t begin;
    std::size_t end;
  };
  // Usually one or two chunks: inline storage, no allocation for the container itself.
  boost::container::small_vector<Chunk, 2> chunks_;
  std::size_t inline_begin_ = 0;
  std::size_t inline_end_ = 0;
  uint8_t inline_[kInline];
  bool had_chunk_ = false;
  std::size_t size_ = 0;
  bool finished_ = false;
  std::optional<HeaderBlock> trailers_;
};

}  // namespace sluice::h2
