// The per-element math of the op kernels (kernels/op_kernels.cu): the activations and their
// derivatives in binary32, written once for the device and the host. Each formula is PyTorch's
// (aten/src/ATen/native/cuda/ActivationGeluKernel.cu, ActivationSiluKernel.cu) and is evaluated
// step by step as the CPU backend's emulation does (harness/backends/cpu/emulate.cpp): every
// product, sum and function value rounded to binary32, constants rounded from binary64 once. The
// order follows the emulation, which differs from ATen's in two places by about an ulp: silu's
// backward multiplies dy by the whole derivative (ATen: (dy * s) * (1 + x (1 - s))), and
// gelu_tanh's 3 kKappa is binary64's product rounded once (ATen: float(3) * float(kKappa)). relu's
// backward selects, as ATen's threshold_backward does, rather than multiplying dy by a derivative.
//
// op_kernels.cu is compiled with -fmad=false and the host test with -ffp-contract=off, so neither
// compiler fuses a * b + c into one rounding. The functions erff, expf and tanhf are the
// platform's: CUDA's within 2 ulp (CUDA C++ Programming Guide, "Mathematical Functions"), glibc's
// within a few, so host and device agree except through them (relu and its backward agree bit for
// bit).
#pragma once

#include <cmath>
#include <cstddef>

#include "harness/numeric/host_device.hpp"
#include "harness/numeric/nan_max.hpp"

namespace ampbench::kernels::op_math {

// binary32 roundings of the binary64 constants, as the CPU backend rounds them to its compute
// format.
inline constexpr float kInvSqrt2 = static_cast<float>(0.70710678118654752440);       // 1/sqrt(2)
inline constexpr float kInvSqrt2Pi = static_cast<float>(0.39894228040143267794);     // 1/sqrt(2pi)
inline constexpr float kSqrt2OverPi = static_cast<float>(0.79788456080286535588);    // sqrt(2/pi)
inline constexpr float kGeluTanhCubic = static_cast<float>(0.044715);                // kKappa
inline constexpr float kGeluTanhCubicDerivative = static_cast<float>(3 * 0.044715);  // 3 kKappa

// max(v, 0), NaN kept (torch.relu propagates NaN).
AMPBENCH_HD inline float relu(float v) {
  return v > 0.0F ? v : (v != v ? v : 0.0F);
}
// (v / 2) (1 + erf(v / sqrt 2)).
AMPBENCH_HD inline float gelu(float v) {
  return (0.5F * v) * (1.0F + erff(v * kInvSqrt2));
}
// (v / 2) (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
AMPBENCH_HD inline float gelu_tanh(float v) {
  const float cube = (v * v) * v;
  const float inner = kSqrt2OverPi * (v + kGeluTanhCubic * cube);
  return (0.5F * v) * (1.0F + tanhf(inner));
}
// v / (1 + exp(-v)).
AMPBENCH_HD inline float silu(float v) {
  return v / (1.0F + expf(-v));
}

// ATen's threshold_backward(dy, x, 0): x <= 0 ? 0 : dy, a select, not dy * relu'(x). It differs
// from the product where x is NaN (dy passes), where dy = +-inf and x <= 0 (+0, not NaN) and
// where dy < 0 and x <= 0 (+0, not -0).
AMPBENCH_HD inline float relu_backward(float x, float dy) {
  return x <= 0.0F ? 0.0F : dy;
}
// Phi(v) + v phi(v).
AMPBENCH_HD inline float gelu_derivative(float v) {
  const float cdf = 0.5F * (1.0F + erff(v * kInvSqrt2));
  const float pdf = kInvSqrt2Pi * expf(-0.5F * (v * v));
  return cdf + v * pdf;
}
// ATen's GeluBackward with approximate="tanh": t = tanh(inner),
// (1 + t) / 2 + (v / 2) (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 v^2).
AMPBENCH_HD inline float gelu_tanh_derivative(float v) {
  const float square = v * v;
  const float inner = kSqrt2OverPi * (v + kGeluTanhCubic * (square * v));
  const float t = tanhf(inner);
  const float left = 0.5F * v;
  const float left_derivative = 0.5F * (1.0F + t);
  const float tanh_derivative = 1.0F - t * t;
  const float inner_derivative = kSqrt2OverPi * (1.0F + kGeluTanhCubicDerivative * square);
  return left_derivative + (left * tanh_derivative) * inner_derivative;
}
// s (1 + v (1 - s)), s = 1 / (1 + exp(-v)).
AMPBENCH_HD inline float silu_derivative(float v) {
  const float s = 1.0F / (1.0F + expf(-v));
  return s * (1.0F + v * (1.0F - s));
}

// The row maximum of every row op, NaN-propagating as PyTorch's (harness/numeric/nan_max.hpp: the
// CPU backend's emulation uses the same function).
using numeric::max_propagating_nan;

// Attention's backward as the CPU backend's emulation (harness/backends/cpu/attention_backward.cpp)
// and FlashAttention-2 compute it: the row sum D_i = sum_t dO_it O_it of binary32 products added
// in order from the first term, and a score's gradient dS_ij = P_ij (dP_ij - D_i), each step
// rounded to binary32.
template <class Term>
AMPBENCH_HD inline float ordered_sum(std::size_t n, Term term) {
  if (n == 0) return 0.0F;
  float sum = term(0);
  for (std::size_t i = 1; i < n; ++i) sum = sum + term(i);
  return sum;
}
AMPBENCH_HD inline float score_gradient(float p, float dp, float row_sum) {
  return p * (dp - row_sum);
}

}  // namespace ampbench::kernels::op_math
