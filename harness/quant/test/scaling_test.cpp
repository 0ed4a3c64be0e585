// The quantizers and the delayed-scaling state on cases worked out by hand from the definitions
// (OCP MX v1.0 (its conversion of a block); Transformer Engine's DelayedScaling,
// Float8CurrentScaling and NVFP4BlockScaling): exact scales and elements, saturation, flushed and
// lost blocks, NaN.
#include "harness/quant/scaling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Amax, IgnoresNanAsFmaxfDoes) {
  EXPECT_EQ(amax(std::vector<float>{1, -3, kNaN, 2}), 3.0);
  EXPECT_EQ(amax(std::vector<float>{}), 0.0);
  EXPECT_EQ(amax(std::vector<float>{kNaN}), 0.0);
  EXPECT_EQ(amax(std::vector<float>{-kInf, 1}), kInf);
}

TEST(CurrentScale, Fp8MaxOverAmax) {
  EXPECT_EQ(current_scale(448, 448, false), 1.0f);
  EXPECT_EQ(current_scale(0.5, 448, false), 896.0f);
  EXPECT_EQ(current_scale(3.5, 448, false), 128.0f);
  EXPECT_EQ(current_scale(57344, 57344, false), 1.0f);
  // 448/3 = 149.33..: not a power of two; with pow2 its fraction is cleared, 128.
  EXPECT_NE(current_scale(3, 448, false), 128.0f);
  EXPECT_EQ(current_scale(3, 448, true), 128.0f);
  // Zero, infinite and NaN amaxes give 1; a quotient past binary32 gives its largest value.
  for (const double bad : {0.0, double{kInf}, double{kNaN}}) {
    EXPECT_EQ(current_scale(bad, 448, false), 1.0f);
  }
  EXPECT_EQ(current_scale(0x1p-149, 448, false), std::numeric_limits<float>::max());
  EXPECT_EQ(current_scale(0x1p-149, 448, true), 0x1p127f);
}

DelayedScalingConfig config(std::size_t len, AmaxAlgo algo = AmaxAlgo::max, int margin = 0) {
  DelayedScalingConfig c;
  c.amax_history_len = len;
  c.amax_compute_algo = algo;
  c.margin = margin;
  c.fmt_max = 448;
  return c;
}

TEST(DelayedScaling, ASpikeLeavesTheWindowAfterLenSteps) {
  DelayedScaling d(config(3));
  EXPECT_EQ(d.scale(), 1.0f);  // TE's initial scale
  d.record(2);
  EXPECT_EQ(d.history(), (std::vector<float>{2, 0, 0}));
  d.update();
  EXPECT_EQ(d.scale(), 224.0f);
  EXPECT_EQ(d.history(), (std::vector<float>{0, 0, 2}));
  d.record(4);
  d.update();
  EXPECT_EQ(d.scale(), 112.0f);
  EXPECT_EQ(d.history(), (std::vector<float>{0, 2, 4}));
  d.record(1);
  d.update();  // window 2, 4, 1
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(1);
  d.update();  // window 4, 1, 1
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(1);
  d.update();  // window 1, 1, 1: the spike is gone
  EXPECT_EQ(d.scale(), 448.0f);
}

TEST(DelayedScaling, MostRecentMarginAndAmaxesThatKeepTheScale) {
  DelayedScaling d(config(4, AmaxAlgo::most_recent, 2));
  d.record(8);
  d.update();
  EXPECT_EQ(d.scale(), 14.0f);  // 448 / 8 / 2^2
  d.record(1);
  d.update();
  EXPECT_EQ(d.scale(), 112.0f);  // the most recent, not the window's max
  d.update();                    // nothing recorded: amax 0 keeps the scale
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(kInf);
  d.update();
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(kNaN);  // ignored, as fmaxf does: slot 0 stays 0
  EXPECT_EQ(d.history()[0], 0.0f);
  d.update();
  EXPECT_EQ(d.scale(), 112.0f);
  d.record(3);
  d.record(5);  // two quantizations in one step: the larger
  d.update();
  EXPECT_EQ(d.scale(), 22.4f);
  EXPECT_THROW(DelayedScaling(config(0)), std::invalid_argument);
  EXPECT_THROW(DelayedScaling(config(4, AmaxAlgo::max, 127)), std::invalid_argument);
}

Layout layout(std::size_t rows, std::size_t cols, std::size_t br, std::size_t bc) {
  return {.rows = rows, .cols = cols, .block_rows = br, .block_cols = bc};
}

