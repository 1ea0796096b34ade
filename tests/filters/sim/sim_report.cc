#include "tests/filters/sim/sim_report.h"

#include <spdlog/spdlog.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <utility>
#include <vector>

namespace sluice::sim {
namespace {

__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  return buf;
}

double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string report(const SimRun& run) {
  using std::chrono::milliseconds;
  const SimConfig& c = run.config();
  std::string out =
      format("== %s: %u upstream worker(s), %.0f req/s %s, service", c.policy.c_str(),
             c.upstream_workers, c.arrivals_per_second, c.poisson ? "poisson" : "fixed-gap");
  for (const auto& p : c.schedule.phases()) {
    out += format(" %.0fms/%.0fs", to_ms(p.service), seconds(p.length));
  }
  out += "\n";
  // The limit around each phase change, and at the end of each phase.
  out += "limit:";
  const auto& phases = c.schedule.phases();
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i].length < milliseconds(100)) continue;  // a blip, not a phase
    const Duration s = c.schedule.phase_start(i);
    std::vector<Duration> at;
    if (i > 0) at = {s - milliseconds(100), s};
    for (int ms : {50, 100, 200, 300, 500, 1000, 2000, 5000}) {
      if (milliseconds(ms) < phases[i].length) at.push_back(s + milliseconds(ms));
    }
    at.push_back(s + phases[i].length - milliseconds(10));
    out += s == Duration::zero() ? " " : "\n      ";
    for (Duration t : at) out += format(" %.2fs:%u", seconds(t), run.limit_at(t));
  }
  out += "\n";
  const SimSample& end = run.sample_at(c.schedule.total() - milliseconds(10));
  if (end.rtt_noload_ms) {
    out += "rtt_noload_ms at the end of each phase:";
    for (size_t i = 0; i < phases.size(); ++i) {
      if (phases[i].length < milliseconds(100)) continue;
      const SimSample& s =
          run.sample_at(c.schedule.phase_start(i) + phases[i].length - milliseconds(10));
      out += format(" %.1f", s.rtt_noload_ms.value_or(0));
    }
    out += "\n";
  }
  out +=
      "phase         arrived admitted  shed(budget/queue_full/deadline)  rtt p50/p99 ms  "
      "queue-wait p99 ms  goodput/s  upstream busy  mean limit\n";
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i].length < milliseconds(100)) continue;
    const Duration from = c.schedule.phase_start(i);
    const Duration to = from + phases[i].length;
    const SimPhase p = run.phase(from, to);
    auto reason = [&](const char* r) {
      auto it = p.shed_by_reason.find(r);
      return it == p.shed_by_reason.end() ? size_t{0} : it->second;
    };
    out += format(
        "%5.1f-%5.1fs  %7zu %8zu  %5zu (%zu/%zu/%zu)%*s %6.1f / %6.1f    %8.1f        %6.1f       "
        "%5.1f%%       %5.1f\n",
        seconds(from), seconds(to), p.arrived, p.admitted, p.shed, reason("budget"),
        reason("queue_full"), reason("deadline"), 14, "", p.rtt_p50_ms, p.rtt_p99_ms,
        p.queue_wait_p99_ms, p.goodput_per_s, 100 * p.upstream_busy, run.mean_limit(from, to));
  }
  return out;
}

std::unique_ptr<SimRun> run(SimConfig config) {
  // SLUICE_SIM_LOG=debug: the filters' log, one line per limiter decision among them.
  if (const char* level = std::getenv("SLUICE_SIM_LOG")) {
    spdlog::set_pattern("  %v");
    spdlog::set_level(spdlog::level::from_str(level));
  }
  auto r = std::make_unique<SimRun>(std::move(config));
  r->run();
  std::cout << report(*r) << "\n";
  return r;
}

}  // namespace sluice::sim
