// The recipe GEMM (recipe_gemm.hpp) against oracles of its own:
//   - where every rounding is exact (few significant bits, tile scales that differ from tile to
//     tile), the product equals the exact dot products of the unquantized inputs (reference/exact),
//     which fails if a chunk took another tile's scale or a partial were lost;
//   - Hopper's FP8 accumulation on a long K of ones: without promotion the e8m13 accumulator stops
//     growing at 2^14 products (derived by hand below), with promotion every 128 it is exact;
//   - fl32 of the scales' product correctly rounded, chunk edges, roles, and which models a
//     recipe's GEMM may run on, with the reasons.
#include "harness/quant/recipe_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "reference/exact/dot.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;

Recipe builtin(const char* name) {
  const Recipe* r = find_recipe(name);
  EXPECT_NE(r, nullptr) << name;
  return *r;
}

// C = A B^T exactly, each output the nearest binary64 of the exact dot product (the test's
// products are exact in binary32, so this is exact too).
std::vector<double> exact_product(const std::vector<float>& a, const std::vector<float>& b,
                                  std::size_t m, std::size_t n, std::size_t k) {
  std::vector<double> c(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      c[i * n + j] = reference::exact_dot(std::span<const float>(a).subspan(i * k, k),
                                          std::span<const float>(b).subspan(j * k, k))
                         .to_double();
    }
  }
  return c;
}

// Values +-{1, 1.5, 2, 3} times 2^e with e the tile's (0..3, changing from tile to tile along K
// and, for B's 128x128 blocks, from block row to block row), each tile holding a 3 so that its
// amax is 3 * 2^e: the power-of-two scale 2^(7-e) makes every element exact in e4m3 (384 at
// most), every product of elements has at most 8 significant bits, and every sum is exact in the
// e8m13 accumulator (a 128-chunk spans 2^12 .. 2^24.2: 13 bits) and in binary32 (the whole
// product spans 2^-2 .. 2^21.2).
std::vector<float> few_bits(std::size_t rows, std::size_t k, std::size_t tile_rows,
                            std::size_t tile_cols, unsigned salt) {
  static constexpr float kValues[] = {1.0f, 1.5f, 2.0f, 3.0f};
  std::vector<float> x(rows * k);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < k; ++c) {
      const std::size_t tile = (r / tile_rows) * 7 + c / tile_cols + salt;
      const int e = static_cast<int>(tile % 4);
      const std::size_t h = (r * 131 + c * 29 + salt * 7) % 8;
      float v = c % tile_cols == 0 ? 3.0f : kValues[h % 4];
      if (h >= 4) v = -v;
      x[r * k + c] = std::ldexp(v, e);
    }
  }
  return x;
}

TEST(RecipeGemm, Fp8BlockOnHopperIsExactWhereEveryRoundingIs) {
  const Recipe recipe = builtin("fp8-block");
  const MmaChoice choice = recipe_mma("hopper", recipe, Gemm::fprop);
  ASSERT_TRUE(choice.mma.has_value()) << choice.reason;
  EXPECT_EQ(choice.mma->name, "hopper-e4m3");
  const std::size_t m = 3, n = 128, k = 512;
  const std::vector<float> x = few_bits(m, k, 1, 128, 0);
  const std::vector<float> w = few_bits(n, k, 128, 128, 1);
  const QuantizedOperand qx = quantize_operand(recipe, Role::x, Gemm::fprop, x, m, k, 1);
  const QuantizedOperand qw = quantize_operand(recipe, Role::w, Gemm::fprop, w, n, k, 1);
  ASSERT_EQ(qx.q.events.saturated, 0u);
  ASSERT_EQ(qx.q.tiles.size(), m * 4);
  ASSERT_EQ(qw.q.tiles.size(), 4u);
  // The tiles' scales differ: a product that took another tile's would be off by a power of two.
  EXPECT_NE(qx.q.tiles[0].decode_scale, qx.q.tiles[1].decode_scale);
  EXPECT_NE(qw.q.tiles[0].decode_scale, qw.q.tiles[1].decode_scale);
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(qx.q.dequantized[i], x[i]) << i;
  const std::vector<double> got = recipe_product(qx.q, qw.q, *choice.mma, recipe.promote_interval);
  const std::vector<double> want = exact_product(x, w, m, n, k);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "output " << i;
}

