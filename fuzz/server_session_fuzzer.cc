// libFuzzer target: a downstream HTTP/2 connection fed raw bytes after the client preface, with
// no sockets. A real h2::ServerSession (nghttp2 + FloodGuard + sluice's callbacks) serves an
// application that behaves like ProxyStream's downstream side: it enforces the header limits,
// holds request bytes and returns their credit late, answers with headers, a body and trailers,
// resets some streams, and sometimes stops draining its output like a peer that does not read.
//
// Input: byte 0 picks the application's behaviour (Policy); the rest is the client's byte
// stream, fed in chunks of the size the policy names. Seeds in fuzz/corpus/server_session/ are
// frame sequences written by fuzz/make_h2_corpus.py.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/h2/body_buffer.h"
#include "src/h2/header_block.h"
#include "src/h2/output_queue.h"
#include "src/h2/server_session.h"

namespace {

using namespace sluice;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "server_session_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

struct Policy {
  explicit Policy(uint8_t b)
      : chunk(kChunks[b & 3]),
        drain_output((b & 0x04) == 0),
        respond((b & 0x08) == 0),
        trailers_only((b & 0x10) != 0),
        late_credit((b & 0x20) != 0),
        reset_some((b & 0x40) != 0),
        go_away((b & 0x80) != 0) {}

  static constexpr std::size_t kChunks[4] = {1 << 16, 1, 7, 512};
  std::size_t chunk;   // bytes per receive()
  bool drain_output;   // the client reads everything we write
  bool respond;        // answer each request once its headers are complete
  bool trailers_only;  // answer without a body
  bool late_credit;    // return request credit one step late (an upstream that reads slowly)
  bool reset_some;     // reset every third stream (CANCEL), as a shed or deadline would
  bool go_away;        // start a graceful shutdown halfway through
};

class App;

// One stream as ProxyStream's downstream side sees it.
class FuzzStream final : public h2::StreamEvents {
 public:
  FuzzStream(App& app, int32_t id) : app_(app), id_(id) {}

  // h2::StreamEvents
  void on_headers_begin(bool initial) override {
    initial_ = initial;
    fields_ = 0;
  }
  uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) override;
  void on_headers_end(bool end_stream) override;
  void on_data(const uint8_t* data, std::size_t length) override;
  void on_data_end() override { request_ended_ = true; }
  void on_end_stream_sent() override { end_sent_ = true; }
  void on_close(uint32_t error_code) override;
  h2::BodyBuffer* outgoing() override { return responding_ ? &response_ : nullptr; }
  void on_outgoing_sent(std::size_t n) override { sent_ += n; }

  // The application's turn after each read: hand request bytes on, return their credit.
  void step(h2::ServerSession& session);

  int32_t id() const { return id_; }
  bool closed() const { return closed_; }

 private:
  App& app_;
  int32_t id_;
  bool initial_ = true;
  std::size_t fields_ = 0;
  std::size_t header_bytes_ = 0;
  bool too_large_ = false;
  h2::HeaderBlock headers_;
  h2::BodyBuffer request_;
  std::size_t credit_due_ = 0;
  bool request_ended_ = false;
  bool responding_ = false;
  h2::BodyBuffer response_;
  std::size_t sent_ = 0;
  bool end_sent_ = false;
  bool closed_ = false;
};

class App final : public h2::ServerSession::Owner {
 public:
  App(const Policy& p, const h2::Settings& c) : policy(p), config(c) {}

  // h2::ServerSession::Owner
  h2::StreamEvents* on_new_stream(int32_t id) override {
    auto s = std::make_unique<FuzzStream>(*this, id);
    FuzzStream* raw = s.get();
    streams[id] = std::move(s);
    return raw;
  }
  void on_stream_refused() override { ++refused; }

  void stream_closed(int32_t id) {
    auto it = streams.find(id);
    if (it == streams.end()) return;
    graveyard.push_back(std::move(it->second));  // destroyed after the callback returns
    streams.erase(it);
  }

  Policy policy;
  h2::Settings config;
  h2::ServerSession* session = nullptr;
  std::map<int32_t, std::unique_ptr<FuzzStream>> streams;
  std::vector<std::unique_ptr<FuzzStream>> graveyard;
  uint64_t refused = 0;
};

