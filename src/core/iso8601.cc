#include "src/core/iso8601.h"

#include <cstdint>
#include <cstdio>
#include <ctime>

namespace sluice {

std::string iso8601(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms_total = duration_cast<milliseconds>(t.time_since_epoch()).count();
  // Floor division so times before the epoch still get a 0..999 millisecond part.
  int64_t secs = ms_total / 1000;
  int64_t ms = ms_total % 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  const auto tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

}  // namespace sluice
