// The recipe GEMM's operands as cuBLASLt's scaled GEMMs take them, on the host: the MX/NVFP4
// scale layout against PyTorch's published construction of it (to_blocked, a pad, a view, two
// permutations), the fp32 block layouts against cuBLAS's stated shapes, every built-in recipe's
// operands packed and read back to the quantizer's dequantized values exactly, and the rules of
// why_no_scaled_gemm.
#include "harness/backends/cuda/scaled_gemm_plan.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"

namespace ampbench::backends::cuda {
namespace {

// PyTorch's to_blocked (torch/testing/_internal/common_quantized.py) on a matrix of R x C scale
// entries, as index arithmetic: pad to (ceil(R/128) 128) x (ceil(C/4) 4), view as
// (nR, 128, nC, 4), permute to (nR, nC, 128, 4), view each 128 x 4 block as (4, 32, 4),
// transpose its first two axes to (32, 4, 4), flatten. Returns, for every position of the
// flattened buffer, the (row, col) of the entry it holds.
std::vector<std::pair<std::size_t, std::size_t>> torch_to_blocked(std::size_t rows,
                                                                  std::size_t cols) {
  const std::size_t nr = (rows + 127) / 128, nc = (cols + 3) / 4;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t br = 0; br < nr; ++br) {
    for (std::size_t bc = 0; bc < nc; ++bc) {
      // The block's (128, 4) entries viewed as (4, 32, 4): entry (i, j, l) is row i 32 + j,
      // column l of the block; after the transpose the order is (j, i, l).
      for (std::size_t j = 0; j < 32; ++j) {
        for (std::size_t i = 0; i < 4; ++i) {
          for (std::size_t l = 0; l < 4; ++l) {
            out.emplace_back(br * 128 + i * 32 + j, bc * 4 + l);
          }
        }
      }
    }
  }
  return out;
}

TEST(ScaleLayout, BlockScaledIsPytorchsToBlocked) {
  for (const ScaleMode mode : {ScaleMode::vec32_ue8m0, ScaleMode::vec16_ue4m3}) {
    const std::size_t block = scale_block(mode, 0);
    for (const auto& [rows, k] : {std::pair<std::size_t, std::size_t>{128, 4 * block},
                                  {256, 8 * block},
                                  {160, 3 * block},
                                  {16, 1 * block},
                                  {300, 13 * block}}) {
      SCOPED_TRACE(fmt::format("{} {}x{}", scale_mode_name(mode), rows, k));
      const std::size_t cols = k / block;
      const auto order = torch_to_blocked(rows, cols);
      ASSERT_EQ(scale_entries(mode, rows, k), order.size());
      std::vector<bool> seen(order.size(), false);
      for (std::size_t at = 0; at < order.size(); ++at) {
        const auto [r, c] = order[at];
        if (r >= rows || c >= cols) continue;  // padding
        ASSERT_EQ(scale_index(mode, rows, k, r, c), at) << "row " << r << " block " << c;
        seen[at] = true;
      }
      EXPECT_EQ(static_cast<std::size_t>(std::count(seen.begin(), seen.end(), true)), rows * cols);
    }
  }
}

// cuBLAS: VEC128_32F scales are an M x L matrix stored M-major (column-major, leading dimension
// M); BLK128x128_32F scales are K-major with a column stride of L rounded up to 4.
TEST(ScaleLayout, Fp32TilesAreCublasStatedShapes) {
  const std::size_t rows = 48, k = 640;  // L = 5
  EXPECT_EQ(scale_entries(ScaleMode::vec128_32f, rows, k), 5 * rows);
  EXPECT_EQ(scale_index(ScaleMode::vec128_32f, rows, k, 7, 0), 7u);
  EXPECT_EQ(scale_index(ScaleMode::vec128_32f, rows, k, 7, 3), 3 * rows + 7);
  EXPECT_EQ(scale_entries(ScaleMode::blk128x128_32f, 384, k), 3 * 8u);  // L4 = 8, 3 row blocks
  EXPECT_EQ(scale_index(ScaleMode::blk128x128_32f, 384, k, 0, 4), 4u);
  EXPECT_EQ(scale_index(ScaleMode::blk128x128_32f, 384, k, 127, 4), 4u);
  EXPECT_EQ(scale_index(ScaleMode::blk128x128_32f, 384, k, 128, 0), 8u);
  EXPECT_EQ(scale_index(ScaleMode::blk128x128_32f, 384, k, 383, 4), 2 * 8 + 4u);
  EXPECT_EQ(scale_entries(ScaleMode::scalar_32f, rows, k), 1u);
}

std::vector<float> normal_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t s = seed;
  for (float& x : v) {
    // Products of two uniform draws spread over several binades, signed.
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(s >> 11) * 0x1p-53;
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double e = static_cast<double>(s >> 11) * 0x1p-53;
    x = static_cast<float>((u - 0.5) * std::exp2(8 * e - 4));
  }
  return v;
}

