// Test doubles for code that sits on sluice's HTTP/2 sessions: a StreamEvents that records what
// a session reports about one stream and serves a body, and the byte pump that joins two
// sessions in memory (what one writes, the other reads; no sockets).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/h2/body_buffer.h"
#include "src/h2/client_session.h"
#include "src/h2/server_session.h"
#include "src/h2/stream_events.h"

namespace sluice::h2 {

class RecordingStream : public StreamEvents {
 public:
  void on_headers_begin(bool initial) override { blocks.push_back({initial, {}}); }
  uint32_t on_header(std::string_view n, std::string_view v, bool) override {
    blocks.back().second.emplace_back(std::string(n), std::string(v));
    return 0;
  }
  void on_headers_end(bool end) override {
    if (end) ended = true;
  }
  void on_data(const uint8_t* d, std::size_t n) override {
    received.append(reinterpret_cast<const char*>(d), n);
  }
  void on_data_end() override { ended = true; }
  void on_end_stream_sent() override { end_sent = true; }
  void on_close(uint32_t code) override {
    closed = true;
    close_code = code;
  }
  BodyBuffer* outgoing() override { return serve ? &body : nullptr; }
  void on_outgoing_sent(std::size_t n) override { sent += n; }

  // The value of `name` in header block `block` (0: the first), or "" when absent.
  std::string header(std::size_t block, const std::string& name) const;
  // The value of `name` in the last header block received (trailers, when there were any).
  std::string last_header(const std::string& name) const;

  std::vector<std::pair<bool, std::vector<std::pair<std::string, std::string>>>> blocks;
  std::string received;
  bool ended = false, end_sent = false, closed = false, serve = true;
  uint32_t close_code = 0;
  std::size_t sent = 0;
  BodyBuffer body;
};

// A server session's owner that records every stream the peer opens. Streams serve no body
// until the test fills theirs and sets `serve`.
class RecordingServerOwner : public ServerSession::Owner {
 public:
  StreamEvents* on_new_stream(int32_t id) override;
  std::map<int32_t, std::unique_ptr<RecordingStream>> streams;
};

class RecordingClientOwner : public ClientSession::Owner {
 public:
  void on_goaway(int32_t last, uint32_t code) override {
    goaway_last = last;
    goaway_code = code;
  }
  void on_remote_settings() override { ++settings; }
  int32_t goaway_last = -1;
  uint32_t goaway_code = 0;
  int settings = 0;
};

// POST `path` with the headers a gRPC client sends (http, authority "test").
HeaderBlock grpc_request_headers(std::string_view path);
// Appends `text` to `body`.
void fill(BodyBuffer& body, std::string_view text);
// Moves what `from` has to write into `to`. Returns the bytes moved.
std::size_t transfer(Session& from, Session& to);

}  // namespace sluice::h2
