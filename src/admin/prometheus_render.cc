#include "src/admin/prometheus_render.h"

#include <array>
#include <map>
#include <set>

#include "src/admin/stats_render.h"

namespace sluice {
namespace {

constexpr std::array<uint64_t, 17> kMicrosecondBounds = {
    50,    100,    250,    500,    1000,    2500,    5000,    10000,   25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};

constexpr std::array<uint64_t, 19> kGenericBounds = {
    1,    2,    5,     10,    20,    50,     100,    200,    500,    1000,
    2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The exported family name: counters must end in _total; microsecond histograms are exported
// in seconds, so "queue_wait_us" becomes "queue_wait_seconds".
std::string family_name(const StatValue& s) {
  std::string name = s.name.prometheus_name();
  if (s.type == StatType::Counter && !ends_with(name, "_total")) name += "_total";
  if (s.type == StatType::Histogram && s.unit == "us") {
    if (ends_with(name, "_us")) name.resize(name.size() - 3);
    name += "_seconds";
  }
  return name;
}

// HELP text escapes only backslash and line feed.
std::string escape_help(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// `labels` is "" or "{a="b",...}"; adds le="..." as the last label.
std::string with_le(const std::string& labels, const std::string& le) {
  if (labels.empty()) return "{le=\"" + le + "\"}";
  return labels.substr(0, labels.size() - 1) + ",le=\"" + le + "\"}";
}

void render_histogram(std::string& out, const std::string& family, const StatValue& s) {
  // Division, not multiplication by 1e-6: 50 / 1e6 rounds to the double nearest 5e-05, so the
  // `le` label reads "5e-05" rather than "4.9999999999999996e-05".
  const double divisor = s.unit == "us" ? 1e6 : 1.0;
  const std::string labels = s.name.prometheus_labels();
  const HistogramSnapshot& h = s.histogram;
  for (uint64_t bound : prometheus_bounds(s.unit)) {
    out +=
        family + "_bucket" + with_le(labels, format_number(static_cast<double>(bound) / divisor));
    out += ' ' + std::to_string(h.count_at_most(bound)) + '\n';
  }
  out += family + "_bucket" + with_le(labels, "+Inf") + ' ' + std::to_string(h.count) + '\n';
  out +=
      family + "_sum" + labels + ' ' + format_number(static_cast<double>(h.sum) / divisor) + '\n';
  out += family + "_count" + labels + ' ' + std::to_string(h.count) + '\n';
}

}  // namespace

std::span<const uint64_t> prometheus_bounds(const std::string& unit) {
  if (unit == "us") return kMicrosecondBounds;
  return kGenericBounds;
}

std::string render_prometheus(const std::vector<StatValue>& stats) {
  // Samples of one family must be contiguous and follow its HELP/TYPE lines, but the snapshot is
  // sorted by dotted name, which interleaves families (filter.a.x, filter.a.y, filter.b.x).
  std::map<std::string, std::vector<const StatValue*>> families;
  for (const StatValue& s : stats) families[family_name(s)].push_back(&s);

  std::string out;
  std::set<std::string> series;  // family + labels already written
  for (const auto& [family, members] : families) {
    const StatValue& first = *members.front();
    const std::string help = first.help.empty() ? "sluice stat " + first.name.dotted() : first.help;
    out += "# HELP " + family + ' ' + escape_help(help) + '\n';
    out += "# TYPE " + family + ' ' + stat_type_name(first.type) + '\n';
    for (const StatValue* s : members) {
      // Two stats whose names collapse to one family but disagree on type (or unit) cannot
      // share a TYPE line; the later ones are left out rather than emitting an invalid family.
      if (stat_type_name(s->type) != std::string(stat_type_name(first.type)) ||
          s->unit != first.unit) {
        out += "# sluice: " + s->name.dotted() + " omitted: type conflicts with " +
               first.name.dotted() + '\n';
        continue;
      }
      // Likewise two stats whose names and labels sanitize to the same series.
      if (!series.insert(family + s->name.prometheus_labels()).second) {
        out += "# sluice: " + s->name.dotted() + " omitted: same series as another stat\n";
        continue;
      }
      if (s->type == StatType::Histogram) {
        render_histogram(out, family, *s);
      } else {
        out += family + s->name.prometheus_labels() + ' ' + format_number(s->number) + '\n';
      }
    }
  }
  return out;
}

}  // namespace sluice
