#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "harness/numeric/rounding.hpp"
#include "kernels/bench/bench_device.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/rounding_kernels.cuh"

namespace ampbench::kernels::bench {
namespace {

template <typename T>
__global__ void fill_kernel(T* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::uint64_t bits = numeric::splitmix64(seed, i) >> 40;  // 24 bits
    const float x = static_cast<float>(bits) * 0x1p-23F - 1.0F;
    if constexpr (std::is_same_v<T, float>) {
      data[i] = x;
    } else if constexpr (std::is_same_v<T, __half>) {
      data[i] = __float2half_rn(x);
    } else {
      data[i] = __float2bfloat16_rn(x);
    }
  }
}

constexpr unsigned kFillThreads = 256;
constexpr unsigned kFillBlocks = 4096;  // the grid-stride loop covers the rest

template <typename T>
void fill(void* data, std::size_t n, std::uint64_t seed) {
  fill_kernel<<<kFillBlocks, kFillThreads>>>(static_cast<T*>(data), n, seed);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fill_uniform(DType type, void* data, std::size_t n, std::uint64_t seed) {
  switch (type) {
    case DType::f32: return fill<float>(data, n, seed);
    case DType::f16: return fill<__half>(data, n, seed);
    case DType::bf16: return fill<__nv_bfloat16>(data, n, seed);
  }
  throw std::invalid_argument("fill_uniform: unknown element type");
}

void launch_round(const numeric::Format& format, numeric::Rounding mode, const float* in,
                  float* out, std::size_t n) {
  constexpr unsigned kThreads = 256;
  constexpr std::size_t kMaxBlocks = 65536;
  const auto blocks = static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
  round_kernel<<<blocks, kThreads>>>(format, mode, 42, 0, in, nullptr, out, n);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ampbench::kernels::bench
