// Flow-control accounting with a sluice ServerSession and ClientSession joined in memory (no
// sockets): bytes one session writes are fed to the other.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/h2/client_session.h"
#include "src/h2/server_session.h"
#include "tests/fakes/recording_stream.h"

namespace sluice::h2 {
namespace {

using ServerOwner = RecordingServerOwner;
using ClientOwner = RecordingClientOwner;

class SessionPairTest : public ::testing::Test {
 protected:
  void make(const Settings& server_cfg, const Settings& client_cfg) {
    server = std::make_unique<ServerSession>(server_owner, server_cfg);
    client = std::make_unique<ClientSession>(client_owner, client_cfg);
    pump();
  }

  // Moves bytes both ways until neither side has anything to write.
  void pump() {
    for (int round = 0; round < 1000; ++round) {
      const std::size_t a = transfer(*client, *server);
      const std::size_t b = transfer(*server, *client);
      if (a == 0 && b == 0) return;
    }
    FAIL() << "sessions did not go quiet";
  }

  static HeaderBlock request_headers() { return grpc_request_headers("/pkg.Svc/Method"); }

  static void fill(BodyBuffer& b, std::size_t n, char c) { h2::fill(b, std::string(n, c)); }

  ServerOwner server_owner;
  ClientOwner client_owner;
  std::unique_ptr<ServerSession> server;
  std::unique_ptr<ClientSession> client;
};

TEST_F(SessionPairTest, AdvertisesConfiguredSettings) {
  Settings cfg;
  cfg.max_concurrent_streams = 7;
  make(cfg, Settings{});
  EXPECT_TRUE(client->remote_settings_received());
  EXPECT_EQ(client->remote_max_concurrent_streams(), 7u);
  EXPECT_EQ(
      nghttp2_session_get_remote_settings(client->raw(), NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE),
      64u * 1024);
}

TEST_F(SessionPairTest, StreamWindowIsOnlyReturnedWhenConsumed) {
  Settings cfg;  // 64 KiB stream window, 1 MiB connection window
  make(cfg, Settings{});
  RecordingStream up;
  fill(up.body, 100 * 1024, 'a');
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), true, &up);
  ASSERT_GT(id, 0);
  pump();
  RecordingStream& down = *server_owner.streams.at(id);
  // The server never consumed the stream: exactly one stream window got through.
  EXPECT_EQ(down.received.size(), 64u * 1024);
  EXPECT_EQ(up.sent, 64u * 1024);
  EXPECT_EQ(up.body.size(), 36u * 1024);
  EXPECT_EQ(nghttp2_session_get_stream_remote_window_size(client->raw(), id), 0);

  // Handing the bytes on returns the credit; the rest flows.
  server->consume_stream(id, down.received.size());
  pump();
  EXPECT_EQ(down.received.size(), 100u * 1024);
  EXPECT_TRUE(down.ended);
}

TEST_F(SessionPairTest, PerMessageValuesStayOutOfThePeersHpackTable) {
  // A value that changes on every request (a queue time, a timeout) is sent never-indexed: it
  // is delivered, but it does not fill the receiver's dynamic table and evict what repeats.
  make(Settings{}, Settings{});
  auto send = [&](int count, bool never_index) {
    for (int i = 0; i < count; ++i) {
      HeaderBlock h = request_headers();
      h.add("x-sluice-queue-us", std::to_string(1000 + i), never_index);
      RecordingStream up;
      up.body.finish();
      const int32_t id = client->submit_request(h, false, &up);
      pump();
      EXPECT_EQ(server_owner.streams.at(id)->header(0, "x-sluice-queue-us"),
                std::to_string(1000 + i));
    }
    return nghttp2_session_get_hd_inflate_dynamic_table_size(server->raw());
  };
  const std::size_t repeating_fields = send(1, true);
  EXPECT_EQ(send(20, true), repeating_fields);
  // Indexed instead, each value takes 32 + 17 + 4 bytes of the table.
  EXPECT_EQ(send(20, false), repeating_fields + 20 * (32 + 17 + 4));
}

TEST_F(SessionPairTest, StalledStreamDoesNotBlockOthersOnTheConnection) {
  // Connection window equal to one stream window: if connection credit waited for the stream
  // to be consumed, the second stream could not send a byte.
  Settings cfg;
  cfg.initial_connection_window = 65535;
  cfg.initial_stream_window = 65535;
  make(cfg, Settings{});
  RecordingStream a, b;
  fill(a.body, 65535, 'a');
  a.body.finish();
  fill(b.body, 30000, 'b');
  b.body.finish();
  const int32_t ida = client->submit_request(request_headers(), true, &a);
  pump();
  const int32_t idb = client->submit_request(request_headers(), true, &b);
  pump();
  EXPECT_EQ(server_owner.streams.at(ida)->received.size(), 65535u);
  EXPECT_EQ(server_owner.streams.at(idb)->received.size(), 30000u);
  EXPECT_TRUE(server_owner.streams.at(idb)->ended);
}