// OCP MX v1.0 (its conversion of a block) by hand: X = 2^(floor(log2 amax) - emax_elem).
TEST(Mx, ScaleIsThePowerOfTwoBelowAmaxOverTheElementsTopBinade) {
  std::vector<float> x(32, 0.0f);
  x[0] = 6;
  x[1] = -0.5f;
  x[2] = 2.5f;  // a tie between 2 and 3: 2
  const Quantized q = quantize_mx(x, layout(1, 32, 1, 32), formats::e2m1);
  ASSERT_EQ(q.tiles.size(), 1u);
  EXPECT_EQ(q.tiles[0].scale_bits, 127u);  // floor(log2 6) - 2 = 0: X = 1
  EXPECT_EQ(q.tiles[0].decode_scale, 1.0);
  EXPECT_EQ(q.bits[0], 0x7u);
  EXPECT_EQ(q.bits[1], 0x9u);
  EXPECT_EQ(q.values[2], 2.0);
  EXPECT_EQ(q.events.saturated, 0u);

  // amax 1000 in e4m3 (emax 8): X = 2^(9 - 8) = 2, and 1000 / 2 = 500 saturates to 448: the MX
  // scale leaves the block's largest value in [2^emax, 2^(emax+1)), above e4m3's 448.
  x[0] = 1000;
  const Quantized e = quantize_mx(x, layout(1, 32, 1, 32), formats::e4m3);
  EXPECT_EQ(e.tiles[0].scale_bits, 128u);
  EXPECT_EQ(e.values[0], 448.0);
  EXPECT_EQ(e.dequantized[0], 896.0);
  EXPECT_EQ(e.events.saturated, 1u);
  EXPECT_EQ(e.element_events[0], numeric::RoundingEvent::saturation);
}

// Transformer Engine's MXFP8 scale by hand: X = the power of two at or above
// fl32(amax * fl32(1 / max_elem)). fl32(1/448) = (1/448)(1 + 3/4 2^-24), and 448 times it,
// 1 + 3/4 2^-24, rounds back to exactly 1 in binary32; likewise 6 fl32(1/6).
TEST(Mx, RoundUpScaleKeepsTheLargestElementInRange) {
  std::vector<float> x(32, 0.0f);
  const auto scale_of = [&](float top, const Format& f) {
    x[0] = top;
    return quantize_mx(x, layout(1, 32, 1, 32), f, MxScale::round_up);
  };
  const Quantized at_max = scale_of(448, formats::e4m3);
  EXPECT_EQ(at_max.tiles[0].scale_bits, 127u);  // v = 1: X = 1, 448 itself
  EXPECT_EQ(at_max.values[0], 448.0);
  EXPECT_EQ(at_max.events.saturated, 0u);
  // 449: v is just above 1, X = 2, and 224.5 rounds to 224 (e4m3's spacing is 16 in [128, 256));
  // the OCP scale, 1, keeps 449, which rounds to 448.
  const Quantized above = scale_of(449, formats::e4m3);
  EXPECT_EQ(above.tiles[0].scale_bits, 128u);
  EXPECT_EQ(above.values[0], 224.0);
  EXPECT_EQ(above.events.saturated, 0u);
  // 470: the OCP scale is 1 and 470 saturates (it rounds to 480); here X = 2 and 235 rounds to 240.
  const Quantized saturating_ocp = scale_of(470, formats::e4m3);
  EXPECT_EQ(saturating_ocp.tiles[0].scale_bits, 128u);
  EXPECT_EQ(saturating_ocp.values[0], 240.0);
  EXPECT_EQ(saturating_ocp.events.saturated, 0u);
  EXPECT_EQ(quantize_mx(x, layout(1, 32, 1, 32), formats::e4m3).events.saturated, 1u);
  // 896 = 2 x 448: v = 2 exactly, X = 2.
  EXPECT_EQ(scale_of(896, formats::e4m3).tiles[0].scale_bits, 128u);
  // 1000: the OCP scale is 2 (500 saturates); v = 1000/448 = 2.23: X = 4, 250 rounds to 256.
  const Quantized big = scale_of(1000, formats::e4m3);
  EXPECT_EQ(big.tiles[0].scale_bits, 129u);
  EXPECT_EQ(big.values[0], 256.0);
  // 256 = 2^8: v = 0.571: X = 1, as the OCP scale.
  EXPECT_EQ(scale_of(256, formats::e4m3).tiles[0].scale_bits, 127u);
  // e2m1 (max 6): 6 keeps X = 1, 6.5 takes X = 2 (3.25 rounds to 3).
  EXPECT_EQ(scale_of(6, formats::e2m1).tiles[0].scale_bits, 127u);
  const Quantized fp4 = scale_of(6.5f, formats::e2m1);
  EXPECT_EQ(fp4.tiles[0].scale_bits, 128u);
  EXPECT_EQ(fp4.values[0], 3.0);
  // e5m2 (max 57344 = 1.75 2^15): 57344 keeps X = 1.
  EXPECT_EQ(scale_of(57344, formats::e5m2).tiles[0].scale_bits, 127u);
  // A tiny block: v below 2^-127 takes E8M0's smallest, 2^-127; an all-zero block too.
  EXPECT_EQ(scale_of(0x1p-140f, formats::e4m3).tiles[0].scale_bits, 0u);
  EXPECT_EQ(scale_of(0, formats::e4m3).tiles[0].scale_bits, 0u);
}

