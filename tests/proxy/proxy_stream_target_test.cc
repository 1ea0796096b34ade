// ProxyStream: which upstream a call goes to. The listener's snapshot names a cluster; the stream
// looks it up when it is admitted, so a reload that points the listener at another cluster
// reaches the next call while calls in flight finish where they are. Harness:
// proxy_stream_harness.h.
#include "tests/proxy/proxy_stream_harness.h"

namespace sluice {
namespace {

using namespace proxy_test;  // NOLINT(google-build-using-namespace): the harness

TEST_F(ProxyStreamTest, NewCallsGoToTheClusterANewSnapshotNamesAndCallsInFlightStay) {
  start();
  const int32_t before = call("first");
  const int32_t up_before = only_upstream_request();

  point_listener_at("other");
  const int32_t after = call("second");
  EXPECT_EQ(upstream_.assignments, 1);  // the new call did not go to "app"
  ASSERT_EQ(other_.link.server_owner.streams.size(), 1u);
  const int32_t up_after = other_.link.server_owner.streams.begin()->first;
  EXPECT_EQ(other_.link.server_owner.streams.at(up_after)->received, "second");
  EXPECT_EQ(other_.stats().upstream_rq_total.value(), 1u);

  respond_on(other_.link, up_after, "from other");
  respond(up_before, "from app");  // the call admitted before the change finishes on "app"
  EXPECT_EQ(client_call(before).received, "from app");
  EXPECT_EQ(client_call(before).last_header("grpc-status"), "0");
  EXPECT_EQ(client_call(after).received, "from other");
  EXPECT_EQ(client_call(after).last_header("grpc-status"), "0");
  EXPECT_EQ(cluster().upstream_rq_total.value(), 1u);
  EXPECT_EQ(ended(EndReason::Completed), 2u);
}

TEST_F(ProxyStreamTest, ACallQueuedBeforeTheChangeGoesWhereItsSnapshotSaid) {
  // The snapshot is taken when the headers are complete, as for the filter chain: a call held
  // by its filters across a reload is sent where its listener pointed when it arrived.
  start({fixed_semaphore(1)});
  const int32_t first = call("first");
  const int32_t queued = call("queued");
  EXPECT_EQ(downstream_.stream(queued)->state(), StreamState::Filtering);
  point_listener_at("other");
  respond(only_upstream_request());
  EXPECT_EQ(client_call(first).last_header("grpc-status"), "0");
  EXPECT_EQ(upstream_.assignments, 2);
  EXPECT_TRUE(other_.link.server_owner.streams.empty());
}

TEST_F(ProxyStreamTest, ASnapshotNamingAClusterTheWorkerDoesNotHaveAnswersUnavailable) {
  start();
  point_listener_at("gone");
  const int32_t id = call();
  RecordingStream& c = client_call(id);
  ASSERT_TRUE(c.closed);
  EXPECT_EQ(c.header(0, "grpc-status"), "14");
  EXPECT_EQ(c.header(0, "grpc-message"), "no cluster 'gone' on this worker");
  EXPECT_EQ(ended(EndReason::UpstreamUnavailable), 1u);
  EXPECT_EQ(upstream_.assignments, 0);
}

}  // namespace
}  // namespace sluice
