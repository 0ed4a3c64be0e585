// The GPU quantizers' argument checks (kernels/quant_kernels.hpp), which run before any CUDA call:
// they need no device.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/quant_kernels.hpp"

namespace ampbench::kernels {
namespace {

using numeric::Rounding;
using numeric::scale_math::TileRule;

std::string error_of(const std::vector<float>& x, const quant::Layout& l, TileRule rule,
                     float given = 1) {
  try {
    (void)quantize_on_device(x, l, numeric::formats::e4m3, rule, given);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(QuantKernelArguments, AreCheckedBeforeTheDevice) {
  const std::vector<float> x(64, 1.0f);
  const quant::Layout ok{.rows = 2, .cols = 32, .block_rows = 1, .block_cols = 32};
  quant::Layout bad_block = ok;
  bad_block.block_cols = 24;
  EXPECT_EQ(error_of(x, bad_block, TileRule::mx_ocp),
            "a block of 24 columns does not divide the tensor's 32 columns");
  quant::Layout bad_shape = ok;
  bad_shape.rows = 3;
  EXPECT_EQ(error_of(x, bad_shape, TileRule::mx_ocp),
            "the tensor has 64 values, its shape 3x32 needs 96");
  quant::Layout toward_zero = ok;
  toward_zero.mode = Rounding::toward_zero;
  EXPECT_EQ(error_of(x, toward_zero, TileRule::nvfp4),
            "quantize_on_device: the rounding must be nearest_even or stochastic_proportional");
  const quant::Layout whole{.rows = 2, .cols = 32, .block_rows = 2, .block_cols = 32};
  EXPECT_NE(error_of(x, whole, TileRule::fp32_given, 0.0f).find("is not a positive finite"),
            std::string::npos);
  EXPECT_NE(error_of(x, whole, TileRule::fp32_given, INFINITY).find("is not a positive finite"),
            std::string::npos);
  EXPECT_EQ(error_of(x, ok, TileRule::fp32_given, 2.0f),
            "quantize_on_device: a given per-tensor scale needs one block: the whole tensor");
}

}  // namespace
}  // namespace ampbench::kernels
