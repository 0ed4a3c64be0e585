// The CUDA backend's kernels for the audit: an ops::Kernel that runs a plan (plan.hpp) on the
// current device, GEMMs through cuBLASLt, the cast through kernels::round_kernel, the
// convolutions through cuDNN and the other ops through the backend's own kernels
// (kernels/op_kernels.hpp). Built only with the CUDA toolkit; running needs a device
// (kernels::probe_device says whether there is one).
#pragma once

#include <nlohmann/json.hpp>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda {

// A kernel running `plan` for `op` at `shape`. Each run copies the operands to the device (exactly,
// as the plan's device types), runs, copies the output back (exactly) and, when `detail` is not
// null, writes there what ran: for a GEMM the library, compute type, data types, the rule that
// chose them and the algorithm cuBLASLt's heuristic picked (id, tile, stages, split-K and its
// reduction scheme); for the cast the kernel, format and mode; for a convolution what
// make_convolution_kernel (conv_kernel.hpp) writes; for an op kernel the launchers, the element
// type and the arithmetic ("binary32", or "binary32 internally" and why). Throws
// kernels::CudaError when a CUDA, cuBLAS or cuDNN call fails, std::runtime_error when cuBLASLt
// has no algorithm for the GEMM (or cuDNN none for the convolution). `detail` must outlive the
// kernel.
ops::Kernel make_kernel(const ops::OpInfo& op, const ops::Shape& shape, const Plan& plan,
                        nlohmann::json* detail);

}  // namespace ampbench::backends::cuda