// Reads element (r, c) of a packed operand back: its code's value times its block's scale times
// the tensor decode scale.
double read_back(const ScaledOperand& o, const numeric::Format& element, std::size_t r,
                 std::size_t c) {
  const ScaledShape& s = o.shape;
  const std::size_t i = r * s.k + c;
  const std::uint64_t code =
      s.element == ScaledElement::e2m1 ? (o.codes[i / 2] >> (4 * (i % 2))) & 0xF : o.codes[i];
  const std::size_t at = scale_index(s.mode, s.rows, s.k, r, c / scale_block(s.mode, s.k));
  double scale = 0;
  if (s.mode == ScaleMode::vec32_ue8m0) {
    scale = numeric::decode_scale(numeric::formats::ue8m0, o.scales.at(at));
  } else if (s.mode == ScaleMode::vec16_ue4m3) {
    scale = numeric::decode_scale(numeric::formats::ue4m3, o.scales.at(at)) * o.tensor_decode;
  } else {
    std::uint32_t bits = 0;
    for (std::size_t b = 0; b < 4; ++b) bits |= std::uint32_t{o.scales.at(4 * at + b)} << (8 * b);
    scale = std::bit_cast<float>(bits);
  }
  return numeric::decode(element, code) * scale;
}

TEST(PackOperand, EveryBuiltInRecipesOperandsReadBackToTheirDequantizedValues) {
  const std::size_t rows = 256, k = 256;
  const std::vector<float> x = normal_values(rows * k, 7);
  struct Expect {
    std::string recipe;
    quant::Role role;
    std::optional<ScaleMode> mode;  // none: refused, saying `refusal`
    std::string refusal = "";
  };
  const std::vector<Expect> cases = {
      {"fp8-delayed", quant::Role::x, ScaleMode::scalar_32f},
      {"fp8-current", quant::Role::w, ScaleMode::scalar_32f},
      {"fp8-block", quant::Role::x, ScaleMode::vec128_32f},
      {"fp8-block", quant::Role::w, ScaleMode::blk128x128_32f},
      {"mxfp8", quant::Role::x, ScaleMode::vec32_ue8m0},
      {"mxfp4", quant::Role::w, std::nullopt,
       "cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not VEC32_UE8M0"},
      {"nvfp4", quant::Role::x, ScaleMode::vec16_ue4m3},
      {"nvfp4", quant::Role::w, ScaleMode::vec16_ue4m3},  // 16x16 tiles as 1x16 blocks
      {"mxfp6", quant::Role::x, std::nullopt, "cuBLASLt has no e3m2 element type"},
  };
  for (const Expect& e : cases) {
    SCOPED_TRACE(e.recipe + " " + std::string(quant::role_name(e.role)));
    const quant::Recipe* recipe = quant::find_recipe(e.recipe);
    ASSERT_NE(recipe, nullptr);
    const std::optional<float> delayed =
        recipe->operand(e.role).scale == quant::ScaleChoice::delayed ? std::optional(0.5f)
                                                                     : std::nullopt;
    const quant::QuantizedOperand q =
        quant::quantize_operand(*recipe, e.role, quant::Gemm::fprop, x, rows, k, 3, delayed);
    const OperandPacking p = pack_operand(q.q, recipe->operand(e.role).granularity);
    if (!e.mode) {
      EXPECT_FALSE(p.operand.has_value());
      EXPECT_NE(p.reason.find(e.refusal), std::string::npos) << p.reason;
      continue;
    }
    ASSERT_TRUE(p.operand.has_value()) << p.reason;
    const ScaledOperand& o = *p.operand;
    EXPECT_EQ(o.shape.mode, *e.mode);
    if (o.shape.mode != ScaleMode::scalar_32f) {
      EXPECT_EQ(o.scales.size() % 16, 0u) << "a scale buffer's size";
    }
    std::size_t mismatches = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < k; ++c) {
        const double back = read_back(o, q.q.element, r, c);
        if (back != q.q.dequantized[r * k + c] && ++mismatches <= 5) {
          ADD_FAILURE() << "(" << r << ", " << c << "): read back " << back << ", dequantized "
                        << q.q.dequantized[r * k + c];
        }
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

// A 128 x 128 operand is one 128 x 128 tile whichever its recipe: the recipe's granularity, not
// the tile's extent, decides the scale mode.
TEST(PackOperand, ATensorOfOneTileKeepsItsRecipesMode) {
  const std::vector<float> x = normal_values(128 * 128, 5);
  for (const auto& [recipe, mode] : {std::pair{"fp8-current", ScaleMode::scalar_32f},
                                     std::pair{"fp8-block", ScaleMode::blk128x128_32f}}) {
    SCOPED_TRACE(recipe);
    const quant::Recipe& r = *quant::find_recipe(recipe);
    const quant::QuantizedOperand q =
        quant::quantize_operand(r, quant::Role::w, quant::Gemm::fprop, x, 128, 128, 3);
    const OperandPacking p = pack_operand(q.q, r.operand(quant::Role::w).granularity);
    ASSERT_TRUE(p.operand.has_value()) << p.reason;
    EXPECT_EQ(p.operand->shape.mode, mode);
  }
}

ScaledShape shape(ScaledElement e, ScaleMode m, std::size_t rows, std::size_t k) {
  return ScaledShape{.element = e, .mode = m, .rows = rows, .k = k};
}

TEST(WhyNoScaledGemm, FollowsCublasLtsRules) {
  using E = ScaledElement;
  using M = ScaleMode;
  const auto fp8 = [](M m, std::size_t rows = 64, std::size_t k = 256) {
    return shape(E::e4m3, m, rows, k);
  };
  EXPECT_EQ(
      why_no_scaled_gemm(fp8(M::scalar_32f), shape(E::e5m2, M::scalar_32f, 32, 256), 89, true),
      std::nullopt);
  EXPECT_EQ(why_no_scaled_gemm(shape(E::e5m2, M::scalar_32f, 16, 16),
                               shape(E::e5m2, M::scalar_32f, 16, 16), 90, false),
            "cuBLASLt has no FP8 GEMM with both operands e5m2");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::scalar_32f, 16, 24), fp8(M::scalar_32f, 16, 24), 90, false),
            "a scaled GEMM's k = 24 is not a positive multiple of 16");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::scalar_32f, 0), fp8(M::scalar_32f), 90, false),
            "a scaled GEMM's m = 0 is not a positive multiple of 16");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::scalar_32f), fp8(M::scalar_32f, 64, 128), 90, false),
            "A's K = 256 is not B's K = 128");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::scalar_32f), fp8(M::scalar_32f), 80, false),
            "sm_80 has no FP8 or FP4 Tensor Cores (sm_89 on)");
  // fp8-block: sm_90 alone, one operand 128x128 at most, no fast accumulation.
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec128_32f), fp8(M::blk128x128_32f), 90, false),
            std::nullopt);
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::blk128x128_32f), fp8(M::vec128_32f), 90, false),
            std::nullopt);
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec128_32f), fp8(M::vec128_32f), 100, false),
            "cuBLASLt's 1x128 and 128x128 fp32 block scales run on sm_90 alone, not sm_100");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::blk128x128_32f), fp8(M::blk128x128_32f), 90, false),
            "cuBLASLt does not scale both operands by 128x128 blocks");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec128_32f), fp8(M::vec128_32f), 90, true),
            "cuBLASLt's 1x128 and 128x128 block scales take no fast accumulation");
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec128_32f), fp8(M::scalar_32f), 90, false),
            "cuBLASLt scales both operands alike, not A VEC128_32F and B SCALAR_32F");
  // MX and NVFP4: sm_100 on; FP4 by FP4 alone, K a multiple of 32.
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec32_ue8m0), fp8(M::vec32_ue8m0), 100, false), std::nullopt);
  EXPECT_EQ(why_no_scaled_gemm(fp8(M::vec32_ue8m0), fp8(M::vec32_ue8m0), 90, false),
            "cuBLASLt's VEC32_UE8M0 block scales need sm_100 or later, not sm_90");
  const ScaledShape fp4 = shape(E::e2m1, M::vec16_ue4m3, 64, 256);
  EXPECT_EQ(why_no_scaled_gemm(fp4, fp4, 100, false), std::nullopt);
  EXPECT_EQ(why_no_scaled_gemm(fp4, fp8(M::vec16_ue4m3), 100, false),
            "cuBLASLt multiplies FP4 operands only by FP4 operands");
  EXPECT_EQ(why_no_scaled_gemm(shape(E::e2m1, M::vec16_ue4m3, 64, 48),
                               shape(E::e2m1, M::vec16_ue4m3, 64, 48), 100, false),
            "a scaled GEMM's k = 48 is not a positive multiple of 32");
  EXPECT_EQ(why_no_scaled_gemm(shape(E::e2m1, M::scalar_32f, 64, 64),
                               shape(E::e2m1, M::scalar_32f, 64, 64), 100, false),
            "cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not SCALAR_32F");
  EXPECT_EQ(why_no_scaled_gemm(shape(E::e2m1, M::vec32_ue8m0, 64, 64),
                               shape(E::e2m1, M::vec32_ue8m0, 64, 64), 100, false),
            "cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not VEC32_UE8M0");
}

