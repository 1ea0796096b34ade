#include "filters/active_chain.h"

#include <utility>

namespace sluice {

// One filter of the chain together with the callbacks it is given; knows its own index, so a
// late resume() or reject() can be checked against the chain's state.
class ActiveChain::Slot final : public FilterCallbacks {
 public:
  Slot(ActiveChain& chain, size_t index, std::unique_ptr<StreamFilter> filter)
      : chain_(chain), index_(index), filter_(std::move(filter)) {}

  // FilterCallbacks
  const RequestInfo& request() const override { return chain_.callbacks_.request(); }
  void resume() override { chain_.resume(index_); }
  void reject(LocalReply reply) override { chain_.reject(index_, reply); }
  Dispatcher& dispatcher() override { return chain_.callbacks_.dispatcher(); }

  StreamFilter& filter() { return *filter_; }

 private:
  ActiveChain& chain_;
  const size_t index_;
  std::unique_ptr<StreamFilter> filter_;
};

ActiveChain::ActiveChain(const FilterChain& chain, ChainCallbacks& callbacks)
    : callbacks_(callbacks), alive_(std::make_shared<bool>(true)) {
  slots_.reserve(chain.size());
  for (size_t i = 0; i < chain.size(); ++i) {
    slots_.push_back(std::make_unique<Slot>(*this, i, chain.factory(i).create()));
  }
}

ActiveChain::~ActiveChain() { *alive_ = false; }

void ActiveChain::start() {
  if (state_ != State::Idle) return;
  state_ = State::Running;
  run_from(0);
}

void ActiveChain::run_from(size_t index) {
  const std::shared_ptr<bool> alive = alive_;
  for (size_t i = index; i < slots_.size(); ++i) {
    current_ = i;
    resumed_inline_ = false;
    const FilterStatus status = slots_[i]->filter().on_request(*slots_[i]);
    if (!*alive) return;
    if (state_ != State::Running) return;  // rejected or completed from inside on_request()
    if (status == FilterStatus::Stop && !resumed_inline_) {
      state_ = State::Stopped;
      for (size_t j = 0; j < i; ++j) {
        slots_[j]->filter().on_waiting();
        if (!*alive || state_ != State::Stopped) return;  // it rejected or the request ended
      }
      return;
    }
  }
  state_ = State::Admitted;
  for (auto& slot : slots_) {
    slot->filter().on_admitted();
    if (!*alive || state_ != State::Admitted) return;
  }
  callbacks_.admit();
}

void ActiveChain::resume(size_t index) {
  if (state_ == State::Running && current_ == index) {
    resumed_inline_ = true;  // resumed before its on_request() returned Stop
    return;
  }
  if (state_ != State::Stopped || current_ != index) return;
  state_ = State::Running;
  run_from(index + 1);
}

void ActiveChain::reject(size_t index, const LocalReply& reply) {
  if (state_ != State::Running && state_ != State::Stopped) return;
  state_ = State::Shed;
  shed_by_ = static_cast<int>(index);
  callbacks_.shed(reply, shed_by_);
}

void ActiveChain::abandon() {
  if (state_ == State::Admitted || state_ == State::Completed || abandoned_) return;
  abandoned_ = true;
  const std::shared_ptr<bool> alive = alive_;
  for (auto& slot : slots_) {
    slot->filter().on_abandoned();
    if (!*alive) return;
  }
}

void ActiveChain::on_response(const ResponseStart& response) {
  if (state_ != State::Admitted || responded_) return;
  responded_ = true;
  const std::shared_ptr<bool> alive = alive_;
  for (auto& slot : slots_) {
    slot->filter().on_response(response);
    if (!*alive || state_ != State::Admitted) return;
  }
}

void ActiveChain::complete(const RequestOutcome& outcome) {
  if (state_ == State::Completed) return;
  const State before = state_;
  state_ = State::Completed;
  RequestOutcome filled = outcome;
  if (before == State::Shed && filled.shed_by < 0) filled.shed_by = shed_by_;
  const std::shared_ptr<bool> alive = alive_;
  for (auto& slot : slots_) {
    slot->filter().on_complete(filled);
    if (!*alive) return;
  }
}

}  // namespace sluice
