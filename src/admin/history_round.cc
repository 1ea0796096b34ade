#include "src/admin/history_round.h"

namespace sluice {

float HistoryRound::rate(const std::string& key, double value) {
  counters[key] = value;
  const auto it = last_counters_.find(key);
  if (dt_ <= 0 || it == last_counters_.end() || value < it->second) return kNoValue;
  return to_float((value - it->second) / dt_);
}

std::optional<double> HistoryRound::windowed_rate(const std::string& key, double value,
                                                  std::size_t depth) {
  ValueWindow w;
  if (auto node = last_windows_.extract(key)) w = std::move(node.mapped());
  if (!w.empty() && value < w.back().second) w.clear();
  if (!w.empty() && now_ <= w.back().first) w.pop_back();  // the clock did not move: replace
  w.emplace_back(now_, value);
  while (w.size() > depth) w.pop_front();
  ValueWindow& kept = windows[key] = std::move(w);
  if (kept.size() < 2) return std::nullopt;
  const double seconds =
      std::chrono::duration<double>(kept.back().first - kept.front().first).count();
  return (kept.back().second - kept.front().second) / seconds;
}

const HistoryRound::HistogramWindow& HistoryRound::window(const StatValue& s, std::size_t depth) {
  const std::string dotted = s.name.dotted();
  HistogramWindow w;
  if (auto node = last_histograms_.extract(dotted)) w = std::move(node.mapped());
  w.push_back(s.histogram);
  while (w.size() > depth) w.pop_front();
  return histograms[dotted] = std::move(w);
}

}  // namespace sluice
