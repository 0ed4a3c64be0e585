#include "kernels/cuda_check.hpp"
#include "kernels/test/trace_probe_kernels.hpp"

namespace ampbench::kernels::test {
namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kBlocks = 64;  // the grid-stride loops cover any n

}  // namespace

__global__ void probe_fill(float* data, std::size_t n, float value) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] = value;
  }
}

__global__ void probe_scale(float* data, std::size_t n, float factor) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] *= factor;
  }
}

void launch_probe_fill(float* data, std::size_t n, float value, cudaStream_t stream) {
  probe_fill<<<kBlocks, kThreadsPerBlock, 0, stream>>>(data, n, value);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void launch_probe_scale(float* data, std::size_t n, float factor, cudaStream_t stream) {
  probe_scale<<<kBlocks, kThreadsPerBlock, 0, stream>>>(data, n, factor);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ampbench::kernels::test
