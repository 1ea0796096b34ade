// Queue mode, pod side: one stream entry run as a call on the consumer's cluster. It plays the
// part a ProxyStream plays for a client: the consumer's filter chain admits it (a limiter's
// permit is held until the call ends, and the latency sample feeds the limiter), the cluster's
// UpstreamPool gives it a link, the request goes out with the time the caller has left in
// grpc-timeout, and the response (headers, body, trailers) is collected into a QueueReply.
//
//   Filtering --admit--> Connecting --ready--> Forwarding --on_close--> done(reply)
//   any state --deadline / shed / unavailable--> done(local reply, no headers)
//
// `done` runs exactly once, posted (never inside a call into this object); the owner destroys
// the call after it. All on the worker's thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "filters/active_chain.h"
#include "filters/filter_chain.h"
#include "src/core/dispatcher.h"
#include "src/h2/body_buffer.h"
#include "src/h2/stream_events.h"
#include "src/proxy/upstream_attachment.h"
#include "src/proxy/upstream_port.h"
#include "src/queue/queue_envelope.h"
#include "src/queue/queue_reply.h"

namespace sluice::queue {

class ConsumerCall final : public ChainCallbacks, public UpstreamClient, public h2::StreamEvents {
 public:
  using Done = std::function<void(QueueReply)>;

  // `chain` may be null (no filters). `deadline` is the envelope's, on the steady clock.
  ConsumerCall(QueueEnvelope envelope, const FilterChain* chain, UpstreamPort& port,
               Dispatcher& dispatcher, std::optional<TimePoint> deadline, Done done);
  ~ConsumerCall() override;
  ConsumerCall(const ConsumerCall&) = delete;
  ConsumerCall& operator=(const ConsumerCall&) = delete;

  void start();
  // Stop now (shutdown): the call ends UNAVAILABLE with `why` unless it already ended.
  void abort(const std::string& why);
  bool finished() const { return finished_; }

  // ChainCallbacks
  const RequestInfo& request() const override { return info_; }
  Dispatcher& dispatcher() override { return dispatcher_; }
  void admit() override;
  void shed(const LocalReply& reply, int filter_index) override;

  // UpstreamClient
  void on_upstream_assigned(UpstreamLink& link) override;
  void on_upstream_ready() override;
  void on_upstream_unavailable(std::string_view message) override;
  void on_upstream_connection_lost(std::string_view message) override;
  h2::StreamEvents* upstream_events() override { return this; }

  // h2::StreamEvents (the upstream's response)
  void on_headers_begin(bool initial) override;
  uint32_t on_header(std::string_view name, std::string_view value, bool never_indexed) override;
  void on_headers_end(bool end_stream) override;
  void on_data(const uint8_t* data, std::size_t length) override;
  void on_data_end() override;
  void on_close(uint32_t error_code) override;
  h2::BodyBuffer* outgoing() override { return &request_body_; }
  void on_outgoing_sent(std::size_t /*n*/) override {}

 private:
  void on_deadline();
  void on_answer(bool message);
  // Ends the call with a reply made here (no headers: the frontend answers trailers-only).
  void fail(GrpcStatus status, std::string message, EndReason reason);
  void finish(QueueReply reply, EndReason reason);

  QueueEnvelope envelope_;
  const FilterChain* chain_def_;
  UpstreamPort& port_;
  Dispatcher& dispatcher_;
  Done done_;
  RequestInfo info_;
  std::unique_ptr<ActiveChain> chain_;
  std::unique_ptr<Timer> deadline_timer_;
  UpstreamAttachment upstream_;
  h2::BodyBuffer request_body_;
  QueueReply reply_;
  bool in_trailers_ = false;
  bool final_headers_ = false;
  std::optional<TimePoint> admitted_at_;
  std::optional<Duration> rtt_;
  bool finished_ = false;
  std::optional<int> grpc_status_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice::queue
