#include "src/proxy/upstream_attachment.h"

#include <utility>

#include "src/proxy/cluster_stats.h"

namespace sluice {

UpstreamAttachment::UpstreamAttachment(UpstreamAttachment&& other) noexcept
    : link_(std::exchange(other.link_, nullptr)),
      client_(std::exchange(other.client_, nullptr)),
      stats_(std::exchange(other.stats_, nullptr)),
      stream_id_(std::exchange(other.stream_id_, -1)) {}

UpstreamAttachment& UpstreamAttachment::operator=(UpstreamAttachment&& other) noexcept {
  if (this != &other) {
    reset();
    link_ = std::exchange(other.link_, nullptr);
    client_ = std::exchange(other.client_, nullptr);
    stats_ = std::exchange(other.stats_, nullptr);
    stream_id_ = std::exchange(other.stream_id_, -1);
  }
  return *this;
}

int32_t UpstreamAttachment::submit(const std::vector<nghttp2_nv>& headers, bool with_body,
                                   h2::StreamEvents* events) {
  const int32_t id = link_->submit(headers, with_body, events);
  if (id < 0) {
    std::exchange(link_, nullptr)->release(*client_);
    return id;
  }
  stream_id_ = id;
  stats_->upstream_rq_total.inc();
  stats_->upstream_rq_active.add(1);
  return id;
}

void UpstreamAttachment::resume_request() {
  if (open()) link_->resume_request(stream_id_);
}

void UpstreamAttachment::consume_response(std::size_t n) {
  if (open() && n > 0) link_->consume_response(stream_id_, n);
}

void UpstreamAttachment::end_stream_accounting() {
  stats_->upstream_rq_active.sub(1);
  stream_id_ = -1;
}

void UpstreamAttachment::reset() {
  if (link_ == nullptr) return;
  UpstreamLink* link = std::exchange(link_, nullptr);
  if (open()) {
    link->cancel(stream_id_);
    stats_->upstream_rq_cancelled_total.inc();
    end_stream_accounting();
  }
  link->release(*client_);
}

void UpstreamAttachment::closed() {
  if (link_ == nullptr) return;
  UpstreamLink* link = std::exchange(link_, nullptr);
  if (open()) end_stream_accounting();
  link->release(*client_);
}

void UpstreamAttachment::lost() {
  if (link_ == nullptr) return;
  link_ = nullptr;
  if (open()) end_stream_accounting();
}

}  // namespace sluice
