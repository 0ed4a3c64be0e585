// The CUDA backend's kernels for the audit: an ops::Kernel that runs a plan (plan.hpp) on the
// current device, GEMMs through cuBLASLt, the cast through kernels::round_kernel, the
// convolutions through cuDNN and the other ops through the backend's own kernels
// (kernels/op_kernels.hpp). Built only with the CUDA toolkit; running needs a device
// (kernels::probe_device says whether there is one).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/catalog.hpp"
#include "kernels/dtype.hpp"

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

// ---- the backend's own op kernels, the one launch the audit and the training ops share -------

// The device memory an op kernel reads, in the catalog's operand order: each operand's values in
// the type op_kernel_operand_types gives it (null for an absent optional operand: an activation's
// bias), and the int64 indices of an index operand (class targets).
struct OpKernelOperands {
  std::vector<const void*> value;
  std::vector<const std::int64_t*> index;
  const void* values(std::size_t i) const { return value.at(i); }
  const std::int64_t* indices(std::size_t i) const { return index.at(i); }
};

// The device type of each operand of an op kernel whose element type is `type`: `type`, but
// binary32 for batch norm's weight and bias, which the kernels take in binary32 (autocast's fp32
// weight, or narrower values widened exactly).
std::vector<DeviceType> op_kernel_operand_types(const ops::OpInfo& op, const ops::Shape& shape,
                                                DeviceType type);

// Enqueues the launchers of `op` at `shape` (plan.hpp's op_kernel_launchers names them) on
// `stream`, in element type `type`, writing output_shape(op, shape)'s elements to `out`. Waits
// for the stream where a launcher's scratch memory is freed before it returns (the loss, the
// statistics of the norms' backward ops). std::logic_error for an op without an op kernel.
void launch_op_kernel(ops::Op op, const ops::Shape& shape, kernels::DType type,
                      const OpKernelOperands& operands, void* out, cudaStream_t stream);

}  // namespace ampbench::backends::cuda
