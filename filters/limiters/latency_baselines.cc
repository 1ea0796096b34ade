#include "filters/limiters/latency_baselines.h"

#include <algorithm>
#include <cmath>

namespace sluice {
namespace {

constexpr double kMinShift = -2.0;
constexpr double kMaxShift = 3.0;

double ms_of(Duration d) { return std::max(to_ms(d), 1e-3); }

}  // namespace

bool queueing_evidence(std::size_t above, std::size_t n) {
  if (n == 0) return false;
  const double share = static_cast<double>(above) / static_cast<double>(n);
  return share > 0.5 + kEvidenceZ * 0.5 / std::sqrt(static_cast<double>(n));
}

uint64_t method_key(std::string_view path) {
  // FNV-1a: stable across runs and builds (std::hash is neither promised).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : path) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

LatencyBaselines::LatencyBaselines(const Options& options) : options_(options) {}

void LatencyBaselines::set_options(const Options& options) {
  if (options.window != options_.window) slots_ = {};
  options_ = options;
}

LatencyBaselines::Method* LatencyBaselines::find_or_add(TimePoint now, uint64_t key) {
  auto it = methods_.find(key);
  if (it != methods_.end()) return &it->second;
  if (methods_.size() >= options_.max_methods) {
    // Make room by forgetting a method idle for the whole window; otherwise the newcomer is not
    // tracked (its samples still count for the limit, they are just not judged).
    auto idle = std::min_element(
        methods_.begin(), methods_.end(),
        [](const auto& a, const auto& b) { return a.second.last_seen < b.second.last_seen; });
    if (idle->second.last_seen + options_.window >= now) return nullptr;
    methods_.erase(idle);
  }
  return &methods_[key];
}

void LatencyBaselines::name_method(uint64_t method, std::string_view name) {
  // Bounded like the baselines: names of methods never tracked must not grow without end.
  if (names_.size() >= 4 * options_.max_methods && !names_.contains(method)) return;
  names_.try_emplace(method, name);
}

bool LatencyBaselines::clean(uint32_t admitted_at) const { return !knee_ || admitted_at <= *knee_; }

LatencyBaselines::Judgement LatencyBaselines::add(TimePoint now, const LatencySample& s) {
  Judgement j;
  Method* m = find_or_add(now, s.method);
  if (m == nullptr) return j;
  m->last_seen = now;
  const double rtt = ms_of(s.rtt);
  if (m->ready) {
    j.judged = true;
    // Ties (a service whose no-load time is the same every call) take no side in the sign test.
    j.tie = std::abs(rtt - m->median_ms) <= 1e-6 * m->median_ms;
    j.above = !j.tie && rtt > m->median_ms;
    j.far_above = rtt > m->p90_ms / kFarMargin;
    j.shift = std::clamp(std::log(rtt / m->median_ms) - m->offset, kMinShift, kMaxShift);
    j.delay_ms = rtt - m->median_ms;
    count_level(now, s.admitted_at, !j.above);  // a tie shows no queue at its level either
  }
  if (m->ready && !clean(s.admitted_at)) return j;  // before it is ready: bootstrap, all clean
  m->clean.push_back(Method::Clean{now, rtt, s.admitted_at});
  if (m->clean.size() > kMaxClean) m->clean.pop_front();
  m->dirty = true;
  if (m->ready) {
    const bool far_below = rtt < m->p10_ms * kFarMargin;
    m->recent[m->recent_next] = static_cast<int8_t>(j.far_above ? 1 : far_below ? -1 : 0);
    m->recent_next = (m->recent_next + 1) % kFastSamples;
    j.rebuilt = fast_adjust(*m, now);
  } else if (m->clean.size() >= kMinClean) {
    recompute(*m);
    if (!knee_) {
      // Until the levels tell: the admission concurrency of the fastest first request.
      const auto fastest = std::min_element(
          m->clean.begin(), m->clean.end(),
          [](const Method::Clean& a, const Method::Clean& b) { return a.rtt_ms < b.rtt_ms; });
      knee_ = std::max(fastest->admitted_at, options_.min_limit);
    }
  }
  return j;
}

void LatencyBaselines::recompute(Method& m) const {
  std::vector<double> v;
  v.reserve(m.clean.size());
  for (const Method::Clean& c : m.clean) v.push_back(c.rtt_ms);
  const std::size_t p90 = std::min(v.size() - 1, v.size() * 9 / 10);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(p90), v.end());
  m.p90_ms = v[p90];
  const std::size_t p10 = v.size() / 10;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(p10), v.end());
  m.p10_ms = v[p10];
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  m.median_ms = v[mid];
  double sum = 0;
  for (const double x : v) sum += std::clamp(std::log(x / m.median_ms), kMinShift, kMaxShift);
  m.offset = sum / static_cast<double>(v.size());
  m.ready = v.size() >= kMinClean;
  m.dirty = false;
}

