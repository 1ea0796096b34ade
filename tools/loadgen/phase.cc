#include "tools/loadgen/phase.h"

#include <charconv>
#include <cmath>
#include <initializer_list>

#include "integration/common/duration_text.h"

namespace sluice::loadgen {
namespace {

std::optional<double> parse_rate(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_count(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// One item without its name: "RATE/s:LENGTH" or "WORKERSw:CALLS|LENGTH".
std::variant<Phase, std::string> parse_item(std::string_view item) {
  size_t colon = item.find(':');
  if (colon == std::string_view::npos) return std::string("missing ':'");
  std::string_view load = item.substr(0, colon);
  std::string_view bound = item.substr(colon + 1);
  Phase phase;
  if (load.ends_with("/s")) {
    phase.kind = LoopKind::kOpen;
    auto rate = parse_rate(load.substr(0, load.size() - 2));
    if (!rate) return std::string("bad rate");
    phase.rate = *rate;
    auto length = itest::parse_duration(bound);
    if (!length || *length <= Duration::zero()) return std::string("bad length");
    phase.length = *length;
    return phase;
  }
  if (load.ends_with("w")) {
    phase.kind = LoopKind::kClosed;
    auto workers = parse_count(load.substr(0, load.size() - 1));
    if (!workers || *workers == 0 || *workers > 100000) return std::string("bad worker count");
    phase.workers = static_cast<uint32_t>(*workers);
    if (auto calls = parse_count(bound)) {
      if (*calls == 0) return std::string("zero calls");
      phase.calls = *calls;
      return phase;
    }
    auto length = itest::parse_duration(bound);
    if (!length || *length <= Duration::zero()) return std::string("bad call count or length");
    phase.length = *length;
    return phase;
  }
  return std::string("expected RATE/s or WORKERSw before ':'");
}

// Joins pieces by appending: GCC 12's -Wrestrict misfires on chains of operator+ at -O3.
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out.append(part);
  return out;
}

}  // namespace

std::variant<std::vector<Phase>, std::string> parse_phases(std::string_view text) {
  std::vector<Phase> phases;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    std::string_view name;
    if (size_t at = item.find('@'); at != std::string_view::npos) {
      name = item.substr(at + 1);
      item = item.substr(0, at);
      if (name.empty()) return join({"phase '", item, "': empty name"});
    }
    auto parsed = parse_item(item);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      return join({"phase ", std::to_string(phases.size()), " '", item, "': ", *error});
    }
    Phase phase = std::get<Phase>(std::move(parsed));
    phase.name = name.empty() ? join({"p", std::to_string(phases.size())}) : std::string(name);
    if (!phases.empty() && phases.front().kind != phase.kind) {
      return join({"phase '", item, "': open- and closed-loop phases cannot be mixed"});
    }
    phases.push_back(std::move(phase));
  }
  if (phases.empty()) return std::string("no phases");
  return phases;
}

}  // namespace sluice::loadgen
