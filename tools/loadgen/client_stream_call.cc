#include "tools/loadgen/client_stream_call.h"

#include <boost/asio/post.hpp>
#include <cmath>
#include <utility>

namespace sluice::loadgen {

ClientStreamCall::ClientStreamCall(const CallSetup& setup, sluice::test::TestService::Stub& stub,
                                   uint64_t id, CallDone done)
    : setup_(setup),
      stub_(stub),
      id_(id),
      done_(std::move(done)),
      request_(setup.request),
      timer_(setup.io) {}

void ClientStreamCall::start() {
  prepare(setup_, ctx_);
  start_ = SteadyClock::now();
  stub_.async()->ClientStream(&ctx_, &response_, this);
  // The hold keeps OnDone away until this side stops writing: writes are started from timers,
  // outside any reaction, and must never race the end of the call.
  AddHold();
  StartCall();
  if (setup_.stream_rate > 0) {
    Phase phase;
    phase.name = "stream";
    phase.rate = setup_.stream_rate;
    phase.length = Duration(
        std::llround(static_cast<double>(setup_.stream_messages) * 1e9 / setup_.stream_rate));
    pacer_.emplace(ArrivalSchedule({phase}, ArrivalProcess::kFixed), 1, setup_.max_lateness,
                   RealClock::instance(), start_);
    tick();
  } else {
    write(0, start_);
  }
}

void ClientStreamCall::tick() {
  if (writing_over_) return;
  for (const SlotDecision& d : pacer_->poll()) {
    if (d.outcome == SlotOutcome::kLaunch) {
      write(d.slot.index, d.due);
    } else {
      ++skipped_;
      SendRecord skipped;
      skipped.call_id = id_;
      skipped.seq = d.slot.index;
      skipped.scheduled = since_run_start(d.due);
      sends_.push_back(skipped);
    }
  }
  if (auto due = pacer_->next_due()) {
    timer_.expires_at(*due);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->tick();
    });
  } else if (!write_in_flight_) {
    stop_writing(true);
  }
}

void ClientStreamCall::write(uint64_t seq, TimePoint scheduled) {
  SendRecord r;
  r.call_id = id_;
  r.seq = seq;
  r.sent = true;
  r.scheduled = since_run_start(scheduled);
  r.start = since_run_start(SteadyClock::now());
  sends_.push_back(r);
  next_seq_ = seq + 1;
  write_in_flight_ = true;
  StartWrite(&request_);
}

void ClientStreamCall::OnWriteDone(bool ok) {
  const TimePoint at = SteadyClock::now();
  boost::asio::post(setup_.io,
                    [self = shared_from_this(), ok, at] { self->on_write_done(ok, at); });
}

void ClientStreamCall::on_write_done(bool ok, TimePoint at) {
  write_in_flight_ = false;
  // The record of this write is the last "sent" one: skipped slots are only added while a write
  // is in flight, after it.
  for (auto it = sends_.rbegin(); it != sends_.rend(); ++it) {
    if (!it->sent) continue;
    it->done = since_run_start(at);
    it->ok = ok;
    break;
  }
  if (ok) ++sent_;
  if (!ok) {
    // The call is over (deadline, reset, or the server answered early): OnDone says how.
    stop_writing(false);
    return;
  }
  if (pacer_) {
    pacer_->on_call_done();
    if (pacer_->finished()) stop_writing(true);
    return;
  }
  if (next_seq_ < setup_.stream_messages) {
    write(next_seq_, at);
  } else {
    stop_writing(true);
  }
}

void ClientStreamCall::stop_writing(bool half_close) {
  if (writing_over_) return;
  writing_over_ = true;
  timer_.cancel();
  if (half_close) StartWritesDone();
  RemoveHold();
}

void ClientStreamCall::OnDone(const grpc::Status& status) {
  const TimePoint end = SteadyClock::now();
  boost::asio::post(setup_.io,
                    [self = shared_from_this(), status, end] { self->finish(status, end); });
}

void ClientStreamCall::finish(const grpc::Status& status, TimePoint end) {
  CallResult result = result_of(status, ctx_, start_, end);
  result.messages_sent = sent_;
  result.send_slots_skipped = skipped_;
  result.sends = std::move(sends_);
  done_(std::move(result));
}

}  // namespace sluice::loadgen