TEST(Mx, TinyBlocksAreLostZeroBlocksAndNanBlocksAreMarked) {
  std::vector<float> x(64, 0.0f);
  x[0] = 0x1p-140f;  // block 0: X would be 2^-148, clamped to E8M0's 2^-127
  x[40] = kNaN;      // block 1: the NaN scale
  const Quantized q = quantize_mx(x, layout(1, 64, 1, 32), formats::e4m3);
  ASSERT_EQ(q.tiles.size(), 2u);
  EXPECT_EQ(q.tiles[0].scale_bits, 0u);
  EXPECT_EQ(q.dequantized[0], 0.0);  // 2^-13 is below e4m3's 2^-9
  EXPECT_TRUE(q.tiles[0].lost);
  EXPECT_EQ(q.events.blocks_lost, 1u);
  EXPECT_EQ(q.events.flushed, 1u);
  EXPECT_EQ(q.tiles[1].scale_bits, 0xFFu);
  EXPECT_TRUE(std::isnan(q.dequantized[33]));
  EXPECT_EQ(q.events.nan, 32u);
  const Quantized zero =
      quantize_mx(std::vector<float>(32, 0.0f), layout(1, 32, 1, 32), formats::e2m1);
  EXPECT_EQ(zero.tiles[0].scale_bits, 0u);  // 2^-127
  EXPECT_FALSE(zero.tiles[0].lost);
}

TEST(Layouts, BlocksMustDivideTheTensor) {
  const std::vector<float> x(48, 1.0f);
  try {
    quantize_mx(x, layout(1, 48, 1, 32), formats::e4m3);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "a block of 32 columns does not divide the tensor's 48 columns");
  }
  EXPECT_THROW(quantize_current(x, layout(2, 24, 3, 24), formats::e4m3, false),
               std::invalid_argument);
  EXPECT_THROW(quantize_current(x, layout(2, 25, 1, 25), formats::e4m3, false),
               std::invalid_argument);
  EXPECT_THROW(quantize_with_scale(x, layout(1, 48, 1, 16), formats::e4m3, 1.0f),
               std::invalid_argument);
  EXPECT_THROW(quantize_with_scale(x, layout(1, 48, 1, 48), formats::e4m3, 0.0f),
               std::invalid_argument);
}

// A slice of rows keeps their codes, values and tiles (rows counted from the slice), and the
// tensor's scales; a per-tensor tile spans any rows; 2-D blocks slice at block edges only.
TEST(Layouts, RowSlicesKeepTheirTilesAndTheTensorsScales) {
  std::vector<float> x(4 * 32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) - 6.5f;
  const Quantized nv = quantize_nvfp4(x, layout(4, 32, 1, 16));
  const Quantized s = row_slice(nv, 2, 2);
  EXPECT_EQ(std::tie(s.rows, s.cols, s.block_rows, s.block_cols),
            std::make_tuple(2u, 32u, 1u, 16u));
  EXPECT_EQ(s.bits, std::vector<std::uint64_t>(nv.bits.begin() + 64, nv.bits.end()));
  EXPECT_EQ(s.dequantized, std::vector<double>(nv.dequantized.begin() + 64, nv.dequantized.end()));
  ASSERT_EQ(s.tiles.size(), 4u);
  EXPECT_EQ(s.tiles[2].row, 1u);
  EXPECT_EQ(s.tiles[3].col, 16u);
  EXPECT_EQ(s.tiles[3].scale_bits, nv.tiles[7].scale_bits);
  EXPECT_EQ(s.global_scale, nv.global_scale);
  const Quantized tensor = quantize_current(x, layout(4, 32, 4, 32), formats::e4m3, false);
  const Quantized row = row_slice(tensor, 1, 1);
  ASSERT_EQ(row.tiles.size(), 1u);
  EXPECT_EQ(std::tie(row.block_rows, row.tiles[0].rows), std::make_tuple(1u, 1u));
  EXPECT_EQ(row.tiles[0].scale, tensor.tiles[0].scale);
  const Quantized blocks = quantize_current(x, layout(4, 32, 2, 16), formats::e4m3, false);
  EXPECT_EQ(row_slice(blocks, 2, 2).tiles.size(), 2u);
  EXPECT_THROW(row_slice(blocks, 1, 2), std::invalid_argument);
  EXPECT_THROW(row_slice(nv, 3, 2), std::invalid_argument);
}

