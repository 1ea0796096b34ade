#include "src/core/asio_dispatcher.h"

#include <boost/asio/post.hpp>

namespace sluice {

namespace {

// A steady_timer whose callback is suppressed after cancel() or destruction. The generation
// counter makes a completion that raced with cancel()/re-arm a no-op.
class AsioTimer final : public Timer {
 public:
  AsioTimer(boost::asio::io_context& io, std::function<void()> cb)
      : timer_(io), state_(std::make_shared<State>()) {
    state_->cb = std::move(cb);
  }
  ~AsioTimer() override {
    state_->destroyed = true;
    state_->cb = nullptr;
    timer_.cancel();
  }

  void arm(Duration after) override {
    const uint64_t gen = ++state_->generation;
    state_->armed = true;
    timer_.expires_after(after);
    timer_.async_wait([state = state_, gen](const boost::system::error_code& ec) {
      if (ec || gen != state->generation || !state->armed || state->destroyed) return;
      state->armed = false;
      // The callback may destroy the timer (and re-arm it): run a moved-out copy so its
      // captures outlive the call, then put it back unless the timer is gone.
      std::function<void()> cb = std::move(state->cb);
      cb();
      if (!state->destroyed) state->cb = std::move(cb);
    });
  }
  void cancel() override {
    ++state_->generation;
    state_->armed = false;
    timer_.cancel();
  }
  bool armed() const override { return state_->armed; }

 private:
  struct State {
    std::function<void()> cb;
    uint64_t generation = 0;
    bool armed = false;
    bool destroyed = false;
  };
  boost::asio::steady_timer timer_;
  std::shared_ptr<State> state_;
};

}  // namespace

void AsioDispatcher::post(std::function<void()> fn) { boost::asio::post(io_, std::move(fn)); }

std::unique_ptr<Timer> AsioDispatcher::create_timer(std::function<void()> cb) {
  return std::make_unique<AsioTimer>(io_, std::move(cb));
}

}  // namespace sluice