uint32_t FuzzStream::on_header(std::string_view name, std::string_view value, bool never_indexed) {
  // As ProxyStream: count everything (HPACK must stay in sync), keep what fits the limits.
  header_bytes_ += name.size() + value.size() + 32;
  ++fields_;
  if (name == "x-fuzz-reject") return NGHTTP2_PROTOCOL_ERROR;  // the reset-from-callback path
  if (fields_ > app_.config.max_headers_count || header_bytes_ > app_.config.max_header_list_size) {
    too_large_ = true;
    return 0;
  }
  if (initial_) headers_.add(name, value, never_indexed);
  return 0;
}

void FuzzStream::on_headers_end(bool end_stream) {
  if (end_stream) request_ended_ = true;
  if (!initial_ || responding_ || !app_.policy.respond) return;
  h2::ServerSession& session = *app_.session;
  if (app_.policy.reset_some && id_ % 3 == 0) {
    session.reset_stream(id_, NGHTTP2_CANCEL);
    return;
  }
  h2::HeaderBlock h;
  h.add(":status", too_large_ ? "431" : "200");
  h.add("content-type", "application/grpc");
  if (app_.policy.trailers_only || too_large_) {
    h.add("grpc-status", too_large_ ? "8" : "0");
    check(session.submit_response(id_, h, false), "trailers-only response accepted");
    responding_ = true;
    return;
  }
  responding_ = true;
  check(session.submit_response(id_, h, true), "response accepted");
  const std::string body(static_cast<std::size_t>(id_ % 4096) + headers_.size(), 'r');
  response_.append(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  h2::HeaderBlock trailers;
  trailers.add("grpc-status", "0");
  response_.set_trailers(std::move(trailers));
  session.resume_data(id_);
}

void FuzzStream::on_data(const uint8_t* data, std::size_t length) {
  request_.append(data, length);
  credit_due_ += length;
  if (!app_.policy.late_credit) step(*app_.session);
}

void FuzzStream::on_close(uint32_t /*error_code*/) {
  closed_ = true;
  response_.discard();
  app_.stream_closed(id_);  // last: may move this object to the graveyard
}

void FuzzStream::step(h2::ServerSession& session) {
  if (closed_ || credit_due_ == 0) return;
  h2::OutputQueue sink;  // "the upstream took it"
  request_.take(request_.size(), sink);
  session.consume_stream(id_, credit_due_);
  credit_due_ = 0;
}

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  h2::Settings config;
  // Small limits so the fuzzer reaches them.
  config.max_concurrent_streams = 8;
  config.initial_stream_window = 65535;
  config.max_header_list_size = 4096;
  config.max_headers_count = 16;
  App app(Policy(data[0]), config);
  h2::ServerSession session(app, config);
  app.session = &session;
  h2::OutputQueue out;
  constexpr std::size_t kHighWater = 64 * 1024;

  auto pump = [&] {
    const bool ok = session.send(out, kHighWater);
    app.graveyard.clear();
    if (app.policy.drain_output) out.consume(out.size());
    return ok;
  };
  pump();  // our SETTINGS
  bool alive = session.receive(reinterpret_cast<const uint8_t*>(kPreface), sizeof(kPreface) - 1);
  app.graveyard.clear();
  std::size_t offset = 1;
  bool shutdown_sent = false;
  while (alive && offset < size) {
    const std::size_t n = std::min(app.policy.chunk, size - offset);
    alive = session.receive(data + offset, n);
    offset += n;
    app.graveyard.clear();
    for (auto& [id, s] : app.streams) s->step(session);
    check(session.open_streams() <= config.max_concurrent_streams, "stream limit enforced");
    if (app.policy.go_away && !shutdown_sent && offset * 2 >= size) {
      shutdown_sent = true;
      session.submit_shutdown_notice();
      session.submit_goaway();
    }
    if (!pump()) break;
  }
  // The connection ends: write what is left (a GOAWAY after a fatal error) and stop.
  pump();
  out.consume(out.size());
  return 0;
}
