// The coefficient of clipping by the global norm (clip.hpp), shared by the host's clip_grad_norm
// and the device's kernels::GradientClipper, so that both scale by the same binary32 value for
// the same norm.
#pragma once

#include "harness/numeric/host_device.hpp"

namespace ampbench::train {

// torch.nn.utils.clip_grad_norm_'s min(1, max_norm / (total_norm + 1e-6)), formed in binary64
// and rounded to binary32 once. PyTorch's clamp(max=1.0) propagates NaN, and so does this form:
// a NaN norm gives NaN, an infinite one 0.
AMPBENCH_HD inline float clip_coefficient(double total_norm, double max_norm) {
  const double ratio = max_norm / (total_norm + 1e-6);
  return static_cast<float>(ratio > 1.0 ? 1.0 : ratio);
}

}  // namespace ampbench::train
