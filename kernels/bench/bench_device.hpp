// The device work of the GPU benchmarks that needs nvcc, behind plain C++ declarations so that the
// benchmark program itself is ordinary C++.
#pragma once

#include <cstddef>
#include <cstdint>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/op_kernels.hpp"

namespace ampbench::kernels::bench {

// Fills n elements of `type` at data with values in [-1, 1) from a hash of the index and seed:
// finite, and never all zeros (a GEMM of zeros draws less power and may run faster). Enqueued on
// the default stream.
void fill_uniform(DType type, void* data, std::size_t n, std::uint64_t seed);

// round_kernel over n elements, values only (no bit patterns), launched as round_on_device
// launches it; on the default stream.
void launch_round(const numeric::Format& format, numeric::Rounding mode, const float* in,
                  float* out, std::size_t n);

}  // namespace ampbench::kernels::bench