TEST_F(SessionPairTest, ResponseBodyFollowsDataArrivalAndEndsWithTrailers) {
  make(Settings{}, Settings{});
  RecordingStream up;
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), false, &up);
  pump();
  RecordingStream& down = *server_owner.streams.at(id);
  EXPECT_TRUE(down.ended);
  EXPECT_EQ(down.header(0, ":path"), "/pkg.Svc/Method");

  HeaderBlock resp;
  resp.add(":status", "200");
  resp.add("content-type", "application/grpc");
  down.serve = true;
  ASSERT_TRUE(server->submit_response(id, resp, true));
  pump();
  ASSERT_EQ(up.blocks.size(), 1u);
  EXPECT_EQ(up.header(0, ":status"), "200");
  EXPECT_TRUE(up.received.empty());  // body empty and not finished: deferred

  fill(down.body, 5000, 'z');
  server->resume_data(id);
  pump();
  EXPECT_EQ(up.received, std::string(5000, 'z'));
  EXPECT_EQ(down.sent, 5000u);
  EXPECT_FALSE(up.ended);

  HeaderBlock trailers;
  trailers.add("grpc-status", "0");
  trailers.add("x-custom-bin", "AAEC");
  down.body.set_trailers(std::move(trailers));
  server->resume_data(id);
  pump();
  ASSERT_EQ(up.blocks.size(), 2u);
  EXPECT_FALSE(up.blocks[1].first);  // trailers
  EXPECT_EQ(up.header(1, "grpc-status"), "0");
  EXPECT_EQ(up.header(1, "x-custom-bin"), "AAEC");
  EXPECT_TRUE(up.ended);
  EXPECT_TRUE(down.end_sent);
  EXPECT_TRUE(up.closed);
}

TEST_F(SessionPairTest, TrailersOnlyResponseEndsOnHeaders) {
  make(Settings{}, Settings{});
  RecordingStream up;
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), false, &up);
  pump();
  HeaderBlock resp;
  resp.add(":status", "200");
  resp.add("content-type", "application/grpc");
  resp.add("grpc-status", "8");
  ASSERT_TRUE(server->submit_response(id, resp, false));
  pump();
  ASSERT_EQ(up.blocks.size(), 1u);
  EXPECT_EQ(up.header(0, "grpc-status"), "8");
  EXPECT_TRUE(up.ended);
  EXPECT_TRUE(up.closed);
}

TEST_F(SessionPairTest, ResetReachesThePeerWithItsCode) {
  make(Settings{}, Settings{});
  RecordingStream up;
  const int32_t id = client->submit_request(request_headers(), true, &up);
  pump();
  client->reset_stream(id, NGHTTP2_CANCEL);
  pump();
  RecordingStream& down = *server_owner.streams.at(id);
  EXPECT_TRUE(down.closed);
  EXPECT_EQ(down.close_code, static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_EQ(server->counters().resets_received, 1u);
}

TEST_F(SessionPairTest, DetachedStreamGetsNoMoreEvents) {
  make(Settings{}, Settings{});
  RecordingStream up;
  const int32_t id = client->submit_request(request_headers(), true, &up);
  pump();
  server->detach_stream(id);
  EXPECT_EQ(server->stream_events(id), nullptr);
  client->reset_stream(id, NGHTTP2_CANCEL);
  pump();
  EXPECT_FALSE(server_owner.streams.at(id)->closed);
}

TEST_F(SessionPairTest, RequestDetachedBeforeItsHeadersWentOutGetsNoEvents) {
  // The proxy stream behind `up` may die before the upstream session has even sent the
  // request; nothing may reach it afterwards.
  make(Settings{}, Settings{});
  RecordingStream up;
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), false, &up);
  client->detach_stream(id);
  EXPECT_EQ(client->stream_events(id), nullptr);
  pump();
  RecordingStream& down = *server_owner.streams.at(id);
  HeaderBlock resp;
  resp.add(":status", "200");
  resp.add("grpc-status", "0");
  ASSERT_TRUE(server->submit_response(id, resp, false));
  pump();
  EXPECT_TRUE(up.blocks.empty());
  EXPECT_FALSE(up.closed);
  EXPECT_TRUE(down.closed);
  EXPECT_EQ(client->open_streams(), 0u);
}

TEST_F(SessionPairTest, RequestResetBeforeItsHeadersWentOutIsReportedClosedUnprocessed) {
  make(Settings{}, Settings{});
  RecordingStream up;
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), false, &up);
  client->reset_stream(id, NGHTTP2_CANCEL);
  pump();
  EXPECT_TRUE(up.closed);
  EXPECT_EQ(up.close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_TRUE(server_owner.streams.empty());  // the server never saw it
  EXPECT_EQ(client->open_streams(), 0u);
}

TEST_F(SessionPairTest, GracefulShutdownSendsTwoGoaways) {
  make(Settings{}, Settings{});
  RecordingStream up;
  up.body.finish();
  const int32_t id = client->submit_request(request_headers(), false, &up);
  pump();
  server->submit_shutdown_notice();
  pump();
  EXPECT_EQ(client_owner.goaway_last, (1u << 31) - 1);
  server->submit_goaway();
  pump();
  EXPECT_EQ(client_owner.goaway_last, id);
}

}  // namespace
}  // namespace sluice::h2
