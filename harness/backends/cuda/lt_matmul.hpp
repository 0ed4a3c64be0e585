// One cuBLASLt matrix product on device memory, as the audit and the GPU training ops run it: a
// GemmPlan's compute and data types, a column-major call (plan.hpp's GemmCall), an optional bias
// epilogue, on a stream, with the algorithm cuBLASLt's heuristic ranks first. Needs the CUDA
// toolkit; running needs a device.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <nlohmann/json.hpp>

#include "harness/backends/cuda/plan.hpp"
#include "kernels/device_buffer.hpp"

namespace ampbench::backends::cuda {

// Owns a cuBLASLt handle and a workspace; a product may be enqueued on any stream, one at a time
// (the workspace is shared).
class LtMatmul {
 public:
  LtMatmul();
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Enqueues D = op(A) op(B) (+ bias, one value per row of the column-major D, of the plan's
  // output type, when `bias` is not null) on `stream`, and returns what ran: library, compute
  // type, data types, the plan's rule and the algorithm (id, tile, stages, split-K, reduction,
  // workspace). Throws kernels::CudaError when a call fails, std::runtime_error when cuBLASLt has
  // no algorithm for the product.
  nlohmann::json run(const GemmPlan& plan, const GemmCall& call, const void* a, const void* b,
                     void* d, const void* bias, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  kernels::DeviceBuffer<std::byte> workspace_;
};

}  // namespace ampbench::backends::cuda
