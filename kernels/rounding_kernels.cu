#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "harness/numeric/encode_fast.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/rounding_kernels.cuh"

namespace ampbench::kernels {
namespace {

// binary64 -> binary32 for a value that binary32 holds (the format fits it); a NaN keeps its sign
// and the top of its payload, as x86's cvtsd2ss.
__device__ float narrow(double x) {
  const auto u = static_cast<unsigned long long>(__double_as_longlong(x));
  if ((u & 0x7FFFFFFFFFFFFFFFull) <= 0x7FF0000000000000ull) return static_cast<float>(x);
  const auto sign = static_cast<unsigned>(u >> 63) << 31;
  const auto payload = static_cast<unsigned>((u >> 29) & 0x007FFFFFull);
  return __uint_as_float(sign | 0x7FC00000u | payload);
}

constexpr int kThreadsPerBlock = 256;
constexpr std::size_t kMaxBlocks = 65536;  // the grid-stride loop covers the rest

// fp16 and bf16 to nearest even or stochastically, with the host's branch-free encoder in 32-bit
// integers (numeric::detail::encode_one, the vectorised host path's): round_to does everything in
// binary64 and 64-bit integers, which made the kernel compute-bound at a sixth of the copy's
// bandwidth on an H200. A NaN goes the general way (its payload as round_to gives it); every other
// value's binary32 is exact from its pattern.
template <const numeric::Format& F, bool Stochastic, bool Saturate>
__device__ void round_one_fast(std::uint32_t random, float x, std::uint32_t& pattern,
                               float& value) {
  constexpr numeric::Format kFormat = F;                   // a value: F itself is a host variable
  if ((__float_as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN
    const numeric::Rounded r = numeric::round_to(
        kFormat,
        Stochastic ? numeric::Rounding::stochastic_proportional : numeric::Rounding::nearest_even,
        numeric::detail::widen(x), random);
    pattern = static_cast<std::uint32_t>(r.bits);
    value = narrow(r.value);
    return;
  }
  pattern = numeric::detail::encode_one<F, Stochastic, Saturate>(__float_as_uint(x), random);
  if constexpr (F.exponent_bits() == 8) {
    value = __uint_as_float(pattern << 16);  // bf16: binary32's top half
  } else {
    value = __half2float(__ushort_as_half(static_cast<unsigned short>(pattern)));
  }
}

__device__ bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Four elements per thread and iteration, through 16-byte loads and stores where every array is
// 16-byte aligned: a thread of the one-element loop has 4 bytes in flight, too few for the
// bandwidth of HBM3e (Little's law: an H200 needs some 25 KB in flight per multiprocessor, 2048
// threads with 4 bytes each hold 8 KB). The last n % 4 elements, and arrays that are not aligned,
// go one element per thread.
template <const numeric::Format& F, bool Stochastic, bool Saturate>
__device__ void round_fast(std::uint64_t seed, std::uint64_t first_index, const float* in,
                           std::uint64_t* bits, float* values, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t scalar_from = 0;
  if (aligned16(in) && (bits == nullptr || aligned16(bits)) &&
      (values == nullptr || aligned16(values))) {
    const std::size_t groups = n / 4;
    for (std::size_t g = thread; g < groups; g += stride) {
      const float4 x = reinterpret_cast<const float4*>(in)[g];
      const std::uint64_t index = first_index + 4 * g;
      const auto draw = [&](std::uint64_t k) {
        return Stochastic ? numeric::stochastic_draw(seed, index + k) : 0u;
      };
      std::uint32_t p0, p1, p2, p3;
      float4 v;
      round_one_fast<F, Stochastic, Saturate>(draw(0), x.x, p0, v.x);
      round_one_fast<F, Stochastic, Saturate>(draw(1), x.y, p1, v.y);
      round_one_fast<F, Stochastic, Saturate>(draw(2), x.z, p2, v.z);
      round_one_fast<F, Stochastic, Saturate>(draw(3), x.w, p3, v.w);
      if (bits != nullptr) {
        reinterpret_cast<ulonglong2*>(bits)[2 * g] = {p0, p1};
        reinterpret_cast<ulonglong2*>(bits)[2 * g + 1] = {p2, p3};
      }
      if (values != nullptr) reinterpret_cast<float4*>(values)[g] = v;
    }
    scalar_from = groups * 4;
  }
  for (std::size_t i = scalar_from + thread; i < n; i += stride) {
    std::uint32_t pattern;
    float value;
    const std::uint32_t random = Stochastic ? numeric::stochastic_draw(seed, first_index + i) : 0u;
    round_one_fast<F, Stochastic, Saturate>(random, in[i], pattern, value);
    if (bits != nullptr) bits[i] = pattern;
    if (values != nullptr) values[i] = value;
  }
}

template <const numeric::Format& F>
__device__ bool try_round_fast(const numeric::Format& format, numeric::Rounding mode,
                               std::uint64_t seed, std::uint64_t first_index, const float* in,
                               std::uint64_t* bits, float* values, std::size_t n) {
  constexpr numeric::Format kFormat = F;
  if (!numeric::same_values(format, kFormat)) return false;
  const bool saturate = format.overflow == numeric::Overflow::saturate;
  if (mode == numeric::Rounding::nearest_even) {
    saturate ? round_fast<F, false, true>(seed, first_index, in, bits, values, n)
             : round_fast<F, false, false>(seed, first_index, in, bits, values, n);
    return true;
  }
  if (mode == numeric::Rounding::stochastic_proportional) {
    saturate ? round_fast<F, true, true>(seed, first_index, in, bits, values, n)
             : round_fast<F, true, false>(seed, first_index, in, bits, values, n);
    return true;
  }
  return false;
}

}  // namespace

__global__ void round_kernel(numeric::Format format, numeric::Rounding mode, std::uint64_t seed,
                             std::uint64_t first_index, const float* in, std::uint64_t* bits,
                             float* values, std::size_t n) {
  if (try_round_fast<numeric::formats::bf16>(format, mode, seed, first_index, in, bits, values,
                                             n) ||
      try_round_fast<numeric::formats::fp16>(format, mode, seed, first_index, in, bits, values,
                                             n)) {
    return;
  }
  const bool stochastic = numeric::is_stochastic(mode);
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::uint32_t random = stochastic ? numeric::stochastic_draw(seed, first_index + i) : 0u;
    const numeric::Rounded r =
        numeric::round_to(format, mode, numeric::detail::widen(in[i]), random);
    if (bits != nullptr) bits[i] = r.bits;
    if (values != nullptr) values[i] = narrow(r.value);
  }
}

void round_on_device(const numeric::RoundingOptions& options, std::span<const float> in,
                     std::span<std::uint64_t> bits, std::span<float> values,
                     std::uint64_t first_index) {
  if (bits.size() != in.size() || values.size() != in.size()) {
    throw std::invalid_argument("round_on_device: input has " + std::to_string(in.size()) +
                                " elements but bits has " + std::to_string(bits.size()) +
                                " and values " + std::to_string(values.size()));
  }
  numeric::RoundingOptions checked = options;
  checked.container = numeric::Container::binary32;
  if (const numeric::Validation v = numeric::validate(checked); !v.ok()) {
    throw std::invalid_argument("round_on_device: " + v.errors.front());
  }
  const std::size_t n = in.size();
  if (n == 0) return;

  DeviceBuffer<float> d_in(n);
  DeviceBuffer<std::uint64_t> d_bits(n);
  DeviceBuffer<float> d_values(n);
  d_in.copy_from(in, nullptr);
  const auto blocks =
      static_cast<unsigned>(std::min((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
  round_kernel<<<blocks, kThreadsPerBlock>>>(options.format, options.mode, options.seed,
                                             first_index, d_in.data(), d_bits.data(),
                                             d_values.data(), n);
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
  // cudaMemcpy waits for the kernel and reports a fault in it.
  d_bits.copy_to(bits, nullptr);
  d_values.copy_to(values, nullptr);
}

}  // namespace ampbench::kernels
