// ServerSession against raw client bytes (no sockets, no nghttp2 client that would refuse to
// misbehave): the stream limit, the flood rules and the GOAWAYs sluice adds to nghttp2's.
#include "src/h2/server_session.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/h2/raw_frames.h"

namespace sluice::h2 {
namespace {

using namespace raw;  // NOLINT: frame helpers and constants

// HPACK for ":method: POST, :scheme: http, :path: /, :authority: a" (static table + literal).
const Bytes kRequestBlock = {0x83, 0x86, 0x84, 0x41, 0x01, 'a'};

Bytes preface() {
  const std::string magic = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  return Bytes(magic.begin(), magic.end()) + frame(kSettings, 0, 0) + frame(kSettings, kAck, 0);
}

Bytes request(uint32_t stream) {
  return frame(kHeaders, kEndHeaders | kEndStream, stream, kRequestBlock);
}

struct Frame {
  uint8_t type;
  uint8_t flags;
  uint32_t stream;
  Bytes payload;
  uint32_t u32(std::size_t at) const {
    return (uint32_t{payload[at]} << 24) | (uint32_t{payload[at + 1]} << 16) |
           (uint32_t{payload[at + 2]} << 8) | payload[at + 3];
  }
};

// A stream that records nothing and never answers.
class SilentStream : public StreamEvents {
 public:
  void on_headers_begin(bool) override {}
  uint32_t on_header(std::string_view, std::string_view, bool) override { return 0; }
  void on_headers_end(bool) override {}
  void on_data(const uint8_t*, std::size_t) override {}
  void on_data_end() override {}
  void on_close(uint32_t) override { closed = true; }
  BodyBuffer* outgoing() override { return nullptr; }
  void on_outgoing_sent(std::size_t) override {}
  bool closed = false;
};

class Owner : public ServerSession::Owner {
 public:
  StreamEvents* on_new_stream(int32_t id) override {
    auto& s = streams[id];
    s = std::make_unique<SilentStream>();
    return s.get();
  }
  void on_stream_refused() override { ++refused; }
  std::map<int32_t, std::unique_ptr<SilentStream>> streams;
  int refused = 0;
};

class ServerSessionTest : public ::testing::Test {
 protected:
  void make(const Settings& cfg, const FloodLimits& flood = {}) {
    session = std::make_unique<ServerSession>(owner, cfg, flood);
  }
  bool feed(const Bytes& bytes) { return session->receive(bytes.data(), bytes.size()); }

  // Everything the session wants to write now, split into frames.
  std::vector<Frame> drain() {
    OutputQueue q;
    EXPECT_TRUE(session->send(q, 1 << 30));
    Bytes bytes;
    q.for_each_front(1u << 20,
                     [&](const uint8_t* p, std::size_t n) { bytes.insert(bytes.end(), p, p + n); });
    q.consume(q.size());
    std::vector<Frame> frames;
    for (std::size_t i = 0; i + 9 <= bytes.size();) {
      const std::size_t n =
          (std::size_t{bytes[i]} << 16) | (std::size_t{bytes[i + 1]} << 8) | bytes[i + 2];
      Frame f{bytes[i + 3], bytes[i + 4],
              ((uint32_t{bytes[i + 5]} << 24) | (uint32_t{bytes[i + 6]} << 16) |
               (uint32_t{bytes[i + 7]} << 8) | bytes[i + 8]) &
                  0x7fffffffu,
              Bytes(bytes.begin() + static_cast<std::ptrdiff_t>(i + 9),
                    bytes.begin() + static_cast<std::ptrdiff_t>(i + 9 + n))};
      frames.push_back(std::move(f));
      i += 9 + n;
    }
    return frames;
  }

  static const Frame* find(const std::vector<Frame>& frames, uint8_t type) {
    for (const Frame& f : frames) {
      if (f.type == type) return &f;
    }
    return nullptr;
  }