// fp8-current with power-of-two scales on x = w = ones(1, K), K = 32768: the scale is 256 (448
// cleared to a power of two), every element 256 = 2^8, every product 2^16. Hopper's FP8 wgmma keeps
// F = 13 fraction bits below the largest term exponent: once the accumulator c reaches 2^30
// (2^14 products) a product's term 2^16 aligned against c's exponent 30 is 2^(13+16-30) = 1/2,
// truncated to 0, so the sum stays at 2^30 and D = 2^30 * 2^-16 = 16384 instead of 32768. Promoted
// to fp32 every 128 products, each partial is 2^23 (exact) and binary32 sums 128 of them exactly.
TEST(RecipeGemm, HopperFp8AccumulationStallsWithoutPromotion) {
  Recipe recipe = builtin("fp8-current");
  recipe.operand(Role::x).scale = ScaleChoice::pow2;
  recipe.operand(Role::w).scale = ScaleChoice::pow2;
  const std::size_t k = 32768;
  const std::vector<float> ones(k, 1.0f);
  const QuantizedOperand qx = quantize_operand(recipe, Role::x, Gemm::fprop, ones, 1, k, 1);
  const QuantizedOperand qw = quantize_operand(recipe, Role::w, Gemm::fprop, ones, 1, k, 1);
  ASSERT_EQ(qx.q.tiles.at(0).scale, 256.0);
  const MmaChoice choice = recipe_mma("hopper", recipe, Gemm::fprop);
  ASSERT_TRUE(choice.mma.has_value()) << choice.reason;
  EXPECT_EQ(recipe_product(qx.q, qw.q, *choice.mma, 0).at(0), 16384.0);
  EXPECT_EQ(recipe_product(qx.q, qw.q, *choice.mma, 128).at(0), 32768.0);
  // Blackwell's FP8 MMA keeps F = 25 and a 23-bit output: 2^31 is reached exactly.
  const MmaChoice blackwell = recipe_mma("blackwell", recipe, Gemm::fprop);
  ASSERT_TRUE(blackwell.mma.has_value()) << blackwell.reason;
  EXPECT_EQ(recipe_product(qx.q, qw.q, *blackwell.mma, 0).at(0), 32768.0);
}

// Blackwell's block-scaled MMAs on ones(1, 32768): mxfp8's elements are 256 under 2^-8 scales,
// each product 2^16 * 2^-16 = 1 inside the MMA (F = 25, a 23-bit output): the sum is exact up to
// 2^24, D = 32768. NVFP4 (ones become 6 under a block scale 448 and a tensor decode scale
// S_dec = fl32(1/2688)) sums 64 products of 36 per instruction exactly, 2^15 * 36 * 448^2 in
// all, then multiplies by alpha = fl32(S_dec^2): D = fl32(alpha * that).
TEST(RecipeGemm, BlackwellBlockScaledOnOnes) {
  const std::size_t k = 32768;
  const std::vector<float> ones(k, 1.0f);
  const Recipe mx = builtin("mxfp8");
  const QuantizedOperand x = quantize_operand(mx, Role::x, Gemm::fprop, ones, 1, k, 1);
  const QuantizedOperand w = quantize_operand(mx, Role::w, Gemm::fprop, ones, 1, k, 1);
  const RecipeMma mxf8 = *recipe_mma("blackwell", mx, Gemm::fprop).mma;
  EXPECT_EQ(recipe_product(x.q, w.q, mxf8, 0).at(0), 32768.0);
  EXPECT_EQ(recipe_product(x.q, w.q, mxf8, 4096).at(0), 32768.0);

  const Recipe nv = builtin("nvfp4");
  const std::vector<float> ones16(16 * k, 1.0f);
  const QuantizedOperand xn = quantize_operand(nv, Role::x, Gemm::fprop, ones, 1, k, 1);
  const QuantizedOperand wn = quantize_operand(nv, Role::w, Gemm::fprop, ones16, 16, k, 1);
  ASSERT_EQ(xn.q.values.at(0), 6.0);
  const double s_dec = static_cast<float>(1.0 / static_cast<float>(2688.0 / 1.0));
  ASSERT_EQ(xn.q.global_decode, s_dec);
  const RecipeMma nvf4 = *recipe_mma("blackwell", nv, Gemm::fprop).mma;
  const std::vector<double> d = recipe_product(xn.q, wn.q, nvf4, 0);
  const float alpha = static_cast<float>(s_dec * s_dec);  // s_dec has 24 bits: exact product
  const float sum = static_cast<float>(32768.0 * 36 * 448 * 448);  // 2^15 * 36 * 448^2, exact
  EXPECT_EQ(d.at(0), static_cast<double>(alpha * sum));
  EXPECT_EQ(d.at(15), d.at(0));
}

TEST(RecipeGemm, ChunksEndAtTileEdgesAndPromotions) {
  Quantized a, b;
  a.rows = b.rows = 1;
  a.cols = b.cols = 256;
  a.block_rows = b.block_rows = 1;
  a.block_cols = 256;
  b.block_cols = 256;
  EXPECT_EQ(chunk_ends(a, b, 0), (std::vector<std::size_t>{256}));
  EXPECT_EQ(chunk_ends(a, b, 100), (std::vector<std::size_t>{100, 200, 256}));
  b.block_cols = 32;
  EXPECT_EQ(chunk_ends(a, b, 0).size(), 8u);
  a.block_cols = 128;
  EXPECT_EQ(chunk_ends(a, b, 48),
            (std::vector<std::size_t>{32, 48, 64, 96, 128, 144, 160, 192, 224, 240, 256}));
}

