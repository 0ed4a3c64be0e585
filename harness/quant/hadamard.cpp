// The 16x16 random Hadamard transform of the NVFP4 recipe's weight-gradient inputs (hadamard.hpp).
#include "harness/quant/hadamard.hpp"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>

#include "harness/numeric/clones.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::quant {
namespace {

// d_i as +-1.
double sign_of(std::uint16_t signs, std::size_t i) {
  return ((signs >> i) & 1u) != 0 ? -1.0 : 1.0;
}

void check_shape(std::size_t size, std::size_t rows, std::size_t cols) {
  if (size != rows * cols) {
    throw std::invalid_argument(fmt::format("{} values for a {}x{} tensor", size, rows, cols));
  }
  if (cols % kHadamardSize != 0) {
    throw std::invalid_argument(fmt::format(
        "the 16-wide Hadamard transform does not divide the tensor's {} columns", cols));
  }
}

// out_j = fl32((1/4) sum_i coefficient(i, j) in_i) over each run of 16, each sum in binary64 in
// the order of i; `signs_first`: the sign multiplies the input (forward, u D H) or the output
// (inverse, H D). The coefficients are +-1, so every term is the input itself or its negation, as
// in_i * H_ij * d_i computes it; the sixteen sums of a run go through the vector lanes together.
// Compiled for each x86-64 level (numeric/clones.hpp).
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void apply_runs(const float* in, float* out, std::size_t runs, std::uint16_t signs,
                bool signs_first) {
  double coefficient[kHadamardSize][kHadamardSize];
  double output_sign[kHadamardSize];
  for (std::size_t i = 0; i < kHadamardSize; ++i) {
    output_sign[i] = signs_first ? 1.0 : sign_of(signs, i);
    for (std::size_t j = 0; j < kHadamardSize; ++j) {
      coefficient[i][j] = hadamard_entry(i, j) * (signs_first ? sign_of(signs, i) : 1.0);
    }
  }
  for (std::size_t r = 0; r < runs; ++r) {
    const float* x = in + r * kHadamardSize;
    double sum[kHadamardSize] = {};
    for (std::size_t i = 0; i < kHadamardSize; ++i) {
      const double v = x[i];
      for (std::size_t j = 0; j < kHadamardSize; ++j) sum[j] += v * coefficient[i][j];
    }
    for (std::size_t j = 0; j < kHadamardSize; ++j) {
      // the scaling is exact; one rounding
      out[r * kHadamardSize + j] = static_cast<float>(sum[j] * output_sign[j] * 0.25);
    }
  }
}

std::vector<float> apply(std::span<const float> in, std::size_t rows, std::size_t cols,
                         std::uint16_t signs, bool signs_first) {
  check_shape(in.size(), rows, cols);
  std::vector<float> out(in.size());
  apply_runs(in.data(), out.data(), in.size() / kHadamardSize, signs, signs_first);
  return out;
}

}  // namespace

std::uint16_t hadamard_signs(std::uint64_t seed) {
  return static_cast<std::uint16_t>(numeric::splitmix64(seed, 0) & 0xffffu);
}

std::uint16_t hadamard_signs(const std::optional<std::uint64_t>& seed) {
  return seed ? hadamard_signs(*seed) : kTeWgradSigns;
}

int hadamard_entry(std::size_t i, std::size_t j) {
  return (std::popcount(static_cast<unsigned>(i & j)) & 1) != 0 ? -1 : 1;
}

std::vector<float> hadamard_transform(std::span<const float> x, std::size_t rows, std::size_t cols,
                                      std::uint16_t signs) {
  return apply(x, rows, cols, signs, true);
}

std::vector<float> hadamard_inverse(std::span<const float> y, std::size_t rows, std::size_t cols,
                                    std::uint16_t signs) {
  return apply(y, rows, cols, signs, false);
}

}  // namespace ampbench::quant
