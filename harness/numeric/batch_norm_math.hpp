// The per-element and per-channel math of training-mode batch norm and of global average pooling,
// written once for host code and the CUDA kernels (kernels/cnn_kernels.hpp), in binary32: each
// operation one correctly rounded binary32 operation, in the order the CPU backend's emulation
// rounds them (backends::cpu::batch_norm, batch_norm_backward, mean_rows and mean_rows_backward
// in harness/backends/cpu), so that given the same sums the results agree bit for bit. Only the
// sums themselves (their order) differ between a kernel and the emulation.
//
// Callers must not let the compiler contract a multiply and an add into a fused multiply-add
// (the kernels are built with -fmad=false): every step below rounds on its own.
#pragma once

#include <cmath>
#include <cstdint>

#include "harness/numeric/host_device.hpp"

namespace ampbench::train {

// sum / count rounded once to binary32: the quotient formed in binary64, as the emulation divides
// a binary32 sum by the count (a binary64 value, exact up to 2^53 elements). A mean, and the
// spread of a mean's gradient over its elements.
AMPBENCH_HD inline float divide_by_count(float sum, std::uint64_t count) {
  return static_cast<float>(static_cast<double>(sum) / static_cast<double>(count));
}

// 1 / sqrt(variance + eps), each of the three operations rounded to binary32. eps is a binary32
// value, as ATen's batch-norm kernels take it (their accumulation type).
AMPBENCH_HD inline float reciprocal_std(float variance, float eps) {
  return 1.0f / std::sqrt(variance + eps);
}

// One output of the forward: ((x - mean) * rstd) * gamma + beta, each step rounded.
AMPBENCH_HD inline float batch_norm_element(float x, float mean, float rstd, float gamma,
                                            float beta) {
  const float deviation = x - mean;
  const float normalized = deviation * rstd;
  const float scaled = normalized * gamma;
  return scaled + beta;
}

// The scalars of one channel's backward from its two sums, sum dy and sum dy (x - mean) (ATen's
// batch_norm_backward_reduce), as batch_norm_backward_elemt (aten/src/ATen/native/cuda/
// Normalization.cuh) forms them.
struct BatchNormBackwardScales {
  float mean_dy;     // sum dy / n
  float proj_scale;  // ((sum dy (x - mean) / n) * rstd) * rstd
  float grad_scale;  // rstd * gamma
};

AMPBENCH_HD inline BatchNormBackwardScales batch_norm_backward_scales(float sum_dy,
                                                                      float sum_dy_deviation,
                                                                      std::uint64_t count,
                                                                      float rstd, float gamma) {
  BatchNormBackwardScales s{};
  s.mean_dy = divide_by_count(sum_dy, count);
  const float projected = divide_by_count(sum_dy_deviation, count) * rstd;
  s.proj_scale = projected * rstd;
  s.grad_scale = rstd * gamma;
  return s;
}

// dgamma of a channel: sum dy (x - mean) * rstd (dbeta is sum dy itself).
AMPBENCH_HD inline float batch_norm_dgamma(float sum_dy_deviation, float rstd) {
  return sum_dy_deviation * rstd;
}

// One element of dx: ((dy - (x - mean) * proj_scale) - mean_dy) * grad_scale, each step rounded.
AMPBENCH_HD inline float batch_norm_dx_element(float dy, float x, float mean,
                                               const BatchNormBackwardScales& s) {
  const float deviation = x - mean;
  const float projection = deviation * s.proj_scale;
  const float centred = (dy - projection) - s.mean_dy;
  return centred * s.grad_scale;
}

}  // namespace ampbench::train
