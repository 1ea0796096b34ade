#include "src/queue/wait_estimator.h"

namespace sluice::queue {

WaitEstimator::WaitEstimator(const Clock& clock, Options options)
    : clock_(clock), options_(options) {}

void WaitEstimator::observe(int64_t backlog, std::optional<int64_t> entries_read) {
  const TimePoint now = clock_.now();
  while (!saturated_.empty() && saturated_.front().end + options_.window <= now) {
    saturated_.pop_front();
  }
  if (!entries_read) {
    last_.reset();  // deliveries across this poll cannot be counted
    return;
  }
  if (last_ && now <= last_->at) return;  // same instant: what it saw counts in the next interval
  if (last_) {
    const int64_t delivered = *entries_read - last_->entries_read;
    if (delivered < 0) {
      saturated_.clear();  // another counter: Redis restarted or the group was made again
    } else if (last_->backlog > 0 && backlog > 0) {
      saturated_.push_back(Interval{now, now - last_->at, delivered});
    }
  }
  last_ = Poll{now, backlog, *entries_read};
}

std::optional<double> WaitEstimator::drain_rate() const {
  const TimePoint since = clock_.now() - options_.window;
  Duration length{};
  int64_t delivered = 0;
  for (const Interval& i : saturated_) {
    if (i.end <= since) continue;  // older than the window
    length += i.length;
    delivered += i.delivered;
  }
  if (length < options_.min_evidence || length <= Duration::zero()) return std::nullopt;
  const double seconds = std::chrono::duration<double>(length).count();
  return static_cast<double>(delivered + 1) / seconds;
}

std::optional<Duration> WaitEstimator::estimate(int64_t backlog) const {
  if (backlog <= 0) return Duration::zero();
  const std::optional<double> rate = drain_rate();
  if (!rate) return std::nullopt;
  return std::chrono::duration_cast<Duration>(
      std::chrono::duration<double>(static_cast<double>(backlog) / *rate));
}

}  // namespace sluice::queue
