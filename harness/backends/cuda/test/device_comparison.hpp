// What the GPU training tests share: the built-in policies by name, seeded binary32 operands and
// the normwise distance of a device result from the CPU emulation's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "harness/policy/policy.hpp"

namespace ampbench::backends::cuda::test {

inline const policy::Policy& builtin(const char* name) {
  return *policy::find_builtin(name);
}

// ||a - b|| / ||b||; infinite when a has a non-finite value.
inline double normwise(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    d += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return std::sqrt(d / n);
}

// n binary32 values uniform in [low, high).
inline std::vector<float> uniform(std::size_t n, float low, float high, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

}  // namespace ampbench::backends::cuda::test
