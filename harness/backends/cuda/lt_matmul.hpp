// One cuBLASLt matrix product on device memory, as the audit and the GPU training ops run it: a
// GemmPlan's compute and data types, a column-major call (plan.hpp's GemmCall), an optional bias
// epilogue, on a stream, with the algorithm cuBLASLt's heuristic ranks first. Needs the CUDA
// toolkit; running needs a device.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "harness/backends/cuda/plan.hpp"
#include "harness/backends/cuda/scaled_gemm_plan.hpp"
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

  // Enqueues a scaled GEMM (issue 19) on `stream`: D = alpha (A B^T) with each operand's element
  // codes and scales on the device as pack_operand lays them out (scaled_gemm_plan.hpp),
  // accumulated in fp32 (CUBLAS_COMPUTE_32F); alpha carries NVFP4's tensor decode scales. D is m x
  // n, row-major: binary32 values, or (`out.fp8`) FP8 codes of fl(d_scale * result) with d_scale a
  // device float, and then, when `out.amax` is not null, the device float there set to the largest
  // |result| before d_scale (cuBLASLt computes D's amax for FP8 outputs only). fast_accum sets
  // CUBLASLT_MATMUL_DESC_FAST_ACCUM: Hopper's partial sums are then not promoted to fp32 along K.
  // Returns what ran (library, types, scale modes, the algorithm). Throws std::invalid_argument
  // for what why_no_scaled_gemm refuses on this device, std::runtime_error when cuBLASLt has no
  // algorithm, kernels::CudaError when a call fails.
  struct DeviceOperand {
    ScaledShape shape;
    const void* codes = nullptr;
    const void* scales = nullptr;
  };
  struct Output {
    void* d = nullptr;
    std::optional<ScaledElement> fp8;  // D's FP8 type; binary32 when absent
    const float* d_scale = nullptr;    // with fp8
    float* amax = nullptr;             // with fp8, optional
  };
  nlohmann::json run_scaled(const DeviceOperand& a, const DeviceOperand& b, float alpha,
                            const Output& out, bool fast_accum, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  kernels::DeviceBuffer<std::byte> workspace_;
};

}  // namespace ampbench::backends::cuda
