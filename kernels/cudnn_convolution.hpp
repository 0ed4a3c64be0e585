// cuDNN convolutions: forward, backward data and backward filter of a 2-D NCHW convolution (with
// stride, padding, dilation and groups) in fp32, fp16 or bf16, with the compute type and the math
// type (cudnnMathType_t) chosen by the caller, through cuDNN's legacy convolution API (deprecated
// in cuDNN 9 but present; PyTorch's Conv_v7.cpp path). docs/cudnn-convolution.md.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn_graph.h>

#include <cstddef>
#include <string>

#include "kernels/convolution_shape.hpp"
#include "kernels/op_kernels.hpp"

namespace ampbench::kernels {

// A cuDNN handle bound to a stream: cudnnCreate in the constructor (a device must exist),
// cudnnDestroy in the destructor (logged, never thrown).
class CudnnHandle {
 public:
  explicit CudnnHandle(cudaStream_t stream = nullptr);
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;

  cudnnHandle_t get() const { return handle_; }
  cudaStream_t stream() const { return stream_; }

 private:
  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

struct ConvolutionConfig {
  ConvolutionPass pass = ConvolutionPass::forward;
  ConvolutionShape shape;
  DType data = DType::f32;     // of x, w, y and their gradients
  DType compute = DType::f32;  // the convolution's compute type: f32 (CUDNN_DATA_FLOAT), or f16
                               // with f16 data (cuDNN's TRUE_HALF_CONFIG)
  ConvolutionMath math = ConvolutionMath::default_math;  // what the caller allows
  std::size_t max_workspace_bytes = std::size_t{256} << 20;
};

// What ran. The algorithm is the first of cuDNN's heuristic list (cudnnGetConvolution*
// Algorithm_v7, ordered by expected speed; no timing, so the choice repeats on the same device,
// cuDNN and shapes) that succeeded, whose math type the requested one permits (math_permits) and
// whose workspace fits; it runs with the math type of that entry, as PyTorch sets it.
struct ConvolutionRun {
  int algorithm = 0;           // the cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t value
  std::string algorithm_name;  // its enumerator, e.g. "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM"
  int heuristic_rank = 0;      // its position in the heuristic's list, 0 first
  ConvolutionMath requested_math = ConvolutionMath::default_math;
  ConvolutionMath math = ConvolutionMath::default_math;  // the entry's, which ran
  // The entry's math type is a Tensor Core one (tensor_op or tensor_op_allow_conversion). A
  // default-math entry may still use TF32 Tensor Cores for fp32 data on sm_80+: cuDNN does not say.
  bool tensor_op_math = false;
  bool deterministic = false;  // cuDNN's cudnnDeterminism_t for the entry
  std::size_t workspace_bytes = 0;
};

// Runs one pass on device memory, synchronously on the handle's stream: forward y = conv(x, w)
// with (first, second, out) = (x, w, y); backward_data (dy, w, dx); backward_filter (x, dy, dw):
// the operand order of harness/ops/convolution.hpp. All packed NCHW of `config.data`. alpha 1,
// beta 0: the output is overwritten. Throws CudaError when a call fails, std::runtime_error when
// no algorithm of the heuristic's list qualifies (naming what it offered), std::logic_error when
// cuDNN's output size differs from config.shape.y.
ConvolutionRun run_convolution(const CudnnHandle& handle, const ConvolutionConfig& config,
                               const void* first, const void* second, void* out);

}  // namespace ampbench::kernels
