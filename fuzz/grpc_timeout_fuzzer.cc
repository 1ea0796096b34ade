// libFuzzer target: the grpc-timeout parser and formatter (src/proxy/grpc_util.h). Beyond "no
// crash, no UB", it checks the properties sluice relies on when it forwards a deadline: only the
// spec's grammar is accepted, nothing overflows, and formatting never gives the upstream more
// time than the caller has left.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "src/proxy/grpc_util.h"

namespace {

// A broken invariant is a crash for libFuzzer, which then saves the input.
void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "grpc_timeout_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

bool in_grammar(std::string_view s) {
  if (s.size() < 2 || s.size() > 9) return false;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  // strchr() also finds the terminating NUL, hence the explicit check.
  return s.back() != '\0' && std::strchr("HMSmun", s.back()) != nullptr;
}

int64_t unit_ns(char unit) {
  switch (unit) {
    case 'H':
      return 3'600'000'000'000;
    case 'M':
      return 60'000'000'000;
    case 'S':
      return 1'000'000'000;
    case 'm':
      return 1'000'000;
    case 'u':
      return 1'000;
    default:
      return 1;
  }
}

// parse(format(d)) is at most d and loses less than one unit of the chosen encoding.
void check_format(sluice::Duration d) {
  const std::string text = sluice::format_grpc_timeout(d);
  check(in_grammar(text), "format produces the grammar");
  const auto back = sluice::parse_grpc_timeout(text);
  check(back.has_value(), "format parses back");
  if (d.count() <= 0) {
    check(back->count() == 0, "non-positive formats as zero");
    return;
  }
  check(*back <= d, "never rounds up");
  if (d > sluice::kMaxGrpcTimeout) {
    // Longer than sluice ever keeps (parse caps it): only reachable from the raw-bytes case.
    check(*back == sluice::kMaxGrpcTimeout, "reads back capped");
    return;
  }
  check(d.count() - back->count() < unit_ns(text.back()), "loses less than one unit");
  const auto again = sluice::parse_grpc_timeout(sluice::format_grpc_timeout(*back));
  check(again == back, "formatting a formatted value keeps it");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = sluice::parse_grpc_timeout(text);
  check(parsed.has_value() == in_grammar(text), "accepts exactly the grammar");
  if (parsed) {
    check(parsed->count() >= 0, "never negative");
    check(*parsed <= sluice::kMaxGrpcTimeout, "capped");
    check_format(*parsed);
  }
  // Any duration, including negative and extreme ones, from the first 8 bytes.
  if (size >= sizeof(int64_t)) {
    int64_t ns = 0;
    std::memcpy(&ns, data, sizeof(ns));
    check_format(sluice::Duration(ns));
  }
  return 0;
}
