// What the GPU training tests share: the built-in policies by name, seeded binary32 operands, the
// normwise distance of a device result from the CPU emulation's, and what a short training run on
// the device must show.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "harness/policy/policy.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::train::cuda::test {

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

inline std::vector<double> widened(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

// n binary32 values uniform in [low, high).
inline std::vector<float> uniform(std::size_t n, float low, float high, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// A short run on the device: `policies` runs of `steps` steps on the CUDA backend, each tracking
// the reference, the first one fp32, whose every op runs in binary32 (cuBLASLt 32F, no TF32;
// cuDNN's FMA math): its loss differs from the reference's by binary32 roundings at every step,
// as on the CPU backend.
inline void expect_tracks_reference(const train::TrainResult& r, std::size_t policies,
                                    std::size_t steps) {
  EXPECT_EQ(r.backend, "cuda");
  ASSERT_EQ(r.runs.size(), policies);
  for (const auto& run : r.runs) {
    EXPECT_TRUE(run.pass) << run.policy << ": " << run.verdict;
    ASSERT_EQ(run.steps.size(), steps);
  }
  ASSERT_EQ(r.runs[0].policy, "fp32");
  for (const auto& s : r.runs[0].steps) EXPECT_LT(*s.loss_error, 1e-5) << "fp32 step " << s.step;
}

}  // namespace ampbench::train::cuda::test
