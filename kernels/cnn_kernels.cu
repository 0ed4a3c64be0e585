// Compiled with -fmad=false (kernels/CMakeLists.txt): harness/numeric/batch_norm_math.hpp rounds
// every multiply and add on its own, as the CPU backend's emulation does, and nvcc must not fuse
// them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "harness/numeric/batch_norm_math.hpp"
#include "kernels/cnn_kernels.hpp"
#include "kernels/cuda_check.hpp"

namespace ampbench::kernels {
namespace {

constexpr unsigned kWarpSize = 32;
constexpr unsigned kWarps = kReductionThreads / kWarpSize;
static_assert(kReductionThreads % kWarpSize == 0 && kWarps <= kWarpSize,
              "the block's warps must be whole and their sums fit in one warp");
// Blocks beyond this many take further channels or rows in a grid-stride loop.
constexpr std::size_t kMaxBlocks = 65535;
constexpr unsigned kElementwiseThreads = 256;

// Loads in binary32 and stores rounded once to the element type, to nearest even.
__device__ float widen(float x) {
  return x;
}
__device__ float widen(__half x) {
  return __half2float(x);
}
__device__ float widen(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <typename T>
__device__ T narrow(float x);
template <>
__device__ float narrow<float>(float x) {
  return x;
}
template <>
__device__ __half narrow<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_bfloat16 narrow<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The sum of `count` terms term(i), i = 0 .. count - 1, over the block, in the order the header
// documents: each thread adds its terms in order of i, then the partial sums are added as a tree
// within each warp (offsets 16, 8, 4, 2, 1) and, by the first warp, across the warps. Every thread
// of the block must call it (it synchronizes) and gets the sum. `shared` holds kWarps floats.
template <typename Term>
__device__ float block_sum(std::uint64_t count, Term term, float* shared) {
  float partial = 0.0f;
  for (std::uint64_t i = threadIdx.x; i < count; i += blockDim.x) partial += term(i);
  for (unsigned offset = kWarpSize / 2; offset > 0; offset /= 2) {
    partial += __shfl_down_sync(0xffffffffu, partial, offset);
  }
  const unsigned lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  __syncthreads();  // an earlier call's readers are done with `shared`
  if (lane == 0) shared[warp] = partial;
  __syncthreads();
  if (warp == 0) {
    partial = lane < kWarps ? shared[lane] : 0.0f;
    for (unsigned offset = kWarpSize / 2; offset > 0; offset /= 2) {
      partial += __shfl_down_sync(0xffffffffu, partial, offset);
    }
    if (lane == 0) shared[0] = partial;
  }
  __syncthreads();
  return shared[0];
}

// Element i (0 .. batch * spatial - 1) of channel c: sample i / spatial, position i % spatial.
struct ChannelIndex {
  std::uint64_t channels, spatial;
  __device__ std::uint64_t operator()(std::uint64_t c, std::uint64_t i) const {
    return ((i / spatial) * channels + c) * spatial + i % spatial;
  }
};

struct ChannelStatistics {
  float mean, rstd;
};

// A channel's mean and rstd in two passes, as the forward forms them.
template <typename T>
__device__ ChannelStatistics channel_statistics(const T* x, std::uint64_t c, std::uint64_t count,
                                                ChannelIndex at, float eps, float* shared) {
  ChannelStatistics s{};
  s.mean = train::divide_by_count(
      block_sum(
          count, [&](std::uint64_t i) { return widen(x[at(c, i)]); }, shared),
      count);
  const float squares = block_sum(
      count,
      [&](std::uint64_t i) {
        const float deviation = widen(x[at(c, i)]) - s.mean;
        return deviation * deviation;
      },
      shared);
  s.rstd = train::reciprocal_std(train::divide_by_count(squares, count), eps);
  return s;
}

template <typename T>
__global__ void __launch_bounds__(kReductionThreads)
    batch_norm_kernel(const T* x, const float* gamma, const float* beta, T* y, std::uint64_t batch,
                      std::uint64_t channels, std::uint64_t spatial, float eps) {
  __shared__ float shared[kWarps];
  const ChannelIndex at{channels, spatial};
  const std::uint64_t count = batch * spatial;
  for (std::uint64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const ChannelStatistics s = channel_statistics(x, c, count, at, eps, shared);
    for (std::uint64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const std::uint64_t e = at(c, i);
      y[e] = narrow<T>(train::batch_norm_element(widen(x[e]), s.mean, s.rstd, gamma[c], beta[c]));
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kReductionThreads)
    batch_norm_backward_kernel(const T* x, const T* dy, const float* gamma, T* dx, T* dgamma,
                               T* dbeta, std::uint64_t batch, std::uint64_t channels,
                               std::uint64_t spatial, float eps) {
  __shared__ float shared[kWarps];
  const ChannelIndex at{channels, spatial};
  const std::uint64_t count = batch * spatial;
  for (std::uint64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    const ChannelStatistics s = channel_statistics(x, c, count, at, eps, shared);
    const float sum_dy = block_sum(
        count, [&](std::uint64_t i) { return widen(dy[at(c, i)]); }, shared);
    const float sum_dy_deviation = block_sum(
        count,
        [&](std::uint64_t i) {
          const std::uint64_t e = at(c, i);
          return widen(dy[e]) * (widen(x[e]) - s.mean);
        },
        shared);
    if (threadIdx.x == 0) {
      dbeta[c] = narrow<T>(sum_dy);
      dgamma[c] = narrow<T>(train::batch_norm_dgamma(sum_dy_deviation, s.rstd));
    }
    const train::BatchNormBackwardScales scales =
        train::batch_norm_backward_scales(sum_dy, sum_dy_deviation, count, s.rstd, gamma[c]);
    for (std::uint64_t i = threadIdx.x; i < count; i += blockDim.x) {
      const std::uint64_t e = at(c, i);
      dx[e] = narrow<T>(train::batch_norm_dx_element(widen(dy[e]), widen(x[e]), s.mean, scales));
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kReductionThreads)
    reduce_mean_rows_kernel(const T* x, T* y, std::uint64_t rows, std::uint64_t cols) {
  __shared__ float shared[kWarps];
  for (std::uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const float sum = block_sum(
        cols, [&](std::uint64_t c) { return widen(row[c]); }, shared);
    if (threadIdx.x == 0) y[r] = narrow<T>(train::divide_by_count(sum, cols));
  }
}

template <typename T>
__global__ void pointwise_mean_rows_backward_kernel(const T* dy, T* dx, std::uint64_t rows,
                                                    std::uint64_t cols) {
  const std::uint64_t n = rows * cols;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dx[i] = narrow<T>(train::divide_by_count(widen(dy[i / cols]), cols));
  }
}

unsigned reduction_blocks(std::size_t reductions) {
  return static_cast<unsigned>(std::min(reductions, kMaxBlocks));
}

unsigned elementwise_blocks(std::size_t n) {
  return static_cast<unsigned>(
      std::min((n + kElementwiseThreads - 1) / kElementwiseThreads, kMaxBlocks));
}

// Refuses a null tensor: every pointer a launcher takes is needed.
void require_data(std::initializer_list<const void*> pointers, const char* launcher) {
  for (const void* p : pointers) {
    if (p == nullptr) throw std::invalid_argument(std::string(launcher) + ": a null tensor");
  }
}

// Calls launch(T{}) with the element type of `type` (a value of it, for deduction only).
template <typename Launch>
void with_element_type(DType type, Launch launch) {
  switch (type) {
    case DType::f32: launch(float{}); return;
    case DType::f16: launch(__half{}); return;
    case DType::bf16: launch(__nv_bfloat16{}); return;
  }
  throw std::invalid_argument("unknown element type");
}

}  // namespace

void batch_norm(DType type, const void* x, const float* gamma, const float* beta, void* y,
                std::size_t batch, std::size_t channels, std::size_t spatial, float eps,
                cudaStream_t stream) {
  if (batch * spatial == 0) throw std::invalid_argument("batch_norm: a channel of no values");
  if (channels == 0) return;
  require_data({x, gamma, beta, y}, "batch_norm");
  with_element_type(type, [&](auto element) {
    using T = decltype(element);
    batch_norm_kernel<T><<<reduction_blocks(channels), kReductionThreads, 0, stream>>>(
        static_cast<const T*>(x), gamma, beta, static_cast<T*>(y), batch, channels, spatial, eps);
  });
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_backward(DType type, const void* x, const void* dy, const float* gamma, void* dx,
                         void* dgamma, void* dbeta, std::size_t batch, std::size_t channels,
                         std::size_t spatial, float eps, cudaStream_t stream) {
  if (batch * spatial == 0) {
    throw std::invalid_argument("batch_norm_backward: a channel of no values");
  }
  if (channels == 0) return;
  require_data({x, dy, gamma, dx, dgamma, dbeta}, "batch_norm_backward");
  with_element_type(type, [&](auto element) {
    using T = decltype(element);
    batch_norm_backward_kernel<T><<<reduction_blocks(channels), kReductionThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), gamma, static_cast<T*>(dx),
        static_cast<T*>(dgamma), static_cast<T*>(dbeta), batch, channels, spatial, eps);
  });
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void mean_rows(DType type, const void* x, void* y, std::size_t rows, std::size_t cols,
               cudaStream_t stream) {
  if (cols == 0) throw std::invalid_argument("mean_rows: rows of no columns");
  if (rows == 0) return;
  require_data({x, y}, "mean_rows");
  with_element_type(type, [&](auto element) {
    using T = decltype(element);
    reduce_mean_rows_kernel<T><<<reduction_blocks(rows), kReductionThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, cols);
  });
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

void mean_rows_backward(DType type, const void* dy, void* dx, std::size_t rows, std::size_t cols,
                        cudaStream_t stream) {
  if (cols == 0) throw std::invalid_argument("mean_rows_backward: rows of no columns");
  if (rows == 0) return;
  require_data({dy, dx}, "mean_rows_backward");
  with_element_type(type, [&](auto element) {
    using T = decltype(element);
    pointwise_mean_rows_backward_kernel<T>
        <<<elementwise_blocks(rows * cols), kElementwiseThreads, 0, stream>>>(
            static_cast<const T*>(dy), static_cast<T*>(dx), rows, cols);
  });
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ampbench::kernels
