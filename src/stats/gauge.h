// A value that goes up and down (in-flight, queued, limit). One atomic: gauges are read as a
// single current value, so they are not sharded.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice {

class Gauge {
 public:
  void set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  void sub(int64_t d) { value_.fetch_sub(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// A gauge holding a real number (a gradient, a smoothed RTT in ms).
class FloatGauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace sluice
