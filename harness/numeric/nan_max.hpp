// The maximum of two values that propagates NaN, for host and device code alike.
#pragma once

#include "harness/numeric/host_device.hpp"

namespace ampbench::numeric {

// The larger of a and b, NaN when either is NaN: the maximum of PyTorch's reductions (torch.max,
// amax, and the row maximum of softmax, log_softmax, logsumexp and cross-entropy), which propagate
// NaN. fmax/fmaxf drop it (fmaxf(NaN, 1) is 1), so a row holding NaN would get a finite maximum,
// and a row of NaN -inf. Equal values give a (the order of two zeros is not observable in what the
// row ops compute from the maximum). The CUDA backend's row kernels (kernels/op_kernels.cu) and the
// CPU backend's emulation (harness/backends/cpu/rounders.hpp) both use it.
template <class T>
AMPBENCH_HD inline T max_propagating_nan(T a, T b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

}  // namespace ampbench::numeric
