#include "src/queue/consumer_call.h"

#include "src/h2/header_block.h"
#include "src/h2/session.h"
#include "src/proxy/grpc_util.h"

namespace sluice::queue {

ConsumerCall::ConsumerCall(QueueEnvelope envelope, const FilterChain* chain, UpstreamPort& port,
                           Dispatcher& dispatcher, std::optional<TimePoint> deadline, Done done)
    : envelope_(std::move(envelope)),
      chain_def_(chain),
      port_(port),
      dispatcher_(dispatcher),
      done_(std::move(done)) {
  reply_.call_id = envelope_.call_id;
  info_.method = "POST";
  info_.path = envelope_.method;
  info_.is_grpc = true;
  info_.deadline = deadline;
  info_.headers_complete = dispatcher_.now();
  for (const auto& [name, value] : envelope_.metadata) {
    if (name == ":authority") info_.authority = value;
  }
  request_body_.append(reinterpret_cast<const uint8_t*>(envelope_.body.data()),
                       envelope_.body.size());
  request_body_.finish();
}

ConsumerCall::~ConsumerCall() {
  *alive_ = false;
  upstream_.reset();
}

void ConsumerCall::start() {
  if (info_.deadline) {
    deadline_timer_ = dispatcher_.create_timer([this] { on_deadline(); });
    deadline_timer_->arm(std::max(Duration::zero(), *info_.deadline - dispatcher_.now()));
  }
  if (chain_def_ != nullptr) {
    chain_ = std::make_unique<ActiveChain>(*chain_def_, *this);
    chain_->start();
  } else {
    admit();
  }
}

void ConsumerCall::abort(const std::string& why) {
  fail(GrpcStatus::Unavailable, why, EndReason::Drained);
}

void ConsumerCall::admit() {
  if (finished_ || admitted_at_) return;
  admitted_at_ = dispatcher_.now();
  port_.assign(*this);
}

void ConsumerCall::shed(const LocalReply& reply, int /*filter_index*/) {
  QueueReply r;
  r.call_id = envelope_.call_id;
  r.grpc_status = to_int(reply.grpc_status);
  r.grpc_message = reply.message;
  if (reply.retry_pushback) {
    r.trailers.emplace_back("grpc-retry-pushback-ms",
                            std::to_string(to_us(*reply.retry_pushback) / 1000));
  }
  finish(std::move(r), EndReason::Shed);
}

void ConsumerCall::on_deadline() {
  fail(GrpcStatus::DeadlineExceeded,
       admitted_at_ ? "deadline exceeded while the service ran the call"
                    : "deadline exceeded while waiting for a consumer's permit",
       EndReason::DeadlineExceeded);
}

// ---- Upstream ----

void ConsumerCall::on_upstream_assigned(UpstreamLink& link) {
  upstream_ = UpstreamAttachment(link, *this, port_.stats());
}

void ConsumerCall::on_upstream_ready() {
  if (finished_ || !upstream_.assigned() || upstream_.open()) return;
  auto& nv = h2::nv_scratch();
  nv.clear();
  // Pseudo-headers first (RFC 9113 8.3), then the rest in the order the client sent them.
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [name, value] : envelope_.metadata) {
      const bool pseudo = !name.empty() && name[0] == ':';
      if (pseudo == (pass == 0)) nv.push_back(h2::HeaderBlock::make_nv(name, value));
    }
  }
  std::string remaining;
  if (info_.deadline) {
    remaining = format_grpc_timeout(*info_.deadline - dispatcher_.now());
    nv.push_back(h2::HeaderBlock::make_nv("grpc-timeout", remaining, /*never_index=*/true));
  }
  const int32_t id = upstream_.submit(nv, /*with_body=*/true, this);
  if (id < 0) {
    fail(GrpcStatus::Unavailable,
         std::string("cannot open upstream stream: ") + nghttp2_strerror(id),
         EndReason::UpstreamUnavailable);
  }
}

void ConsumerCall::on_upstream_unavailable(std::string_view message) {
  upstream_.lost();
  fail(GrpcStatus::Unavailable, std::string(message), EndReason::UpstreamUnavailable);
}

