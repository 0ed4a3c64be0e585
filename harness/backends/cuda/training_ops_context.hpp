// What the files of the CUDA backend's training kernels share (training_ops.cpp,
// training_ops_cnn.cpp, training_ops_transformer.cpp): the state behind them and the conversions
// between element types and formats.
// Internal to the CUDA backend.
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "harness/backends/cuda/lt_matmul.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "kernels/cudnn_convolution.hpp"

namespace ampbench::backends::cuda {

struct CudaKernels::Context {
  // Shared with every array allocated on it (DeviceArray), which may outlive this context.
  SharedStream owned_stream;
  cudaStream_t stream = nullptr;  // owned_stream's
  LtMatmul matmul;
  // Created on the first convolution, bound to `stream`: the mlp needs no cuDNN.
  std::optional<kernels::CudnnHandle> cudnn;

  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const kernels::CudnnHandle& cudnn_handle() {
    if (!cudnn) cudnn.emplace(stream);
    return *cudnn;
  }
};

namespace training_ops_detail {

using cuda::device_type_of;
using cuda::dtype_of;
// The element type that stores results of format `f` (why_not_trainable has checked it exists).
kernels::DType dtype_of(const numeric::Format& f);

}  // namespace training_ops_detail
}  // namespace ampbench::backends::cuda
