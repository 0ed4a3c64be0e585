// A recipe's GEMM (issue 19, docs/scaling.md "The recipe GEMM"): C = A B^T with A (m x k) and B
// (n x k) both held with K, the reduction dimension, along the row; each quantized as the recipe
// quantizes its role for this GEMM, the element codes multiplied on a Tensor Core model in chunks
// along K, and each chunk's partial product scaled and added in fp32, as Hopper FP8 kernels promote
// it (DeepSeek-V3's N_C = 128, DeepGEMM). Nothing here judges the result: the audit does
// (harness/audit/recipe_audit.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/numeric/mma.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::quant {

// The roles of a GEMM's operands A and B: fprop y = x w^T (x, w), dgrad dx = dy w (dy, w^T),
// wgrad dw = dy^T x (dy^T, x^T). The caller gives each with K along the row (transposed where
// these formulas say so), so a role's 1xN tiles always run along K.
std::pair<Role, Role> gemm_roles(Gemm g);

// How an operand's tensor is cut into its recipe's tiles: the whole tensor, 1 x block along K, or
// block x block; rounding with the operand's mode and stochastic stream `seed`.
Layout operand_layout(const OperandRecipe& o, std::size_t rows, std::size_t cols,
                      std::uint64_t seed);

// An operand quantized as `recipe` quantizes `role` for `gemm`.
struct QuantizedOperand {
  Role role = Role::x;
  bool transformed = false;  // the 16x16 random Hadamard transform was applied along K first
  std::vector<float> input;  // what the quantizer saw: the operand, or its transform
  Quantized q;
};
// x: rows x cols, row-major, K along the row. A delayed-scaling operand is quantized with
// `delayed_scale` (its fp32 scale, which the caller's DelayedScaling state gives; required for
// it, std::invalid_argument without one); the others choose their scales themselves. Throws
// std::invalid_argument (a block that does not divide a dimension, a transform on a K that is
// not a multiple of 16), naming the dimension.
QuantizedOperand quantize_operand(const Recipe& recipe, Role role, Gemm gemm,
                                  std::span<const float> x, std::size_t rows, std::size_t cols,
                                  std::uint64_t seed,
                                  std::optional<float> delayed_scale = std::nullopt);

// How the recipe's scales enter the product.
enum class ScaledProduct : std::uint8_t {
  promoted,  // each chunk's partial scaled and added in fp32 after the MMA (Hopper; any scales)
  mxf8f6f4,  // Blackwell tcgen05.mma kind::mxf8f6f4: UE8M0 scales per 32 inside the MMA, K = 32
  mxf4,      // kind::mxf4: e2m1, UE8M0 scales per 32 inside the MMA, K = 64
  mxf4nvf4,  // kind::mxf4nvf4: e2m1, UE4M3 scales per 16 inside the MMA, K = 64; the two fp32
             // tensor scales multiply the result (cuBLASLt's alpha)
};

// The Tensor Core arithmetic of a recipe GEMM: the model of A's element format, and B's element
// format (a mixed e4m3 x e5m2 GEMM splits each operand in its own format, mma.hpp), and how the
// scales enter (block-scaled instructions: numeric/mma_block_scale.hpp).
struct RecipeMma {
  numeric::MmaModel model;
  numeric::Format a_format;
  numeric::Format b_format;
  std::string name;  // "hopper-e4m3", "hopper-e5m2 x hopper-e4m3", "blackwell kind::mxf4nvf4"
  ScaledProduct product = ScaledProduct::promoted;
};
// The model of architecture `arch` ("ada", "hopper", "blackwell") for a GEMM with these element
// formats, or why there is none: no MMA takes the format (FP6 and FP4 have no preset), the two
// formats' presets differ in more than their input (no mixed-format MMA). MX and NVFP4 block
// scales on Blackwell enter its block-scaled instructions (ScaledProduct): MX with e4m3/e5m2 in
// blocks of 32 (kind::mxf8f6f4), MX with e2m1 in blocks of 32 (kind::mxf4), NVFP4 (e2m1, UE4M3
// per 16: kind::mxf4nvf4); other block-scaled operands (FP6 elements, operands scaled unalike)
// are refused with the reason.
struct MmaChoice {
  std::optional<RecipeMma> mma;
  std::string reason;  // when there is none
};
MmaChoice recipe_mma(std::string_view arch, const Recipe& recipe, Gemm gemm);
// The K of one block-scaled instruction, which must divide a GEMM's K (32 for kind::mxf8f6f4, 64
// for kind::mxf4 and kind::mxf4nvf4); 1 for a promoted product, which takes any K.
std::size_t instruction_k(const RecipeMma& mma);

// The architecture a recipe's GEMMs run on when none is named: blackwell for MX and NVFP4 recipes
// whose block-scaled MMAs it has (mxfp8, mxfp4, nvfp4), else hopper where it has a model of the
// recipe's formats for every GEMM of `gemms`, else exact, with a note that says why ("mxfp6:
// multiplied exactly (no Tensor Core takes e3m2 operands; ...)").
struct DefaultArch {
  std::string arch;
  std::string note;  // empty unless exact
};
DefaultArch default_arch(const Recipe& recipe, const std::vector<Gemm>& gemms);

// Where the product's chunks along K end: at every tile edge of A and of B (where a scale
// changes) and every `promote_interval` products (0: never); the last ends at k. Increasing.
std::vector<std::size_t> chunk_ends(const Quantized& a, const Quantized& b,
                                    std::size_t promote_interval);

// C (m x n, row-major, binary32 values) = A B^T from the quantized operands: for each output and
// each chunk [k0, k1) of chunk_ends, the partial product of the element values on the Tensor Core
// model (mma_dot from an accumulator of zero: the MMA's accumulator restarts after each
// promotion), then acc = fmaf(s, partial, acc) in binary32, correctly rounded, with
// s = fl32(decode_a * decode_b) the product of the two tiles' decode scales (DeepGEMM's
// `final_accum += scale_a * scale_b * accum`, contracted to an FMA by nvcc); acc starts at +0.
// A and B must have the same k (cols); A's element values must be values of mma.a_format, B's of
// mma.b_format.
//
// A block-scaled product (mma.product other than promoted) runs the instruction along K, each
// from the previous one's result (the accumulator stays in the Tensor Core; its k, 32 or 64, must
// divide K), the block scales read from the tiles' stored patterns; with a promote_interval the
// accumulator restarts every that many products and the partials are added in binary32. NVFP4's
// result is then fl32(alpha * sum), alpha = fl32(S_dec(A) * S_dec(B)). An infinite accumulator
// stays infinite.
std::vector<double> recipe_product(const Quantized& a, const Quantized& b, const RecipeMma& mma,
                                   std::size_t promote_interval);

}  // namespace ampbench::quant
