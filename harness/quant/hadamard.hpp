// The 16x16 random Hadamard transform (RHT) of NVIDIA's NVFP4 training recipe, applied to the two
// inputs of the weight-gradient GEMM dW = X^T dY along its reduction dimension (the tokens) before
// they are quantized, so that a block's outlier is spread over the block (docs/scaling.md).
//
// Convention, as Transformer Engine has it (transformer_engine/pytorch/tensor/nvfp4_tensor.py:
// get_hadamard_matrix, get_wgrad_sign_vector, get_rht_matrix; the reference quantizer's _apply_rht
// in transformer_engine/pytorch/custom_recipes/quantization_nvfp4.py): H is the 16x16 Sylvester
// Hadamard matrix, H[i][j] = (-1)^popcount(i & j) (symmetric, H H^T = 16 I); D = diag(d) a ±1
// diagonal; every run u of 16 consecutive elements along K becomes the row vector u (D H) / 4,
// that is y_j = (1/4) sum_i d_i H[i][j] u_i. (D H / 4) is orthogonal, so applying it to both
// operands along K leaves X^T dY unchanged in exact arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ampbench::quant {

inline constexpr std::size_t kHadamardSize = 16;

// Transformer Engine's fixed sign vector for the weight-gradient inputs (get_wgrad_sign_vector:
// +1 +1 +1 -1 +1 -1 -1 -1 -1 -1 -1 +1 -1 +1 -1 -1) as a mask: bit i set when d_i = -1 (TE's own
// get_sign_from_vector encoding).
inline constexpr std::uint16_t kTeWgradSigns = 0xd7e8;

// A seeded random sign vector: bit i of the low 16 bits of splitmix64 draw 0 of the seed.
std::uint16_t hadamard_signs(std::uint64_t seed);

// The signs a recipe uses: drawn from the seed, or TE's fixed vector without one.
std::uint16_t hadamard_signs(const std::optional<std::uint64_t>& seed);

// H[i][j] = (-1)^popcount(i & j), i, j < 16: the unnormalized Sylvester Hadamard matrix.
int hadamard_entry(std::size_t i, std::size_t j);

// y = u (D H) / 4 on every run of 16 consecutive elements of each row of a row-major rows x cols
// tensor; cols must be a multiple of 16 (std::invalid_argument naming the columns otherwise).
// Each output is the binary64 sum of its 16 terms ±u_i, times 1/4, rounded once to binary32
// (nearest-even): the sum is exact whenever the block's nonzero inputs lie within 25 binades of
// each other (24-bit significands, 4 bits of growth, binary64's 53), so the output is then the
// correctly rounded transform.
std::vector<float> hadamard_transform(std::span<const float> x, std::size_t rows, std::size_t cols,
                                      std::uint16_t signs);
// The inverse (the transpose, (D H / 4)^T = H D / 4): u_i = (1/4) d_i sum_j H[i][j] y_j, rounded
// the same way.
std::vector<float> hadamard_inverse(std::span<const float> y, std::size_t rows, std::size_t cols,
                                    std::uint16_t signs);

}  // namespace ampbench::quant