void ConsumerCall::on_upstream_connection_lost(std::string_view message) {
  upstream_.lost();
  fail(GrpcStatus::Unavailable, "upstream connection lost: " + std::string(message),
       EndReason::UpstreamReset);
}

void ConsumerCall::on_headers_begin(bool /*initial*/) {
  in_trailers_ = final_headers_;
  if (!in_trailers_) reply_.headers.clear();
}

uint32_t ConsumerCall::on_header(std::string_view name, std::string_view value,
                                 bool /*never_indexed*/) {
  if (is_hop_by_hop_header(name, value)) return 0;
  if (name == "grpc-status") grpc_status_ = parse_grpc_status(value);
  if (name == "grpc-message" && in_trailers_) {
    reply_.grpc_message = percent_decode_grpc_message(value);
  }
  (in_trailers_ ? reply_.trailers : reply_.headers).emplace_back(name, value);
  return 0;
}

void ConsumerCall::on_headers_end(bool end_stream) {
  if (!in_trailers_) {
    for (const auto& [n, v] : reply_.headers) {
      if (n == ":status" && v.size() == 3 && v[0] == '1') return;  // 1xx: wait for the final
    }
    final_headers_ = true;
    if (end_stream) {
      // Trailers-only: grpc-status sits in the headers; keep them as the trailers too, so the
      // frontend sends one HEADERS frame as the upstream did.
      for (const auto& [n, v] : reply_.headers) {
        if (n == "grpc-message") reply_.grpc_message = percent_decode_grpc_message(v);
      }
      on_answer(false);
    }
    return;
  }
  on_answer(false);
}

void ConsumerCall::on_data(const uint8_t* data, std::size_t length) {
  reply_.body.append(reinterpret_cast<const char*>(data), length);
  upstream_.consume_response(length);  // collected: the upstream may send more
  on_answer(true);
}

void ConsumerCall::on_data_end() { on_answer(false); }

void ConsumerCall::on_close(uint32_t error_code) {
  upstream_.closed();
  if (finished_) return;
  if (error_code != 0 || !final_headers_) {
    fail(grpc_status_for_reset(error_code),
         std::string("upstream reset the stream (") + h2_error_name(error_code) + ")",
         EndReason::UpstreamReset);
    return;
  }
  reply_.grpc_status = grpc_status_.value_or(2);  // no grpc-status: UNKNOWN, as gRPC says
  finish(std::move(reply_), EndReason::Completed);
}

void ConsumerCall::on_answer(bool message) {
  if (rtt_ || !admitted_at_) return;
  rtt_ = dispatcher_.now() - *admitted_at_;
  if (!chain_) return;
  ResponseStart r;
  r.rtt = *rtt_;
  r.ok = message || grpc_status_.value_or(-1) == 0;
  r.grpc_status = message ? -1 : grpc_status_.value_or(-1);
  chain_->on_response(r);
}

void ConsumerCall::fail(GrpcStatus status, std::string message, EndReason reason) {
  QueueReply r;
  r.call_id = envelope_.call_id;
  r.grpc_status = to_int(status);
  r.grpc_message = std::move(message);
  finish(std::move(r), reason);
}

void ConsumerCall::finish(QueueReply reply, EndReason reason) {
  if (finished_) return;
  finished_ = true;
  deadline_timer_.reset();
  upstream_.reset();  // cancels a stream still open (deadline, abort)
  if (chain_) {
    if (!admitted_at_) chain_->abandon();
    RequestOutcome o;
    o.admitted = admitted_at_.has_value();
    o.reason = reason;
    const TimePoint now = dispatcher_.now();
    o.queue_wait = (admitted_at_ ? *admitted_at_ : now) - info_.headers_complete;
    o.rtt = rtt_;
    o.total = now - info_.headers_complete;
    o.grpc_status = reply.grpc_status;
    chain_->complete(o);
  }
  dispatcher_.post([alive = alive_, done = done_, r = std::move(reply)]() mutable {
    if (*alive) done(std::move(r));
  });
}

}  // namespace sluice::queue