TEST(RecipeGemm, RolesOfEachGemm) {
  EXPECT_EQ(gemm_roles(Gemm::fprop), std::make_pair(Role::x, Role::w));
  EXPECT_EQ(gemm_roles(Gemm::dgrad), std::make_pair(Role::dy, Role::w));
  EXPECT_EQ(gemm_roles(Gemm::wgrad), std::make_pair(Role::dy, Role::x));
}

TEST(RecipeGemm, ModelsARecipeMayRunOn) {
  // HYBRID: the gradients' GEMMs are e5m2 x e4m3.
  const Recipe delayed = builtin("fp8-delayed");
  EXPECT_EQ(recipe_mma("hopper", delayed, Gemm::fprop).mma->name, "hopper-e4m3");
  EXPECT_EQ(recipe_mma("hopper", delayed, Gemm::dgrad).mma->name, "hopper-e5m2 x hopper-e4m3");
  EXPECT_EQ(recipe_mma("ada", delayed, Gemm::wgrad).mma->name, "ada-e5m2 x ada-e4m3");
  // No MMA of Ampere takes FP8; FP4 and FP6 have no model anywhere.
  EXPECT_NE(recipe_mma("ampere", delayed, Gemm::fprop).reason.find("e4m3"), std::string::npos);
  const MmaChoice fp4 = recipe_mma("hopper", builtin("mxfp4"), Gemm::fprop);
  EXPECT_FALSE(fp4.mma.has_value());
  EXPECT_NE(fp4.reason.find("e2m1"), std::string::npos) << fp4.reason;
  // MX on Hopper: the scales applied in fp32 after each block of 32; on Blackwell, inside its
  // block-scaled MMAs, except for FP6 (which MMA-Sim leaves unmodelled).
  EXPECT_TRUE(recipe_mma("hopper", builtin("mxfp8"), Gemm::fprop).mma.has_value());
  const MmaChoice mx = recipe_mma("blackwell", builtin("mxfp8"), Gemm::fprop);
  ASSERT_TRUE(mx.mma.has_value()) << mx.reason;
  EXPECT_EQ(mx.mma->product, ScaledProduct::mxf8f6f4);
  EXPECT_EQ(recipe_mma("blackwell", builtin("mxfp4"), Gemm::wgrad).mma->product,
            ScaledProduct::mxf4);
  EXPECT_EQ(recipe_mma("blackwell", builtin("nvfp4"), Gemm::dgrad).mma->product,
            ScaledProduct::mxf4nvf4);
  // MX with the round-up scale (mx-ceil) runs on the same instructions: E8M0 either way, even
  // with one operand of each.
  Recipe te = builtin("mxfp8");
  te.operand(Role::x).scale = ScaleChoice::mx_ceil;
  EXPECT_EQ(recipe_mma("blackwell", te, Gemm::fprop).mma->product, ScaledProduct::mxf8f6f4);
  te.operand(Role::w).scale = ScaleChoice::mx_ceil;
  EXPECT_EQ(recipe_mma("blackwell", te, Gemm::dgrad).mma->product, ScaledProduct::mxf8f6f4);
  const MmaChoice fp6 = recipe_mma("blackwell", builtin("mxfp6"), Gemm::fprop);
  EXPECT_FALSE(fp6.mma.has_value());
  EXPECT_NE(fp6.reason.find("e3m2"), std::string::npos) << fp6.reason;
}

TEST(RecipeGemm, DelayedOperandNeedsItsScale) {
  const Recipe delayed = builtin("fp8-delayed");
  const std::vector<float> x(32, 1.0f);
  EXPECT_THROW(quantize_operand(delayed, Role::x, Gemm::fprop, x, 1, 32, 1), std::invalid_argument);
  const QuantizedOperand q = quantize_operand(delayed, Role::x, Gemm::fprop, x, 1, 32, 1, 2.0f);
  EXPECT_EQ(q.q.tiles.at(0).scale, 2.0);
  EXPECT_EQ(q.q.values.at(0), 2.0);
}

TEST(RecipeGemm, WgradInputsOfNvfp4AreTransformed) {
  const Recipe nvfp4 = builtin("nvfp4");
  const std::vector<float> x(2 * 32, 1.0f);
  EXPECT_TRUE(quantize_operand(nvfp4, Role::x, Gemm::wgrad, x, 2, 32, 1).transformed);
  EXPECT_FALSE(quantize_operand(nvfp4, Role::x, Gemm::fprop, x, 2, 32, 1).transformed);
  EXPECT_THROW(quantize_operand(nvfp4, Role::x, Gemm::wgrad, x, 2, 24, 1), std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::quant
