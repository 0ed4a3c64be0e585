// The CUDA backend's convolutions for the audit: an ops::Kernel that runs a convolution plan
// (conv_plan.hpp) through kernels::run_convolution on the current device. Built only with the CUDA
// toolkit; running needs a device.
#pragma once

#include <nlohmann/json.hpp>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda {

// A kernel running `plan` at `shape` (a convolution's). Each run copies the two operands to the
// device (exactly, as the plan's data type), runs the pass, copies the output back (exactly) and,
// when `detail` is not null, writes there what ran: the library, the pass, the data and compute
// types, the rule that chose them, and the algorithm (its enumerator, rank in cuDNN's heuristic
// list, requested and actual math type, whether that is a Tensor Core math type, determinism,
// workspace). Throws kernels::CudaError when a CUDA or cuDNN call fails, std::runtime_error when
// cuDNN offers no algorithm for the plan's math type, std::invalid_argument when the shape exceeds
// cuDNN's int sizes. `detail` must outlive the kernel.
ops::Kernel make_convolution_kernel(const ops::Shape& shape, const ConvPlan& plan,
                                    nlohmann::json* detail);

}  // namespace ampbench::backends::cuda
