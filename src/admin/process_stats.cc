#include "src/admin/process_stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string>
#include <string_view>

namespace sluice {
namespace {

// Plain read(2): /proc files are small, and iostreams trip GCC 12's -Wnull-dereference.
std::string read_proc(const char* path) {
  std::string out;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Splits off the next space-separated field of `rest`; empty when there is none.
std::string_view next_field(std::string_view& rest) {
  const auto start = rest.find_first_not_of(" \n\t");
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  const auto end = rest.find_first_of(" \n\t");
  const std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

bool parse(std::string_view field, unsigned long long& out) {
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  return !field.empty() && ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

double rss_bytes_from_statm(const std::string& statm, long page_size) {
  // Fields: size resident shared text lib data dt, all in pages.
  std::string_view rest = statm;
  unsigned long long size = 0;
  unsigned long long resident = 0;
  if (!parse(next_field(rest), size) || !parse(next_field(rest), resident) || page_size <= 0) {
    return 0;
  }
  return static_cast<double>(resident) * static_cast<double>(page_size);
}

double threads_from_stat(const std::string& stat) {
  // Field 2 (comm) is parenthesised and may contain spaces or ')', so fields are counted from
  // the last ')'. num_threads is field 20, i.e. the 18th after comm.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::string_view rest = std::string_view(stat).substr(close + 1);
  std::string_view field;
  for (int i = 0; i < 18; ++i) field = next_field(rest);
  unsigned long long threads = 0;
  return parse(field, threads) ? static_cast<double>(threads) : 0;
}

void register_process_stats(StatsRegistry& registry, TimePoint started) {
  registry.gauge_fn(
      StatName{"server", {}, "memory_rss_bytes"}, "Resident set size of the process",
      [] { return rss_bytes_from_statm(read_proc("/proc/self/statm"), sysconf(_SC_PAGESIZE)); });
  registry.gauge_fn(
      StatName{"server", {}, "uptime_seconds"}, "Seconds since the process started",
      [started] { return std::chrono::duration<double>(SteadyClock::now() - started).count(); });
  registry.gauge_fn(StatName{"server", {}, "threads"}, "Threads in the process",
                    [] { return threads_from_stat(read_proc("/proc/self/stat")); });
}

}  // namespace sluice