TEST(WhyNoRecipeGemm, NamesTheRecipeTheGemmAndTheOperand) {
  const auto why = [](const char* recipe, quant::Gemm g, int cc, bool fast = false) {
    return why_no_recipe_gemm(*quant::find_recipe(recipe), g, 256, 128, 512, cc, fast);
  };
  EXPECT_EQ(why("fp8-delayed", quant::Gemm::dgrad, 89, true), std::nullopt);
  EXPECT_EQ(why("fp8-current", quant::Gemm::wgrad, 100), std::nullopt);
  EXPECT_EQ(why("fp8-block", quant::Gemm::fprop, 90), std::nullopt);  // 1x128 by 128x128
  EXPECT_EQ(why("fp8-block", quant::Gemm::wgrad, 90), std::nullopt);  // 1x128 by 1x128
  EXPECT_EQ(why("fp8-block", quant::Gemm::fprop, 100),
            "fp8-block: the fprop GEMM: cuBLASLt's 1x128 and 128x128 fp32 block scales run on "
            "sm_90 alone, not sm_100");
  EXPECT_EQ(why("mxfp8", quant::Gemm::fprop, 100), std::nullopt);
  EXPECT_EQ(why("mxfp8", quant::Gemm::fprop, 90),
            "mxfp8: the fprop GEMM: cuBLASLt's VEC32_UE8M0 block scales need sm_100 or later, "
            "not sm_90");
  EXPECT_EQ(why("nvfp4", quant::Gemm::wgrad, 100), std::nullopt);
  EXPECT_EQ(why("mxfp4", quant::Gemm::fprop, 100),
            "mxfp4: the fprop GEMM's x: cuBLASLt's FP4 GEMMs take UE4M3 scales per 16 (NVFP4), not "
            "VEC32_UE8M0");
  // Per-tensor operands of 128 x 128 (bmm's and conv2d's defaults) stay per tensor.
  EXPECT_EQ(why_no_recipe_gemm(*quant::find_recipe("fp8-current"), quant::Gemm::fprop, 128, 128,
                               128, 89, false),
            std::nullopt);
  EXPECT_EQ(why("mxfp6", quant::Gemm::fprop, 100),
            "mxfp6: the fprop GEMM's x: cuBLASLt has no e3m2 element type (its scaled GEMMs take "
            "e4m3, e5m2 and e2m1)");
}

