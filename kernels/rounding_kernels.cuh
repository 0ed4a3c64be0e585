// Rounding of float arrays to any Format on the GPU, with the host's reference code
// (harness/numeric/rounding.hpp): the kernel calls the same round_to, so the bits agree by
// construction, and kernels/test/ checks that they do.
#pragma once

#include <cstdint>
#include <span>

#include "harness/numeric/options.hpp"

namespace ampbench::kernels {

// Rounds every element of `in` to options.format in options.mode on the current device, writing
// each result's bit pattern (low total_bits() bits) and value. Element i uses the stochastic draw
// number first_index + i of options.seed, as numeric::round_array does. Synchronous: allocates,
// copies, launches and frees. Throws std::invalid_argument when the sizes differ or the format
// does not fit binary32 (as round_array), CudaError when a CUDA call fails.
void round_on_device(const numeric::RoundingOptions& options, std::span<const float> in,
                     std::span<std::uint64_t> bits, std::span<float> values,
                     std::uint64_t first_index = 0);

#if defined(__CUDACC__)
// The kernel itself, for CUDA code that manages its own memory and stream: a grid-stride loop over
// n elements; bits and values may each be null.
__global__ void round_kernel(numeric::Format format, numeric::Rounding mode, std::uint64_t seed,
                             std::uint64_t first_index, const float* in, std::uint64_t* bits,
                             float* values, std::size_t n);
#endif

}  // namespace ampbench::kernels
