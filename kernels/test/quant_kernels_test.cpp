// The GPU quantizers (kernels/quant_kernels.hpp) against the reference quantizers of
// harness/quant/scaling.hpp, bit for bit: every element code, every tile's scale pattern and
// amax, NVFP4's tensor scales; under every rule (fp32 given, per-tile and power-of-two scales,
// OCP's and TE's MX scales for the five MX element formats, NVFP4), in nearest-even and stochastic
// rounding, on normal and wide inputs with zero, NaN, infinity and subnormal tiles planted, and on
// a tensor of 32M values (two grid-stride rounds). Skipped without a device.
#include "kernels/quant_kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "harness/quant/test/reference_difference.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

namespace formats = numeric::formats;
using numeric::Rounding;
using numeric::scale_math::TileRule;

class QuantKernels : public test::GpuTest {};

// rows x cols values: N(0, 1), or (wide) log-uniform magnitudes over 2^-140..2^120 with random
// signs; then a zero tile, a tile with a NaN, one with an infinity and one of binary32 subnormals,
// each tile_cols wide in row 0 (where the tensor has four such tiles).
std::vector<float> input(std::size_t rows, std::size_t cols, bool wide, std::size_t tile_cols,
                         std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-140.0f, 120.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) {
    v = wide ? std::exp2(exponent(rng)) * ((rng() & 1) ? -1.0f : 1.0f) : normal(rng);
  }
  if (cols >= 4 * tile_cols) {
    for (std::size_t j = 0; j < tile_cols; ++j) {
      x[j] = 0.0f;
      x[3 * tile_cols + j] = std::ldexp(static_cast<float>(j + 1), -149);
    }
    x[tile_cols + 1] = -std::numeric_limits<float>::quiet_NaN();
    x[2 * tile_cols + 2] = std::numeric_limits<float>::infinity();
  }
  return x;
}

// The first difference between the device's result and the reference's (the tiles' amaxes too),
// or "".
std::string difference(const DeviceQuantized& d, const quant::Quantized& ref) {
  for (std::size_t t = 0; t < std::min(d.tile_amax.size(), ref.tiles.size()); ++t) {
    if (static_cast<double>(d.tile_amax[t]) != ref.tiles[t].amax) {
      return "tile " + std::to_string(t) + ": amax " + std::to_string(d.tile_amax[t]) +
             ", reference " + std::to_string(ref.tiles[t].amax);
    }
  }
  return quant::test::reference_difference(d, ref);
}

quant::Layout layout(std::size_t rows, std::size_t cols, std::size_t br, std::size_t bc,
                     Rounding mode, std::uint64_t seed) {
  return {
      .rows = rows, .cols = cols, .block_rows = br, .block_cols = bc, .mode = mode, .seed = seed};
}

TEST_F(QuantKernels, EveryRuleMatchesTheReference) {
  std::uint64_t seed = 40;
  for (const bool wide : {false, true}) {
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      SCOPED_TRACE(std::string(wide ? "wide" : "normal") +
                   (mode == Rounding::nearest_even ? " nearest" : " stochastic"));
      for (const numeric::Format* e : {&formats::e4m3, &formats::e5m2}) {
        const auto whole = layout(64, 256, 64, 256, mode, ++seed);
        const auto x = input(64, 256, wide, 32, seed);
        EXPECT_EQ(difference(quantize_on_device(x, whole, *e, TileRule::fp32_given, 3.0f),
                             quant::quantize_with_scale(x, whole, *e, 3.0f)),
                  "")
            << e->name << " given";
        for (const auto& l :
             {whole, layout(64, 256, 1, 128, mode, seed), layout(128, 256, 128, 128, mode, seed)}) {
          // The special values planted in groups of 32 columns of row 0: an all-zero group, one
          // holding a NaN, one an infinity, one of subnormals.
          const auto y = input(l.rows, l.cols, wide, 32, seed);
          EXPECT_EQ(difference(quantize_on_device(y, l, *e, TileRule::fp32_amax),
                               quant::quantize_current(y, l, *e, false)),
                    "")
              << e->name << " tiles " << l.block_rows << "x" << l.block_cols;
          EXPECT_EQ(difference(quantize_on_device(y, l, *e, TileRule::fp32_amax_pow2),
                               quant::quantize_current(y, l, *e, true)),
                    "")
              << e->name << " pow2 tiles " << l.block_rows << "x" << l.block_cols;
        }
      }
      for (const numeric::Format* e :
           {&formats::e4m3, &formats::e5m2, &formats::e3m2, &formats::e2m3, &formats::e2m1}) {
        const auto l = layout(64, 256, 1, 32, mode, ++seed);
        const auto x = input(64, 256, wide, 32, seed);
        EXPECT_EQ(difference(quantize_on_device(x, l, *e, TileRule::mx_ocp),
                             quant::quantize_mx(x, l, *e)),
                  "")
            << e->name << " mx";
        EXPECT_EQ(difference(quantize_on_device(x, l, *e, TileRule::mx_round_up),
                             quant::quantize_mx(x, l, *e, quant::MxScale::round_up)),
                  "")
            << e->name << " mx round up";
      }
      for (const auto& l :
           {layout(64, 256, 1, 16, mode, ++seed), layout(64, 256, 16, 16, mode, seed)}) {
        const auto x = input(64, 256, wide, 16, seed);
        EXPECT_EQ(difference(quantize_on_device(x, l, formats::e2m1, TileRule::nvfp4),
                             quant::quantize_nvfp4(x, l)),
                  "")
            << "nvfp4 " << l.block_rows << "x16";
      }
    }
  }
}

// 32M values (twice what 65536 blocks of 256 threads cover), 1M tiles of 1x32: the element
// kernel's grid-stride loop takes a second round. The fast path gives the reference's codes and
// scales (quant_scaling_fast_test) in less time.
TEST_F(QuantKernels, ALargeTensorMatchesTheFastPath) {
  const auto l = layout(8192, 4096, 1, 32, Rounding::stochastic_proportional, 99);
  const auto x = input(8192, 4096, true, 32, 99);
  const DeviceQuantized d = quantize_on_device(x, l, formats::e4m3, TileRule::mx_ocp);
  const quant::BlockScaled fast = quant::quantize_mx_fast(x, l, formats::e4m3);
  ASSERT_EQ(d.bits.size(), fast.bits.size());
  ASSERT_EQ(d.scale_bits.size(), fast.scale_bits.size());
  std::size_t differ = 0;
  for (std::size_t k = 0; k < d.bits.size(); ++k) differ += d.bits[k] != fast.bits[k];
  for (std::size_t t = 0; t < d.scale_bits.size(); ++t) {
    differ += d.scale_bits[t] != fast.scale_bits[t];
  }
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace ampbench::kernels