TEST(Fp8, CurrentAndBlockScalesPerTile) {
  // Two 1x4 tiles: amax 7 (scale 64) and amax 0.875 (scale 512), values exact after scaling.
  const std::vector<float> x = {7, -3.5f, 1, 0, 0.875f, 0.5f, -0.25f, 0x1p-30f};
  const Quantized q = quantize_current(x, layout(1, 8, 1, 4), formats::e4m3, false);
  ASSERT_EQ(q.tiles.size(), 2u);
  EXPECT_EQ(q.tiles[0].scale, 64.0);
  EXPECT_EQ(q.tiles[0].scale_bits, 0x42800000u);
  EXPECT_EQ(q.tiles[1].scale, 512.0);
  EXPECT_EQ(q.values[0], 448.0);
  EXPECT_EQ(q.dequantized[1], -3.5);
  EXPECT_EQ(q.dequantized[4], 0.875);
  // 2^-30 * 512 = 2^-21 is below e4m3's smallest subnormal 2^-9: flushed.
  EXPECT_EQ(q.dequantized[7], 0.0);
  EXPECT_EQ(q.events.flushed, 1u);
  EXPECT_FALSE(q.tiles[1].lost);
  // The per-tensor scale of a delayed recipe that the tensor has outgrown: saturation.
  const Quantized d = quantize_with_scale(x, layout(1, 8, 1, 8), formats::e4m3, 128.0f);
  EXPECT_EQ(d.values[0], 448.0);  // 7 * 128 = 896
  EXPECT_EQ(d.dequantized[0], 3.5);
  EXPECT_EQ(d.events.saturated, 1u);
}

TEST(Nvfp4, ExactValuesSurviveAndTinyBlocksNextToLargeOnesAreLost) {
  std::vector<float> x = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -6, -4, -3, -2, -1.5f, -1, -0.5f, 0};
  const Quantized q = quantize_nvfp4(x, layout(1, 16, 1, 16));
  EXPECT_EQ(q.global_scale, 448.0);         // 448 * 6 / 6
  EXPECT_EQ(q.tiles[0].scale_bits, 0x7Eu);  // block scale 448 (e4m3 0x7e)
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(q.values[i], x[i]) << i;
    EXPECT_NEAR(q.dequantized[i], x[i], 0x1p-20 * 6) << i;
  }
  // A block of amax 1e-30 beside one of amax 1e6: its e4m3 decode scale 1e-30 * 2688e-6 / 6
  // flushes to zero, and with it the whole block.
  std::vector<float> y(32, 1e-30f);
  y[20] = 1e6f;
  const Quantized lost = quantize_nvfp4(y, layout(1, 32, 1, 16));
  EXPECT_EQ(lost.tiles[0].scale_bits, 0u);
  EXPECT_TRUE(lost.tiles[0].lost);
  EXPECT_EQ(lost.events.blocks_lost, 1u);
  EXPECT_EQ(lost.events.flushed, 16u + 15u);  // the small block, and 1e-30 beside 1e6
  EXPECT_FALSE(lost.tiles[1].lost);
}

// A 16 x 16 block is lost or not by all of its rows: a tiny value in row 5 of one block, beside a
// large one in row 0 of the next, is lost with its block; an all-zero block is not lost.
TEST(Nvfp4, A2dBlockIsLostByAllItsRows) {
  std::vector<float> y(16 * 48, 0.0f);
  y[5 * 48 + 3] = 1e-30f;  // block 0, row 5
  y[0 * 48 + 20] = 1e6f;   // block 1, row 0
  const Quantized q = quantize_nvfp4(y, layout(16, 48, 16, 16));
  ASSERT_EQ(q.tiles.size(), 3u);
  EXPECT_TRUE(q.tiles[0].lost);
  EXPECT_FALSE(q.tiles[1].lost);
  EXPECT_FALSE(q.tiles[2].lost);  // all zeros: nothing to lose
  EXPECT_EQ(q.events.blocks_lost, 1u);
  EXPECT_EQ(q.events.flushed, 1u);
}

}  // namespace
}  // namespace ampbench::quant
