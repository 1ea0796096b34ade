// The filter contract: a filter sees a request once its headers are complete (before any body is
// read), answers Continue or Stop, and sees the outcome of every request when it ends. Trimmed
// from Envoy's StreamDecoderFilter. Filters know nothing of sockets or HTTP/2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "filters/limiter_snapshot.h"
#include "src/core/criticality.h"
#include "src/core/dispatcher.h"
#include "src/core/grpc_status.h"
#include "src/core/time.h"

namespace sluice {

enum class FilterStatus {
  // The next filter runs now.
  Continue,
  // The request is held. The filter MUST later call FilterCallbacks::resume() or reject(),
  // unless the request ends first (client reset, deadline, drain), in which case on_complete()
  // arrives instead and the filter must not call back any more.
  Stop,
};

// What a filter may read about a request; valid until on_complete() returns.
struct RequestInfo {
  std::string_view method;     // :method
  std::string_view path;       // :path, e.g. "/pkg.Service/Method"
  std::string_view authority;  // :authority
  bool is_grpc = false;        // content-type application/grpc[+proto|...]
  // Absolute deadline from grpc-timeout, when the caller set one.
  std::optional<TimePoint> deadline;
  // When the request headers were complete: queue wait is measured from here.
  TimePoint headers_complete{};
  // Its traffic class (the listener's `criticality:` rules; critical when it has none).
  Criticality criticality = Criticality::Critical;
};

// The upstream's answer to an admitted request began: its first response message arrived, or
// the stream ended without one (a trailers-only reply, or trailers after headers alone). The
// latency sample of the request: for a stream, the time to its first message, not its life.
struct ResponseStart {
  Duration rtt{};        // admission -> now
  bool ok = false;       // a message arrived, or the answer is grpc-status 0 (non-gRPC: 2xx)
  int grpc_status = -1;  // the status when the answer ended without a message; -1 otherwise
};

// A locally generated answer (shedding). gRPC requests get a trailers-only response with
// `grpc_status`; other requests get `http_status` with retry-after.
struct LocalReply {
  GrpcStatus grpc_status = GrpcStatus::ResourceExhausted;
  int http_status = 503;  // for non-gRPC requests
  std::string message;    // human-readable; percent-encoded in grpc-message
  // Sent as grpc-retry-pushback-ms (gRPC) or retry-after (seconds, rounded up) when set.
  std::optional<Duration> retry_pushback;
  // Stat suffix for "shed by reason" (e.g. "queue_full", "budget", "deadline").
  std::string reason = "rejected";
};

// How a request ended, from sluice's point of view. One list: the enum, its names (access log
// `outcome`) and the listener's downstream_rq_<name>_total counters all come from it.
// X(Enumerator, name, description)
#define SLUICE_END_REASONS(X)                                                           \
  X(Completed, "completed", "the upstream answered and the response was delivered")     \
  X(Shed, "shed", "rejected by a filter (a local reply)")                               \
  X(ClientReset, "client_reset", "the client reset the stream or went away")            \
  X(DeadlineExceeded, "deadline_exceeded", "grpc-timeout passed (queued or in flight)") \
  X(UpstreamUnavailable, "upstream_unavailable", "no upstream connection could be had") \
  X(UpstreamReset, "upstream_reset", "the upstream reset the stream")                   \
  X(Drained, "drained", "still running when drain_timeout expired")                     \
  X(Internal, "internal", "a protocol error on either side")

enum class EndReason : uint8_t {
#define SLUICE_ENUMERATOR(e, name, help) e,
  SLUICE_END_REASONS(SLUICE_ENUMERATOR)
#undef SLUICE_ENUMERATOR
};

inline constexpr std::size_t kEndReasonCount = 0
#define SLUICE_COUNT(e, name, help) +1
    SLUICE_END_REASONS(SLUICE_COUNT)
#undef SLUICE_COUNT
    ;

const char* to_string(EndReason reason);
// What the reason means, for stat help texts.
const char* describe(EndReason reason);

struct RequestOutcome {
  bool admitted = false;  // passed every filter and was sent upstream
  EndReason reason = EndReason::Completed;
  Duration queue_wait{};        // headers complete -> admission or shedding
  std::optional<Duration> rtt;  // admission -> the answer began (ResponseStart)
  Duration total{};             // headers complete -> end
  int grpc_status = -1;         // final grpc-status sent to the client; -1 when none
  uint32_t reset_code = 0;      // HTTP/2 error code when the stream was reset
  int shed_by = -1;             // index of the filter that rejected, when Shed
};

// Given to a filter for one request; valid until on_complete() returns.
class FilterCallbacks {
 public:
  virtual ~FilterCallbacks() = default;
  virtual const RequestInfo& request() const = 0;
  // Continues the chain after Stop. Call on dispatcher()'s thread; at most once per Stop.
  virtual void resume() = 0;
  // Sheds the request. Every filter then gets on_complete() with admitted == false.
  virtual void reject(LocalReply reply) = 0;
  // The request's worker: post to it, make timers on it.
  virtual Dispatcher& dispatcher() = 0;
};

// One filter's state for one request. Made by FilterFactory::create(), destroyed after
// on_complete(). Callbacks are noexcept by contract: a filter reports failures through reject().
class StreamFilter {
 public:
  virtual ~StreamFilter() = default;
  // The request's headers are complete. Not called when an earlier filter stopped the chain
  // and then rejected.
  virtual FilterStatus on_request(FilterCallbacks& callbacks) = 0;
  // A later filter stopped the chain: the request now waits for it (called on every filter
  // before the one that stopped, each time one stops). A filter that only needs to act while a
  // request waits (a timer) does its work here, not in on_request(), so a request admitted at
  // once costs it nothing.
  virtual void on_waiting() {}
  // Every filter passed: the request goes upstream now. Called on every filter in the chain.
  virtual void on_admitted() {}
  // The request will not be admitted (answered locally, reset, gone): let go of any place held in
  // a queue now. on_complete() still follows when the stream ends. May come while this filter is
  // on the stack (its own reject() led to it): release, do not destroy.
  virtual void on_abandoned() {}
  // The upstream's answer began (see ResponseStart). At most once, only after on_admitted(), and
  // before on_complete(); never for a request that got no answer.
  virtual void on_response(const ResponseStart& /*response*/) {}
  // The request ended. Called exactly once on every filter of the chain, whether or not its
  // on_request() ran. Release everything held for the request here (or by RAII).
  virtual void on_complete(const RequestOutcome& outcome) = 0;
};

// Built once per listener from config; shared by all workers (create() is thread-safe).
class FilterFactory {
 public:
  virtual ~FilterFactory() = default;
  virtual const std::string& name() const = 0;  // from config, unique within a listener
  virtual const std::string& type() const = 0;  // "fixed_semaphore", "rtt_gradient", ...
  virtual std::unique_ptr<StreamFilter> create() = 0;
  // Live state for /limits, or nullptr for filters that hold no limit.
  virtual std::unique_ptr<LimiterSnapshot> snapshot() const { return nullptr; }
  // Demand beyond the limit seen outside any request: a queue consumer whose window is full
  // while entries wait in the stream (it never asks for a permit it cannot get, so no request
  // waits or is shed to say so). Adaptive limiters take it as they take a waiting request.
  // Any thread.
  virtual void on_demand_pressure() {}
};

}  // namespace sluice
