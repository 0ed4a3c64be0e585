// The per-element math of the loss scaler, written once for host code and CUDA kernels: the
// unscale-and-check of one gradient element and the update of the scale after a step. Both follow
// PyTorch's kernels (aten/src/ATen/native/cuda/AmpKernels.cu, _amp_foreach_non_finite_check_and_
// unscale_cuda_ and amp_update_scale_cuda_kernel; the CPU twins in
// aten/src/ATen/native/cpu/AmpGradScalerKernels.cpp) operation for operation, so that a scale
// computed here equals PyTorch's bit for bit. docs/scaler.md gives the reasoning.
#pragma once

#include <cstdint>
#include <cstring>

#include "harness/numeric/host_device.hpp"

namespace ampbench::train {

// Neither infinite nor NaN, from the bits: unaffected by -ffast-math and the same on the device.
AMPBENCH_HD inline bool is_finite(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return (bits & 0x7F800000u) != 0x7F800000u;
}

// 1 / scale as PyTorch computes it: the reciprocal in binary64, then rounded once to binary32
// ("FP32 division can be imprecise for certain compile options", grad_scaler.py). It is +inf for
// every scale at or below 2^-128, whose reciprocal exceeds the largest binary32.
AMPBENCH_HD inline float inverse_scale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

struct UnscaledElement {
  float value;
  bool non_finite;  // the scaled element was inf or NaN: the step must be skipped
};

// One element of the unscale: finiteness is judged on the scaled value, before the multiply, and
// the multiply is skipped when inv_scale is 1. So a finite gradient that overflows when unscaled
// (inv_scale > 1) does not set found_inf, and 0 * inf = NaN is not caught either.
AMPBENCH_HD inline UnscaledElement unscale_and_check(float scaled, float inv_scale) {
  return {inv_scale == 1.0f ? scaled : scaled * inv_scale, !is_finite(scaled)};
}

struct ScaleState {
  float scale;
  int growth_tracker;  // consecutive clean steps since the last growth or backoff
};

struct ScaleRule {
  double growth_factor;   // > 1
  double backoff_factor;  // in (0, 1)
  int growth_interval;    // >= 1
  float min_scale;        // the backoff never goes below it; 0: no floor (PyTorch)
};

// The scale after one step. The factors are binary64 and the scale binary32, as in PyTorch's
// kernel: the product is formed in binary64 and rounded once to binary32. A grown scale is kept
// only when finite, and the tracker restarts either way; a backoff may round down to 0, which only
// min_scale prevents.
AMPBENCH_HD inline ScaleState update_scale(ScaleState state, bool found_inf,
                                           const ScaleRule& rule) {
  if (found_inf) {
    const float backed_off =
        static_cast<float>(static_cast<double>(state.scale) * rule.backoff_factor);
    return {backed_off < rule.min_scale ? rule.min_scale : backed_off, 0};
  }
  const int successful = state.growth_tracker + 1;
  if (successful != rule.growth_interval) return {state.scale, successful};
  const float grown = static_cast<float>(static_cast<double>(state.scale) * rule.growth_factor);
  return {is_finite(grown) ? grown : state.scale, 0};
}

}  // namespace ampbench::train
