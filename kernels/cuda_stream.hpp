// An owned CUDA stream that does not synchronise with the legacy default stream:
// cudaStreamCreateWithFlags(cudaStreamNonBlocking) in the constructor, cudaStreamDestroy (logged,
// never thrown) in the destructor.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cuda_check.hpp"

namespace ampbench::kernels {

class CudaStream {
 public:
  CudaStream() { AMPBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() { AMPBENCH_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_)); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace ampbench::kernels
