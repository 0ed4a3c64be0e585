// The 16x16 random Hadamard transform of the NVFP4 recipe's weight-gradient inputs (hadamard.hpp).
#include "harness/quant/hadamard.hpp"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>

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

// out_j = fl32((1/4) sum_i coefficient(i, j) in_i) over each run of 16; `signs_first`: the sign
// multiplies the input (forward, u D H) or the output (inverse, H D).
std::vector<float> apply(std::span<const float> in, std::size_t rows, std::size_t cols,
                         std::uint16_t signs, bool signs_first) {
  check_shape(in.size(), rows, cols);
  std::vector<float> out(in.size());
  for (std::size_t base = 0; base < in.size(); base += kHadamardSize) {
    for (std::size_t j = 0; j < kHadamardSize; ++j) {
      double sum = 0;
      for (std::size_t i = 0; i < kHadamardSize; ++i) {
        const double term = static_cast<double>(in[base + i]) * hadamard_entry(i, j);
        sum += signs_first ? term * sign_of(signs, i) : term;
      }
      if (!signs_first) sum *= sign_of(signs, j);
      out[base + j] = static_cast<float>(sum * 0.25);  // the scaling is exact; one rounding
    }
  }
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
