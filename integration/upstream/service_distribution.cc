#include "integration/upstream/service_distribution.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "integration/common/duration_text.h"

namespace sluice::itest {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text = text.substr(at + 1);
  }
}

// A plain decimal number, all of `text`.
std::optional<double> parse_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::string copy(text);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ServiceDistribution> ServiceDistribution::parse(std::string_view text) {
  std::vector<std::string_view> f = split(text, ':');
  std::string whole(text);
  if (f[0] == "uniform" && f.size() == 3) {
    auto lo = parse_duration(f[1]);
    auto hi = parse_duration(f[2]);
    if (!lo || !hi || *lo > *hi) return std::nullopt;
    return ServiceDistribution(Kind::kUniform, *lo, *hi, 0, whole);
  }
  if (f[0] == "lognormal" && f.size() == 3) {
    auto median = parse_duration(f[1]);
    auto sigma = parse_number(f[2]);
    if (!median || *median <= Duration::zero() || !sigma || *sigma < 0) return std::nullopt;
    return ServiceDistribution(Kind::kLognormal, *median, Duration::zero(), *sigma, whole);
  }
  if (f[0] == "bimodal" && f.size() == 4) {
    auto fast = parse_duration(f[1]);
    auto slow = parse_duration(f[2]);
    auto share = parse_number(f[3]);
    if (!fast || !slow || !share || *share < 0 || *share > 1) return std::nullopt;
    return ServiceDistribution(Kind::kBimodal, *fast, *slow, *share, whole);
  }
  return std::nullopt;
}

double normal_quantile(double p) {
  // Phi(x) = erfc(-x / sqrt 2) / 2 rises with x; keep the interval where it brackets p.
  double lo = -40, hi = 40;
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

Duration ServiceDistribution::quantile(double u) const {
  u = std::clamp(u, 1e-12, 1 - 1e-12);
  switch (kind_) {
    case Kind::kUniform: {
      double span = static_cast<double>((b_ - a_).count());
      return a_ + Duration(static_cast<int64_t>(std::llround(u * span)));
    }
    case Kind::kLognormal: {
      double ns = static_cast<double>(a_.count()) * std::exp(x_ * normal_quantile(u));
      return Duration(static_cast<int64_t>(std::llround(ns)));
    }
    case Kind::kBimodal:
      // The slow jobs are the top x_ of the quantiles.
      return u < 1 - x_ ? a_ : b_;
  }
  return a_;
}

Duration ServiceTimeSampler::sample() {
  double u;
  {
    std::lock_guard lock(mutex_);
    u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }
  return distribution_.quantile(u);
}

}  // namespace sluice::itest
