#include "filters/limiters/noload_baselines.h"

#include <algorithm>
#include <cmath>

namespace sluice {

double NoloadBaselines::Baseline::se_ms() const {
  return samples == 0 ? 0 : sd_ms / std::sqrt(static_cast<double>(samples));
}

void NoloadBaselines::add(TimePoint now, uint64_t method, double rtt_ms) {
  auto it = methods_.find(method);
  if (it == methods_.end()) {
    if (methods_.size() >= options_.max_methods) return;
    it = methods_.emplace(method, Method{}).first;
  }
  Method& m = it->second;
  m.clean.push_back(Clean{now, rtt_ms});
  m.sum += rtt_ms;
  m.sum_sq += rtt_ms * rtt_ms;
  m.dirty = true;
  while (m.clean.size() > kMaxClean) pop_front(m);
  detect_change(m);
}

void NoloadBaselines::detect_change(Method& m) {
  for (const std::size_t n : kRecent) {
    if (m.clean.size() < n + kMinHistory) return;
    double recent_sum = 0, recent_sq = 0;
    for (std::size_t i = m.clean.size() - n; i < m.clean.size(); ++i) {
      recent_sum += m.clean[i].rtt_ms;
      recent_sq += m.clean[i].rtt_ms * m.clean[i].rtt_ms;
    }
    const auto before = static_cast<double>(m.clean.size() - n);
    const double mean = (m.sum - recent_sum) / before;
    const double var = std::max(0.0, (m.sum_sq - recent_sq - before * mean * mean) / (before - 1));
    const double sd = std::max(std::sqrt(var), kMinRelativeSd * std::abs(mean));
    const double shift = recent_sum / static_cast<double>(n) - mean;
    if (std::abs(shift) <= kChangeZ * sd / std::sqrt(static_cast<double>(n))) continue;
    // Sustained, not one outlier: at least half of the recent answers beyond kDeviantSd on the
    // change's side. The new service starts at the first of them after which two thirds are.
    const double side = shift > 0 ? 1 : -1;
    auto deviant = [&](std::size_t i) {
      return (m.clean[i].rtt_ms - mean) * side > kDeviantSd * sd;
    };
    std::size_t deviants = 0;
    for (std::size_t i = m.clean.size() - n; i < m.clean.size(); ++i) deviants += deviant(i);
    if (2 * deviants < n) continue;
    std::size_t keep = n;
    std::size_t after = deviants;  // deviants from i on
    for (std::size_t i = m.clean.size() - n; i < m.clean.size(); ++i) {
      const std::size_t len = m.clean.size() - i;
      if (deviant(i) && 3 * after >= 2 * len) {
        keep = len;
        break;
      }
      after -= deviant(i);
    }
    // At least a ready baseline's worth: the method is never left without one.
    keep = std::max(keep, kMinClean);
    while (m.clean.size() > keep) pop_front(m);
    ++rebuilds_;
    return;
  }
}

void NoloadBaselines::pop_front(Method& m) {
  const double v = m.clean.front().rtt_ms;
  m.sum -= v;
  m.sum_sq -= v * v;
  m.clean.pop_front();
  m.dirty = true;
  if (m.clean.empty()) m.sum = m.sum_sq = 0;  // no drift from rounding
}

void NoloadBaselines::expire(TimePoint now) {
  for (auto it = methods_.begin(); it != methods_.end();) {
    Method& m = it->second;
    while (!m.clean.empty() && now - m.clean.front().at > options_.window) pop_front(m);
    it = m.clean.empty() ? methods_.erase(it) : std::next(it);
  }
}

void NoloadBaselines::refresh_quantiles(const Method& m) const {
  if (!m.dirty) return;
  std::vector<double> v;
  v.reserve(m.clean.size());
  for (const Clean& c : m.clean) v.push_back(c.rtt_ms);
  std::sort(v.begin(), v.end());
  const auto at = [&v](double q) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
  };
  m.p10 = at(0.1);
  m.p99 = at(0.99);
  m.dirty = false;
}

std::optional<NoloadBaselines::Baseline> NoloadBaselines::find(uint64_t method) const {
  auto it = methods_.find(method);
  if (it == methods_.end() || it->second.clean.size() < kMinClean) return std::nullopt;
  const Method& m = it->second;
  Baseline b;
  b.samples = m.clean.size();
  const auto n = static_cast<double>(b.samples);
  b.mean_ms = m.sum / n;
  b.sd_ms = std::sqrt(std::max(0.0, (m.sum_sq - n * b.mean_ms * b.mean_ms) / (n - 1)));
  return b;
}

std::optional<NoloadBaselines::Range> NoloadBaselines::range(uint64_t method) const {
  auto it = methods_.find(method);
  if (it == methods_.end() || it->second.clean.size() < kMinClean) return std::nullopt;
  refresh_quantiles(it->second);
  return Range{it->second.p10, it->second.p99};
}

bool NoloadBaselines::all_ready() const {
  return std::all_of(methods_.begin(), methods_.end(),
                     [](const auto& m) { return m.second.clean.size() >= kMinClean; });
}

std::optional<double> NoloadBaselines::busiest_noload_ms() const {
  const Method* best = nullptr;
  for (const auto& [key, m] : methods_) {
    if (m.clean.size() >= kMinClean && (best == nullptr || m.clean.size() > best->clean.size())) {
      best = &m;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->sum / static_cast<double>(best->clean.size());
}

std::optional<double> NoloadBaselines::smallest_p99_ms() const {
  std::optional<double> out;
  for (const auto& [key, m] : methods_) {
    if (m.clean.size() < kMinClean) continue;
    refresh_quantiles(m);
    out = out ? std::min(*out, m.p99) : m.p99;
  }
  return out;
}

void NoloadBaselines::name_method(uint64_t method, std::string_view name) {
  if (names_.size() >= 4 * options_.max_methods) return;
  names_.try_emplace(method, name);
}

std::vector<MethodBaseline> NoloadBaselines::snapshot() const {
  std::vector<MethodBaseline> out;
  for (const auto& [key, m] : methods_) {
    if (m.clean.size() < kMinClean) continue;
    auto name = names_.find(key);
    out.push_back(MethodBaseline{name == names_.end() ? std::string() : name->second,
                                 m.sum / static_cast<double>(m.clean.size()), m.clean.size()});
  }
  std::sort(out.begin(), out.end(),
            [](const MethodBaseline& a, const MethodBaseline& b) { return a.method < b.method; });
  return out;
}

}  // namespace sluice
