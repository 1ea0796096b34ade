#include "src/admin/json_pretty.h"

#include <boost/json/serialize.hpp>
#include <charconv>
#include <cmath>

namespace sluice {
namespace {

void indent(std::string& out, int depth) { out.append(static_cast<std::size_t>(depth) * 2, ' '); }

void write(std::string& out, const boost::json::value& v, int depth) {
  if (const auto* obj = v.if_object()) {
    if (obj->empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    bool first = true;
    for (const auto& member : *obj) {
      if (!first) out += ",\n";
      first = false;
      indent(out, depth + 1);
      out += boost::json::serialize(boost::json::string_view(member.key()));
      out += ": ";
      write(out, member.value(), depth + 1);
    }
    out += '\n';
    indent(out, depth);
    out += '}';
  } else if (const auto* arr = v.if_array()) {
    if (arr->empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    bool first = true;
    for (const auto& element : *arr) {
      if (!first) out += ",\n";
      first = false;
      indent(out, depth + 1);
      write(out, element, depth + 1);
    }
    out += '\n';
    indent(out, depth);
    out += ']';
  } else if (v.is_double()) {
    // Boost.JSON writes 0.8 as "8E-1"; people read these pages, so use the shortest round-trip
    // form instead ("0.8", "2.25", "1e-07"). JSON has no NaN or infinity: those become null.
    const double d = v.get_double();
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::general);
    out += std::isfinite(d) && ec == std::errc() ? std::string(buf, end) : std::string("null");
  } else {
    out += boost::json::serialize(v);
  }
}

}  // namespace

std::string pretty_json(const boost::json::value& v) {
  std::string out;
  write(out, v, 0);
  out += '\n';
  return out;
}

}  // namespace sluice
