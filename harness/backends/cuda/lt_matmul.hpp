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

  // Enqueues an FP8 GEMM with per-tensor scales (fp8-delayed, fp8-current; issue 19) on `stream`:
  // D = a_scale b_scale (A B^T), A (m x k) and B (n x k) row-major FP8 codes with K along the row
  // (as quant::recipe_product takes them), a_scale and b_scale device floats holding the decode
  // scales (cuBLASLt's A and B scale pointers), D m x n row-major binary32, accumulated in fp32
  // (CUBLAS_COMPUTE_32F). fast_accum sets CUBLASLT_MATMUL_DESC_FAST_ACCUM: the Tensor Cores'
  // partial sums are then not promoted to fp32 along K. Returns what ran, as run() does. Throws
  // std::invalid_argument for what why_no_fp8_gemm refuses, std::runtime_error when cuBLASLt has
  // no algorithm (no FP8 Tensor Cores before sm_89), kernels::CudaError when a call fails.
  nlohmann::json run_fp8(Fp8Type a_type, Fp8Type b_type, std::uint64_t m, std::uint64_t n,
                         std::uint64_t k, const void* a, const void* b, const float* a_scale,
                         const float* b_scale, float* d, bool fast_accum, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  kernels::DeviceBuffer<std::byte> workspace_;
};

}  // namespace ampbench::backends::cuda