// The device trainer's question, per recipe and device: every built-in recipe on sm_80, sm_89,
// sm_90 and sm_100, as the rules above say, and a recipe's promotion deciding fast accumulation.
TEST(WhyNoRecipeTraining, AsksEachGemmAtAPaddedShape) {
  const auto trains = [](const char* recipe, int cc) {
    return !why_no_recipe_training(*quant::find_recipe(recipe), cc).has_value();
  };
  for (const char* r : {"fp8-delayed", "fp8-current"}) {
    EXPECT_FALSE(trains(r, 80)) << r;
    EXPECT_TRUE(trains(r, 89)) << r;
    EXPECT_TRUE(trains(r, 90)) << r;
    EXPECT_TRUE(trains(r, 100)) << r;
  }
  EXPECT_TRUE(trains("fp8-block", 90));
  EXPECT_FALSE(trains("fp8-block", 89));
  EXPECT_FALSE(trains("fp8-block", 100));
  for (const char* r : {"mxfp8", "nvfp4"}) {
    EXPECT_FALSE(trains(r, 90)) << r;
    EXPECT_TRUE(trains(r, 100)) << r;
  }
  for (const char* r : {"mxfp4", "mxfp6"}) EXPECT_FALSE(trains(r, 100)) << r;
  EXPECT_EQ(why_no_recipe_training(*quant::find_recipe("mxfp8"), 90),
            "mxfp8: the fprop GEMM: cuBLASLt's VEC32_UE8M0 block scales need sm_100 or later, not "
            "sm_90");
  // fp8-block never promoting asks for fast accumulation, which its tiles refuse.
  quant::Recipe fast = *quant::find_recipe("fp8-block");
  fast.promote_interval = 0;
  const std::optional<std::string> why = why_no_recipe_training(fast, 90);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("fast accumulation"), std::string::npos) << *why;
  fast = *quant::find_recipe("fp8-current");
  fast.promote_interval = 0;
  EXPECT_EQ(why_no_recipe_training(fast, 90), std::nullopt);
}

}  // namespace
}  // namespace ampbench::backends::cuda
