// A random service time per job, for workloads whose calls do not all cost the same:
// "uniform:70ms:130ms", "lognormal:95ms:0.5" (median and the sigma of ln), or
// "bimodal:5ms:100ms:0.1" (fast, slow, and the share of slow jobs).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>

#include "src/core/time.h"

namespace sluice::itest {

class ServiceDistribution {
 public:
  enum class Kind { kUniform, kLognormal, kBimodal };

  // nullopt on an unknown kind, a malformed or negative duration, uniform min > max, lognormal
  // median <= 0 or sigma < 0, bimodal share outside [0, 1].
  static std::optional<ServiceDistribution> parse(std::string_view text);

  // The service time at quantile u (the inverse CDF; u is clamped into (0, 1)): a sample is
  // quantile(U) for U uniform on [0, 1), so the mapping can be tested without randomness.
  Duration quantile(double u) const;
  Duration median() const { return quantile(0.5); }
  Kind kind() const { return kind_; }
  // The text it was parsed from, for the startup log line.
  const std::string& text() const { return text_; }

 private:
  ServiceDistribution(Kind kind, Duration a, Duration b, double x, std::string text)
      : kind_(kind), a_(a), b_(b), x_(x), text_(std::move(text)) {}

  Kind kind_;
  Duration a_;  // uniform: min; lognormal: median; bimodal: fast
  Duration b_;  // uniform: max; bimodal: slow
  double x_;    // lognormal: sigma; bimodal: share of slow jobs
  std::string text_;
};

// Standard normal quantile (inverse CDF) for p in (0, 1), by bisection on std::erfc: exact to
// double precision, ~100 erfc calls, plenty for a test upstream.
double normal_quantile(double p);

// Draws samples from one distribution; thread-safe, reproducible for a seed (with one thread).
class ServiceTimeSampler {
 public:
  ServiceTimeSampler(ServiceDistribution distribution, uint64_t seed)
      : distribution_(std::move(distribution)), rng_(seed) {}

  Duration sample();
  const ServiceDistribution& distribution() const { return distribution_; }

 private:
  ServiceDistribution distribution_;
  std::mutex mutex_;
  std::mt19937_64 rng_;
};

}  // namespace sluice::itest