  Owner owner;
  std::unique_ptr<ServerSession> session;
};

TEST_F(ServerSessionTest, FirstSettingsFrameAdvertisesMaxConcurrentStreams) {
  Settings cfg;
  cfg.max_concurrent_streams = 7;
  make(cfg);
  const std::vector<Frame> frames = drain();
  ASSERT_FALSE(frames.empty());
  const Frame& settings = frames.front();
  ASSERT_EQ(settings.type, kSettings);
  std::map<uint16_t, uint32_t> values;
  for (std::size_t i = 0; i + 6 <= settings.payload.size(); i += 6) {
    values[static_cast<uint16_t>((settings.payload[i] << 8) | settings.payload[i + 1])] =
        settings.u32(i + 2);
  }
  EXPECT_EQ(values[NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS], 7u);
  EXPECT_EQ(values[NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES], 1u);
  EXPECT_EQ(values[NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE], cfg.max_header_list_size);
}

TEST_F(ServerSessionTest, StreamsBeyondTheLimitAreRefusedAndTheConnectionKept) {
  Settings cfg;
  cfg.max_concurrent_streams = 2;
  make(cfg);
  drain();
  ASSERT_TRUE(feed(preface() + request(1) + request(3) + request(5)));
  const std::vector<Frame> frames = drain();
  EXPECT_EQ(owner.streams.size(), 2u);
  EXPECT_EQ(owner.refused, 1);
  const Frame* rst = find(frames, kRstStream);
  ASSERT_NE(rst, nullptr);
  EXPECT_EQ(rst->stream, 5u);
  EXPECT_EQ(rst->u32(0), static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_EQ(find(frames, kGoaway), nullptr);
  // Still true after the client ACKed our SETTINGS (nghttp2 alone would close the connection).
  ASSERT_TRUE(feed(request(7)));
  EXPECT_EQ(owner.refused, 2);
  EXPECT_EQ(find(drain(), kGoaway), nullptr);
}

TEST_F(ServerSessionTest, TwoEmptyDataFramesInARowEndTheConnectionWithEnhanceYourCalm) {
  make(Settings{});
  drain();
  EXPECT_FALSE(feed(preface() + frame(kHeaders, kEndHeaders, 1, kRequestBlock) +
                    frame(kData, 0, 1) + frame(kData, 0, 1)));
  EXPECT_FALSE(session->flooded());  // the client may read: a GOAWAY goes out first
  const std::vector<Frame> frames = drain();
  const Frame* goaway = find(frames, kGoaway);
  ASSERT_NE(goaway, nullptr);
  EXPECT_EQ(goaway->u32(4), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST_F(ServerSessionTest, FramesPilingUpForAClientThatDoesNotReadAreAFlood) {
  FloodLimits flood;
  flood.max_outbound_frames = 10;
  make(Settings{}, flood);
  drain();
  ASSERT_TRUE(feed(preface()));
  drain();
  Bytes pings;
  for (int i = 0; i < 11; ++i) pings = pings + frame(kPing, 0, 0, Bytes(8, 0));
  // Nothing is drained (the socket is full): eleven PING ACKs wait inside nghttp2.
  EXPECT_FALSE(feed(pings));
  EXPECT_TRUE(session->flooded());
}

TEST_F(ServerSessionTest, ABadPrefaceGetsAProtocolErrorGoaway) {
  make(Settings{});
  drain();
  const std::string http1 = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_FALSE(feed(Bytes(http1.begin(), http1.end())));
  const std::vector<Frame> frames = drain();
  const Frame* goaway = find(frames, kGoaway);
  ASSERT_NE(goaway, nullptr);
  EXPECT_EQ(goaway->u32(4), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
}

// ---- RFC 9113 5.1: frames on closed streams ----

const Bytes kCancel = {0, 0, 0, NGHTTP2_CANCEL};

uint32_t goaway_code(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.type == kGoaway) return f.u32(4);
  }
  return 0xffffffffu;  // none
}

TEST_F(ServerSessionTest, DataOnAStreamTheClientResetIsAStreamClosedConnectionError) {
  make(Settings{});
  drain();
  EXPECT_FALSE(feed(preface() + frame(kHeaders, kEndHeaders, 1, kRequestBlock) +
                    frame(kRstStream, 0, 1, kCancel) + frame(kData, 0, 1, {'x'})));
  EXPECT_EQ(goaway_code(drain()), static_cast<uint32_t>(NGHTTP2_STREAM_CLOSED));
}

TEST_F(ServerSessionTest, HeadersOnAStreamTheClientResetIsAStreamClosedConnectionError) {
  make(Settings{});
  drain();
  EXPECT_FALSE(feed(preface() + frame(kHeaders, kEndHeaders, 1, kRequestBlock) +
                    frame(kRstStream, 0, 1, kCancel) +
                    frame(kHeaders, kEndHeaders | kEndStream, 1, kRequestBlock)));
  EXPECT_EQ(goaway_code(drain()), static_cast<uint32_t>(NGHTTP2_STREAM_CLOSED));
}

TEST_F(ServerSessionTest, FramesOnAStreamClosedByEndStreamBothWaysAreAStreamClosedError) {
  for (const uint8_t type : {kData, kHeaders}) {
    make(Settings{});
    drain();
    ASSERT_TRUE(feed(preface() + request(1)));
    HeaderBlock response;
    response.add(":status", "200");
    ASSERT_TRUE(session->submit_response(1, response, false));
    drain();  // END_STREAM went out: the stream is closed
    ASSERT_TRUE(owner.streams.at(1)->closed);
    EXPECT_FALSE(feed(frame(type, kEndHeaders, 1, type == kData ? Bytes{'x'} : kRequestBlock)))
        << int{type};
    EXPECT_EQ(goaway_code(drain()), static_cast<uint32_t>(NGHTTP2_STREAM_CLOSED)) << int{type};
    owner.streams.clear();
  }
}

TEST_F(ServerSessionTest, FramesOnAStreamWeResetAreIgnored) {
  // The client may have sent them before it saw our RST_STREAM: they MUST be ignored.
  make(Settings{});
  drain();
  ASSERT_TRUE(feed(preface() + frame(kHeaders, kEndHeaders, 1, kRequestBlock)));
  session->reset_stream(1, NGHTTP2_CANCEL);
  drain();
  ASSERT_TRUE(owner.streams.at(1)->closed);
  EXPECT_TRUE(feed(frame(kData, 0, 1, {'x'}) +
                   frame(kHeaders, kEndHeaders | kEndStream, 1, kRequestBlock) +
                   frame(kPing, 0, 0, Bytes(8, 0))));
  const std::vector<Frame> frames = drain();
  EXPECT_NE(find(frames, kPing), nullptr);
  EXPECT_EQ(find(frames, kGoaway), nullptr);
  EXPECT_TRUE(feed(request(3)));  // and the connection serves new streams
  EXPECT_EQ(owner.streams.count(3), 1u);
}

TEST_F(ServerSessionTest, HeadersOnAStreamIdLowerThanOneOpenedIsAProtocolError) {
  make(Settings{});
  drain();
  EXPECT_FALSE(feed(preface() + request(5) + request(3)));
  const std::vector<Frame> frames = drain();
  EXPECT_EQ(goaway_code(frames), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(find(frames, kHeaders), nullptr);
  EXPECT_EQ(owner.streams.count(3), 0u);
}

TEST_F(ServerSessionTest, DataOnAStreamIdSkippedByTheClientIsAStreamClosedError) {
  make(Settings{});
  drain();
  EXPECT_FALSE(feed(preface() + request(5) + frame(kData, 0, 3, {'x'})));
  EXPECT_EQ(goaway_code(drain()), static_cast<uint32_t>(NGHTTP2_STREAM_CLOSED));
}

// ---- RFC 9113 5.3.1: a stream cannot depend on itself ----

Bytes priority(uint32_t stream, uint32_t depends_on) {
  return frame(kPriority, 0, stream,
               {static_cast<uint8_t>(depends_on >> 24), static_cast<uint8_t>(depends_on >> 16),
                static_cast<uint8_t>(depends_on >> 8), static_cast<uint8_t>(depends_on), 15});
}

TEST_F(ServerSessionTest, PriorityOnAnOpenStreamDependingOnItselfResetsIt) {
  make(Settings{});
  drain();
  ASSERT_TRUE(feed(preface() + frame(kHeaders, kEndHeaders, 1, kRequestBlock) + priority(1, 1)));
  const std::vector<Frame> frames = drain();
  const Frame* rst = find(frames, kRstStream);
  ASSERT_NE(rst, nullptr);
  EXPECT_EQ(rst->stream, 1u);
  EXPECT_EQ(rst->u32(0), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_EQ(find(frames, kGoaway), nullptr);
  EXPECT_TRUE(owner.streams.at(1)->closed);
}

TEST_F(ServerSessionTest, PriorityOnAnIdleStreamDependingOnItselfGetsARstStream) {
  make(Settings{});
  drain();
  ASSERT_TRUE(feed(preface() + priority(3, 3) + priority(5, 1)));
  const std::vector<Frame> frames = drain();
  std::vector<uint32_t> reset;
  for (const Frame& f : frames) {
    if (f.type == kRstStream) {
      reset.push_back(f.stream);
      EXPECT_EQ(f.u32(0), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
    }
  }
  EXPECT_EQ(reset, std::vector<uint32_t>{3});
  EXPECT_EQ(find(frames, kGoaway), nullptr);
  EXPECT_EQ(session->counters().resets_sent, 1u);
}

#ifdef SLUICE_HAVE_NGHTTP2_MAX_CONTINUATIONS
TEST_F(ServerSessionTest, ContinuationFloodGetsAGoawayNotJustAClose) {
  make(Settings{});
  drain();
  Bytes bytes = preface() + frame(kHeaders, 0, 1, kRequestBlock);
  for (int i = 0; i < 9; ++i) bytes = bytes + frame(kContinuation, 0, 1, {0x40, 0x01, 'x', 0x00});
  EXPECT_FALSE(feed(bytes));
  const std::vector<Frame> frames = drain();
  const Frame* goaway = find(frames, kGoaway);
  ASSERT_NE(goaway, nullptr);
  EXPECT_EQ(goaway->u32(4), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}
#endif

}  // namespace
}  // namespace sluice::h2