bool LatencyBaselines::fast_adjust(Method& m, TimePoint /*now*/) {
  int above = 0;
  int below = 0;
  for (const int8_t r : m.recent) {
    above += r > 0 ? 1 : 0;
    below += r < 0 ? 1 : 0;
  }
  if (static_cast<std::size_t>(std::max(above, below)) < kFastSamples) return false;
  // The service itself changed speed: only the last kFastSamples clean samples describe it.
  while (m.clean.size() > kFastSamples) m.clean.pop_front();
  m.recent.fill(0);
  recompute(m);
  // The levels were judged against the old median: they say nothing about the new one.
  for (Slot& slot : slots_) slot.levels.clear();
  return true;
}

void LatencyBaselines::count_level(TimePoint now, uint32_t level, bool below) {
  const int64_t id = (now - TimePoint{}) / slot_length();
  Slot& slot = slots_[static_cast<std::size_t>(id) % kSlots];
  if (slot.id != id) {
    slot.id = id;
    slot.levels.clear();
  }
  level = std::min(level, kMaxLevel);
  if (slot.levels.size() <= level) slot.levels.resize(level + 1);
  slot.levels[level].total += 1;
  slot.levels[level].below += below ? 1 : 0;
}

void LatencyBaselines::update_knee(TimePoint now) {
  const int64_t current = (now - TimePoint{}) / slot_length();
  std::vector<LevelCounts> sum;
  for (const Slot& slot : slots_) {
    if (slot.id <= current - static_cast<int64_t>(kSlots)) continue;  // older than the window
    if (sum.size() < slot.levels.size()) sum.resize(slot.levels.size());
    for (std::size_t i = 0; i < slot.levels.size(); ++i) {
      sum[i].below += slot.levels[i].below;
      sum[i].total += slot.levels[i].total;
    }
  }
  // The sign test needs a baseline that no longer rests on the first calls (see kKneeBelowShare):
  // one method's whole kMaxClean clean samples, taken since the start or the last rebuild.
  const bool settled = std::any_of(methods_.begin(), methods_.end(), [](const auto& km) {
    return km.second.clean.size() >= kMaxClean;
  });
  bool evidence = false;
  std::optional<uint32_t> passed;
  for (std::size_t level = 0; level < sum.size(); ++level) {
    if (sum[level].total < kKneeMinSamples) continue;  // too little evidence at this level
    evidence = true;
    // Under kKneeBelowShare below, or, once a baseline is settled, significantly fewer than
    // half (the sign test of queueing_evidence(): with thousands of samples a level, one queued
    // call shows).
    const uint32_t total = sum[level].total;
    const uint32_t below = sum[level].below;
    if (static_cast<double>(below) < kKneeBelowShare * static_cast<double>(total) ||
        (settled && queueing_evidence(total - below, total))) {
      break;  // queueing from here on
    }
    passed = static_cast<uint32_t>(level);
  }
  // Without evidence keep what was known; with it, never below the floor.
  if (evidence) knee_ = std::max(passed.value_or(options_.min_limit), options_.min_limit);
}

void LatencyBaselines::refresh(TimePoint now) {
  for (auto it = methods_.begin(); it != methods_.end();) {
    Method& m = it->second;
    // Old evidence ages out relative to the kMinClean-th newest clean sample, not to `now`: while
    // clean samples arrive that is the window before now; when none arrive (the limit stayed above
    // the knee) nothing new is known and nothing ages. Aging against `now` in such a drought
    // shrank a baseline to its newest samples, those taken nearest the knee as it fell, the most
    // queued ones; each such step let the next knee pass a more queued level (a ratchet).
    if (m.clean.size() > kMinClean) {
      const TimePoint horizon = m.clean[m.clean.size() - kMinClean].at - options_.window;
      while (m.clean.front().at < horizon) {
        m.clean.pop_front();
        m.dirty = true;
      }
    }
    if (m.last_seen + options_.window < now) {
      it = methods_.erase(it);  // idle for the whole window: forgotten
      continue;
    }
    if (m.dirty && m.clean.size() >= kMinClean) recompute(m);
    ++it;
  }
  update_knee(now);
}

std::optional<double> LatencyBaselines::noload_ms(uint64_t method) const {
  auto it = methods_.find(method);
  if (it == methods_.end() || !it->second.ready) return std::nullopt;
  return it->second.median_ms;
}

std::optional<double> LatencyBaselines::busiest_noload_ms() const {
  const Method* best = nullptr;
  for (const auto& [key, m] : methods_) {
    if (m.ready && (best == nullptr || m.clean.size() > best->clean.size())) best = &m;
  }
  if (best == nullptr) return std::nullopt;
  return best->median_ms;
}

std::vector<MethodBaseline> LatencyBaselines::snapshot() const {
  std::vector<MethodBaseline> out;
  for (const auto& [key, m] : methods_) {
    if (!m.ready) continue;
    auto name = names_.find(key);
    out.push_back(MethodBaseline{name == names_.end() ? std::string() : name->second, m.median_ms,
                                 m.clean.size()});
  }
  std::sort(out.begin(), out.end(),
            [](const MethodBaseline& a, const MethodBaseline& b) { return a.method < b.method; });
  return out;
}

}  // namespace sluice
