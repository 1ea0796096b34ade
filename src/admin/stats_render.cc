#include "src/admin/stats_render.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <charconv>
#include <cmath>

namespace sluice {

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Integral values within the exactly representable range print as integers, so counters
  // never show up as "1e+06".
  if (std::trunc(v) == v && std::fabs(v) < 9007199254740992.0) {
    return std::to_string(static_cast<int64_t>(v));
  }
  // Shortest round-trip digits in %g style, as Go's FormatFloat(v, 'g', -1) (and so the
  // Prometheus client libraries) writes them: "0.0001", "5e-05", "2.5".
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

const char* stat_type_name(StatType type) {
  switch (type) {
    case StatType::Counter:
      return "counter";
    case StatType::Gauge:
    case StatType::FloatGauge:
    case StatType::GaugeFn:
      return "gauge";
    case StatType::Histogram:
      return "histogram";
  }
  return "untyped";
}

std::string render_stats_text(const std::vector<StatValue>& stats) {
  std::string out;
  for (const StatValue& s : stats) {
    out += s.name.dotted();
    out += ": ";
    if (s.type == StatType::Histogram) {
      const HistogramSnapshot& h = s.histogram;
      out += "P50=" + std::to_string(h.quantile(0.5));
      out += " P90=" + std::to_string(h.quantile(0.9));
      out += " P99=" + std::to_string(h.quantile(0.99));
      out += " P99.9=" + std::to_string(h.quantile(0.999));
      out += " max=" + std::to_string(h.max);
      out += " count=" + std::to_string(h.count);
    } else {
      out += format_number(s.number);
    }
    out += '\n';
  }
  return out;
}

boost::json::value render_stats_json(const std::vector<StatValue>& stats) {
  boost::json::array list;
  list.reserve(stats.size());
  for (const StatValue& s : stats) {
    boost::json::object o;
    o["name"] = s.name.dotted();
    o["kind"] = s.name.kind;
    boost::json::object labels;
    for (const auto& [key, value] : s.name.labels) labels[key] = value;
    o["labels"] = std::move(labels);
    o["leaf"] = s.name.leaf;
    o["type"] = stat_type_name(s.type);
    o["help"] = s.help;
    if (s.type == StatType::Histogram) {
      const HistogramSnapshot& h = s.histogram;
      o["unit"] = s.unit;
      o["count"] = h.count;
      o["sum"] = h.sum;
      o["max"] = h.max;
      o["p50"] = h.quantile(0.5);
      o["p90"] = h.quantile(0.9);
      o["p99"] = h.quantile(0.99);
      o["p999"] = h.quantile(0.999);
    } else if (std::trunc(s.number) == s.number && std::fabs(s.number) < 9007199254740992.0) {
      o["value"] = static_cast<int64_t>(s.number);  // Boost.JSON would print 5.0 as "5E0"
    } else if (std::isfinite(s.number)) {
      o["value"] = s.number;
    } else {
      o["value"] = nullptr;  // JSON has no NaN/Inf
    }
    list.push_back(std::move(o));
  }
  boost::json::object root;
  root["stats"] = std::move(list);
  return root;
}

}  // namespace sluice
