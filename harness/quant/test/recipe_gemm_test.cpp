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

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/numeric/mma_block_scale.hpp"
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

// Blackwell's FP4 products computed in lanes over the outputs (recipe_gemm.cpp) against the
// model's definition output by output: kind::mxf4 / kind::mxf4nvf4 instruction after instruction
// (numeric::mma_mxf4_step, the MMA-Sim model numeric/test/mma_block_scale_test checks), the
// partials promoted into binary32 every promote_interval, times the tensor scales' product. The
// inputs' blocks lie anywhere from 2^-140 to 2^125 and carry zeros, NaNs and infinities, so that
// results reach binary32's top binade, infinity and NaN; then all of them near 2^-70, so that
// results lie in binary32's subnormal range.
TEST(RecipeGemm, BlackwellFp4ProductIsTheModelsInstructionsOutputByOutput) {
  const std::size_t m = 32, k = 256;
  std::uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  // Blocks in binades lo to lo + span - 1.
  const auto operand = [&](std::size_t rows, int lo, int span) {
    std::vector<float> x(rows * k);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c0 = 0; c0 < k; c0 += 16) {
        const int e = static_cast<int>(next() % static_cast<std::uint64_t>(span)) + lo;
        for (std::size_t c = c0; c < c0 + 16; ++c) {
          const double u = static_cast<double>(next() % 1024) / 512.0 - 1.0;
          x[r * k + c] = static_cast<float>(std::ldexp(u, e));
        }
      }
    }
    x[3 * k + 17] = 0.0f;
    x[5 * k + 40] = std::numeric_limits<float>::infinity();
    x[7 * k + 100] = std::numeric_limits<float>::quiet_NaN();
    return x;
  };
  // Everywhere, and all tiny: products near 2^-140, results in binary32's subnormal range.
  for (const auto& [lo, span] : {std::pair{-140, 266}, std::pair{-80, 20}}) {
    const std::vector<float> xa = operand(m, lo, span), xb = operand(48, lo, span);
    std::size_t subnormal = 0;
    for (const char* name : {"mxfp4", "nvfp4"}) {
      // mxfp4's B has 44 rows, so that the lanes' last outputs are not a whole vector; NVFP4's
      // weight blocks of 16 x 16 take 48.
      const std::size_t n = std::string_view(name) == "mxfp4" ? 44 : 48;
      for (const Gemm gemm : {Gemm::fprop, Gemm::wgrad}) {
        const Recipe recipe = builtin(name);
        const auto [ra, rb] = gemm_roles(gemm);
        const QuantizedOperand qa = quantize_operand(recipe, ra, gemm, xa, m, k, 1);
        const QuantizedOperand qb =
            quantize_operand(recipe, rb, gemm, std::span<const float>(xb).first(n * k), n, k, 2);
        const RecipeMma mma = *recipe_mma("blackwell", recipe, gemm).mma;
        const bool nv = mma.product == ScaledProduct::mxf4nvf4;
        const auto encoding = nv ? numeric::ScaleEncoding::ue4m3 : numeric::ScaleEncoding::ue8m0;
        const std::size_t block = qa.q.block_cols;
        const auto scale = [&](const Quantized& q, std::size_t row, std::size_t col) {
          const std::size_t tiles_per_row = k / q.block_cols;
          const Tile& t = q.tiles[(row / q.block_rows) * tiles_per_row + col / q.block_cols];
          return numeric::decode_block_scale(encoding, static_cast<std::uint8_t>(t.scale_bits));
        };
        const float alpha =
            nv ? static_cast<float>(qa.q.global_decode) * static_cast<float>(qb.q.global_decode)
               : 1.0f;
        for (const std::size_t promote : {std::size_t{0}, std::size_t{128}}) {
          const std::vector<double> d = recipe_product(qa.q, qb.q, mma, promote);
          std::size_t specials = 0;
          for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
              float total = 0.0f;
              double acc = 0.0;
              for (std::size_t k0 = 0; k0 < k; k0 += 64) {
                std::array<numeric::BlockScale, 4> sa{}, sb{};
                for (std::size_t s = 0; s < 64 / block; ++s) {
                  sa[s] = scale(qa.q, i, k0 + s * block);
                  sb[s] = scale(qb.q, j, k0 + s * block);
                }
                if (!std::isinf(acc)) {
                  acc = numeric::mma_mxf4_step(mma.model, acc, qa.q.values.data() + i * k + k0,
                                               qb.q.values.data() + j * k + k0, 64, sa.data(),
                                               sb.data(), static_cast<int>(block));
                }
                if (promote != 0 && (k0 + 64) % promote == 0 && k0 + 64 < k) {
                  total += static_cast<float>(acc);
                  acc = 0.0;
                }
              }
              total += static_cast<float>(acc);
              const double want = alpha == 1.0f ? total : alpha * total;
              const double got = d[i * n + j];
              specials += std::isfinite(want) && std::fabs(want) >= 0x1p-126 ? 0 : 1;
              subnormal += want != 0 && std::fabs(want) < 0x1p-126 ? 1 : 0;
              if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got)) << name << " " << i << "," << j;
              } else {
                EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want))
                    << name << " gemm " << static_cast<int>(gemm) << " promote " << promote
                    << " output " << i << "," << j << ": " << got << " vs " << want;
              }
            }
          }
          EXPECT_GT(specials, 0u)
              << "no zero, subnormal, infinite or NaN output: the edges untested";
        }
      }
    }
    if (lo == -80) {
      EXPECT_GT(subnormal, 0u) << "no output in binary32's subnormal range";
    }
  }
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
