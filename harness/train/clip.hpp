// Clipping of gradients by their global norm, as torch.nn.utils.clip_grad_norm_ (norm_type 2).
// Clip after LossScaler::unscale: clipping scaled gradients would compare max_norm with a norm
// that is `scale` times too large.
#pragma once

#include "harness/train/scaler.hpp"

namespace ampbench::train {

// Scales every gradient by min(1, max_norm / (total_norm + 1e-6)) in place and returns
// total_norm, the 2-norm of all elements together. The sum of squares is taken in binary64, where
// each square of a binary32 value is exact, so it cannot overflow as an fp32 accumulation (PyTorch
// on CUDA) can for gradients above 2^64; PyTorch also rounds the norm to fp32. The coefficient is
// rounded to binary32 once and multiplied in binary32, as PyTorch's _foreach_mul_ does (also when
// it is 1). As in PyTorch with error_if_nonfinite=False, an infinite norm gives the coefficient 0
// and a NaN norm the coefficient NaN.
double clip_grad_norm(GradientList grads, double max_norm);

}  // namespace ampbench::train
