#include "filters/rtt_gradient/noload_tracker.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace sluice {
namespace {

// The k-th smallest value with k = floor(q * n), but never the minimum or second minimum while
// there are at least three values: two lucky intervals must not set the baseline.
Duration low_quantile(std::vector<Duration>& values, double q) {
  const size_t n = values.size();
  size_t k = static_cast<size_t>(std::floor(q * static_cast<double>(n)));
  k = std::max(k, std::min<size_t>(n - 1, 2));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

}  // namespace

NoloadTracker::NoloadTracker(Duration window, uint32_t min_limit)
    : window_(window), min_limit_(std::max<uint32_t>(min_limit, 1)) {}

uint32_t NoloadTracker::clean_concurrency() const {
  return std::max(min_limit_, clean_concurrency_);
}

void NoloadTracker::add_interval(TimePoint end, Duration min_rtt, uint32_t in_flight) {
  records_.push_back(Record{end, min_rtt, in_flight});
  while (!records_.empty() && records_.front().end + window_ < end) records_.pop_front();

  if (!estimate_) {
    // The very first interval: the best evidence there is. Its fastest request is the first one
    // admitted after start, so it usually ran alone.
    estimate_ = min_rtt;
    clean_concurrency_ = in_flight;
    return;
  }
  const uint32_t clean_limit = clean_concurrency();
  if (!try_fast_adjust(clean_limit)) {
    std::vector<Duration> clean;
    clean.reserve(records_.size());
    for (const Record& r : records_) {
      if (r.in_flight <= clean_limit) clean.push_back(r.min_rtt);
    }
    // No clean interval in the window (sustained load above the knee): keep the estimate. This
    // is the case where re-measuring would drift.
    if (!clean.empty()) estimate_ = low_quantile(clean, kLowQuantile);
  }
  update_clean_concurrency();
}

bool NoloadTracker::try_fast_adjust(uint32_t clean_limit) {
  if (records_.size() < kFastIntervals) return false;
  const double estimate = static_cast<double>(estimate_->count());
  const auto recent = records_.end() - static_cast<std::ptrdiff_t>(kFastIntervals);
  bool all_faster = true;
  bool all_slower = true;
  Duration slowest = Duration::zero();
  Duration fastest = Duration::max();
  for (auto it = recent; it != records_.end(); ++it) {
    if (it->in_flight > clean_limit) return false;
    const double rtt = static_cast<double>(it->min_rtt.count());
    all_faster = all_faster && rtt < estimate * kFastMargin;
    all_slower = all_slower && rtt > estimate / kFastMargin;
    slowest = std::max(slowest, it->min_rtt);
    fastest = std::min(fastest, it->min_rtt);
  }
  if (!all_faster && !all_slower) return false;
  // The service itself changed speed: the most conservative of the recent intervals becomes the
  // estimate, and the older intervals, which describe the old service, are forgotten.
  estimate_ = all_faster ? slowest : fastest;
  records_.erase(records_.begin(), recent);
  return true;
}

void NoloadTracker::update_clean_concurrency() {
  std::vector<uint32_t> supporting;
  for (const Record& r : records_) {
    if (r.min_rtt <= *estimate_) supporting.push_back(r.in_flight);
  }
  // With no supporting interval left in the window, remember the last known knee.
  if (supporting.empty()) return;
  // The third highest, not the highest: one fast request at a high concurrency (a request that
  // failed fast) must not declare loaded intervals clean.
  const size_t k = std::min<size_t>(supporting.size() - 1, 2);
  std::nth_element(supporting.begin(), supporting.begin() + static_cast<std::ptrdiff_t>(k),
                   supporting.end(), std::greater<>());
  clean_concurrency_ = supporting[k];
}

}  // namespace sluice
