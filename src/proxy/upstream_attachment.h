// A stream's hold on an upstream link, and on the request stream it opened there. Move-only;
// like a Permit it lets go exactly once: reset() (or destruction) cancels an open stream, detaches
// from the link and forgets it; closed() and lost() forget without a reset, for streams the
// upstream ended or whose link died. Owns the cluster's in-flight accounting
// (upstream_rq_total, upstream_rq_active, upstream_rq_cancelled_total), so no path can count a
// stream twice or forget to count it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/proxy/upstream_port.h"

namespace sluice {

class UpstreamAttachment {
 public:
  UpstreamAttachment() = default;
  UpstreamAttachment(UpstreamLink& link, UpstreamClient& client, ClusterStats& stats)
      : link_(&link), client_(&client), stats_(&stats) {}
  ~UpstreamAttachment() { reset(); }
  UpstreamAttachment(UpstreamAttachment&& other) noexcept;
  UpstreamAttachment& operator=(UpstreamAttachment&& other) noexcept;
  UpstreamAttachment(const UpstreamAttachment&) = delete;
  UpstreamAttachment& operator=(const UpstreamAttachment&) = delete;

  // Holds a link (assigned, possibly still connecting).
  bool assigned() const { return link_ != nullptr; }
  // Has an open request stream on it.
  bool open() const { return stream_id_ >= 0; }
  int32_t stream_id() const { return stream_id_; }
  // The link held (nullptr: none), to name the one a retry should avoid.
  const UpstreamLink* link() const { return link_; }
  // The open stream's request HEADERS left for the peer (see UpstreamLink::request_sent).
  bool request_sent() const { return open() && link_->request_sent(stream_id_); }

  // Opens the request stream. On failure returns the negative nghttp2 error and lets go of
  // the link (assigned() is false afterwards).
  int32_t submit(const std::vector<nghttp2_nv>& headers, bool with_body, h2::StreamEvents* events);
  // Data flow on the open stream; no-ops when none is open.
  void resume_request();
  void consume_response(std::size_t n);

  // We end it: an open stream is reset (CANCEL); the link is released. Idempotent.
  void reset();
  // The upstream closed the stream itself: forget it and release the link, no reset.
  void closed();
  // The link died under the stream: forget everything, touch nothing (the link is going away).
  void lost();

 private:
  void end_stream_accounting();

  UpstreamLink* link_ = nullptr;
  UpstreamClient* client_ = nullptr;
  ClusterStats* stats_ = nullptr;
  int32_t stream_id_ = -1;
};

}  // namespace sluice
