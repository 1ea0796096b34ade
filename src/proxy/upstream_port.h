// What a ProxyStream needs from the upstream side, in two narrow interfaces:
//  - UpstreamPort, a cluster as one worker sees it (its UpstreamPool): find a link for a stream;
//  - UpstreamLink, one upstream transport (an HTTP/2 connection): open, feed and cancel a
//    request stream on it.
// and what the upstream side tells the stream, UpstreamClient. Keeping these apart from the
// concrete pool and connection is what lets tests drive a ProxyStream with in-memory sessions,
// and lets another transport (a queue) stand where an HTTP/2 connection stands.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/time.h"

namespace sluice {

namespace h2 {
class StreamEvents;
}
struct ClusterStats;
class UpstreamLink;

// Implemented by the stream that wants an upstream (ProxyStream).
class UpstreamClient {
 public:
  virtual ~UpstreamClient() = default;
  // The port chose `link` for this stream; it may still be connecting. A later assignment
  // (the link failed before the stream was sent) replaces this one.
  virtual void on_upstream_assigned(UpstreamLink& link) = 0;
  // The assigned link is ready: submit the request now.
  virtual void on_upstream_ready() = 0;
  // No link could be had (every endpoint failing, connect failure, shutdown). The stream holds
  // no link any more.
  virtual void on_upstream_unavailable(std::string_view message) = 0;
  // The link died under the stream's open upstream stream. Inside this call the link may still
  // be asked whether the request went out (UpstreamLink::request_sent); after it, the link must
  // not be touched again.
  virtual void on_upstream_connection_lost(std::string_view message) = 0;
  // Receives the upstream response of the stream's request.
  virtual h2::StreamEvents* upstream_events() = 0;
};

// A cluster as seen from one worker.
class UpstreamPort {
 public:
  virtual ~UpstreamPort() = default;
  // Finds or opens a link for `client` and calls on_upstream_assigned(), or calls
  // on_upstream_unavailable() when no endpoint can be reached (fast, no waiting).
  virtual void assign(UpstreamClient& client) = 0;
  // Like assign(), for a stream the upstream provably never processed (refused, above a GOAWAY's
  // last stream id, never sent): another connection than `failed` is preferred.
  virtual void reassign(UpstreamClient& client, const UpstreamLink& failed) = 0;
  virtual ClusterStats& stats() = 0;
  // clusters[].max_stream_duration: the response timeout of a call without grpc-timeout.
  virtual std::optional<Duration> max_stream_duration() const = 0;
};

// Where a listener sends its admitted calls. A cluster is named, and looked up by name when a call
// is admitted: a reload that points the listener at another cluster reaches the next call, and
// the listener needs nothing from the cluster's internals. A queue (queue mode) is its index into
// Config::queues, which cannot change live.
struct UpstreamTarget {
  std::string cluster;               // unused when `queue` is set
  std::optional<std::size_t> queue;  // a queue-mode listener
  std::string to_string() const {
    return queue ? "queue #" + std::to_string(*queue) : "cluster '" + cluster + "'";
  }
  bool operator==(const UpstreamTarget&) const = default;
};

// Every upstream one worker can send to (WorkerContext; a fake in tests).
class UpstreamDirectory {
 public:
  virtual ~UpstreamDirectory() = default;
  // The port of `target` on this worker, or nullptr when it has none (the call is then answered
  // UNAVAILABLE).
  virtual UpstreamPort* find(const UpstreamTarget& target) = 0;
};

// One upstream transport as a stream uses it. Every call schedules the write it needs.
class UpstreamLink {
 public:
  virtual ~UpstreamLink() = default;
  // Opens a request stream; `events` gets the response. Returns the stream id, or a negative
  // nghttp2 error code. `with_body` false ends the stream with the headers.
  virtual int32_t submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                         h2::StreamEvents* events) = 0;
  // The request body (or its trailers) grew: ask for DATA again.
  virtual void resume_request(int32_t stream_id) = 0;
  // `n` response bytes of the stream were handed to the client: return their window.
  virtual void consume_response(int32_t stream_id, std::size_t n) = 0;
  // Resets the stream (CANCEL) and drops its events: nothing more is reported for it.
  virtual void cancel(int32_t stream_id) = 0;
  // `client` no longer uses this link (its stream closed, was cancelled, or never opened).
  virtual void release(UpstreamClient& client) = 0;
  // The stream's request HEADERS left for the peer. False: the upstream cannot have seen it.
  virtual bool request_sent(int32_t stream_id) const = 0;
};

}  // namespace sluice
