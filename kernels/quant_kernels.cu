#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/quant_kernels.hpp"

namespace ampbench::kernels {
namespace {

namespace sm = numeric::scale_math;

constexpr unsigned kThreads = 256;  // a power of two: the reductions halve it
constexpr std::size_t kMaxBlocks = 65536;

struct Tiling {
  std::size_t rows, cols, block_rows, block_cols, tiles_per_row;

  __host__ __device__ std::size_t tile_of(std::size_t k) const {
    return (k / cols / block_rows) * tiles_per_row + (k % cols) / block_cols;
  }
};

// Each tile's amax (fmaxf of |x|, NaN ignored) and whether it holds a NaN: a block per tile,
// strided loads, a reduction in shared memory. The maximum is exact, so the order does not matter.
__global__ void tile_amax_kernel(const float* x, Tiling g, float* amax, std::uint8_t* has_nan) {
  __shared__ float max_of[kThreads];
  __shared__ unsigned nan_of[kThreads];
  const std::size_t t = blockIdx.x;
  const std::size_t r0 = (t / g.tiles_per_row) * g.block_rows;
  const std::size_t c0 = (t % g.tiles_per_row) * g.block_cols;
  float m = 0;
  unsigned nan = 0;
  for (std::size_t i = threadIdx.x; i < g.block_rows * g.block_cols; i += blockDim.x) {
    const float v = x[(r0 + i / g.block_cols) * g.cols + c0 + i % g.block_cols];
    m = sm::amax_step(m, v);
    nan |= v != v ? 1u : 0u;
  }
  max_of[threadIdx.x] = m;
  nan_of[threadIdx.x] = nan;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      max_of[threadIdx.x] = sm::amax_step(max_of[threadIdx.x], max_of[threadIdx.x + half]);
      nan_of[threadIdx.x] |= nan_of[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    amax[t] = max_of[0];
    has_nan[t] = static_cast<std::uint8_t>(nan_of[0]);
  }
}

// One block: the tensor's amax from the tiles' (NVFP4's tensor scales), then every tile's scale.
__global__ void tile_scale_kernel(sm::TileRule rule, numeric::Format element, const float* amax,
                                  const std::uint8_t* has_nan, std::size_t tiles, float given,
                                  sm::TileScale* scales, sm::Nvfp4Tensor* tensor) {
  __shared__ float max_of[kThreads];
  float m = 0;
  for (std::size_t i = threadIdx.x; i < tiles; i += blockDim.x) m = sm::amax_step(m, amax[i]);
  max_of[threadIdx.x] = m;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      max_of[threadIdx.x] = sm::amax_step(max_of[threadIdx.x], max_of[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const sm::Nvfp4Tensor nvfp4 = sm::nvfp4_tensor(max_of[0]);
  if (threadIdx.x == 0) *tensor = nvfp4;
  for (std::size_t i = threadIdx.x; i < tiles; i += blockDim.x) {
    scales[i] = sm::tile_scale(rule, element, amax[i], has_nan[i] != 0, given, nvfp4);
  }
}

// Every element's code: a grid-stride loop; element k draws number k of the stream.
__global__ void element_kernel(sm::TileRule rule, numeric::Format element, numeric::Rounding mode,
                               std::uint64_t seed, const float* x, Tiling g,
                               const sm::TileScale* scales, std::uint64_t* bits) {
  const bool stochastic = numeric::is_stochastic(mode);
  const std::size_t n = g.rows * g.cols;
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    const std::uint32_t random = stochastic ? numeric::stochastic_draw(seed, k) : 0u;
    bits[k] = sm::element_code(rule, element, mode, x[k], scales[g.tile_of(k)], random);
  }
}

}  // namespace

DeviceQuantized quantize_on_device(std::span<const float> x, const quant::Layout& layout,
                                   const numeric::Format& element, sm::TileRule rule, float given) {
  quant::detail::check_layout(x, layout);
  if (layout.mode != numeric::Rounding::nearest_even &&
      layout.mode != numeric::Rounding::stochastic_proportional) {
    throw std::invalid_argument(
        "quantize_on_device: the rounding must be nearest_even or stochastic_proportional");
  }
  if (rule == sm::TileRule::fp32_given) {
    if (!(given > 0 && std::isfinite(given))) {
      throw std::invalid_argument("quantize_on_device: the given scale " + std::to_string(given) +
                                  " is not a positive finite binary32");
    }
    if (layout.block_rows != layout.rows || layout.block_cols != layout.cols) {
      throw std::invalid_argument(
          "quantize_on_device: a given per-tensor scale needs one block: the whole tensor");
    }
  }
  numeric::Format saturating = rule == sm::TileRule::nvfp4 ? numeric::formats::e2m1 : element;
  saturating.overflow = numeric::Overflow::saturate;
  const Tiling g{layout.rows, layout.cols, layout.block_rows, layout.block_cols,
                 layout.cols / layout.block_cols};
  const std::size_t tiles = (layout.rows / layout.block_rows) * g.tiles_per_row;
  const std::size_t n = x.size();

  DeviceBuffer<float> d_x(n);
  DeviceBuffer<float> d_amax(tiles);
  DeviceBuffer<std::uint8_t> d_nan(tiles);
  DeviceBuffer<sm::TileScale> d_scales(tiles);
  DeviceBuffer<sm::Nvfp4Tensor> d_tensor(1);
  DeviceBuffer<std::uint64_t> d_bits(n);
  d_x.copy_from(x, nullptr);
  tile_amax_kernel<<<static_cast<unsigned>(tiles), kThreads>>>(d_x.data(), g, d_amax.data(),
                                                               d_nan.data());
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
  tile_scale_kernel<<<1, kThreads>>>(rule, saturating, d_amax.data(), d_nan.data(), tiles, given,
                                     d_scales.data(), d_tensor.data());
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
  const auto blocks = static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
  element_kernel<<<blocks, kThreads>>>(rule, saturating, layout.mode, layout.seed, d_x.data(), g,
                                       d_scales.data(), d_bits.data());
  AMPBENCH_CUDA_CHECK(cudaGetLastError());

  // The copies wait for the kernels (on the legacy default stream) and report a fault in them.
  DeviceQuantized q;
  q.bits.resize(n);
  d_bits.copy_to(q.bits, nullptr);
  std::vector<sm::TileScale> scales(tiles);
  d_scales.copy_to(scales, nullptr);
  q.tile_amax.resize(tiles);
  d_amax.copy_to(q.tile_amax, nullptr);
  std::vector<sm::Nvfp4Tensor> tensor(1);
  d_tensor.copy_to(tensor, nullptr);
  for (const sm::TileScale& s : scales) q.scale_bits.push_back(s.bits);
  if (rule == sm::TileRule::nvfp4) {
    q.global_scale = tensor[0].s_enc;
    q.global_decode = tensor[0].s_dec;
  }
  return q;
}

}  // namespace ampbench::kernels
