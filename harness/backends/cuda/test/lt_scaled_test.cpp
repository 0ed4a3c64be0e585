// cuBLASLt's scaled GEMMs (LtMatmul::run_scaled, through scaled_product and scaled_product_fp8)
// on the device, each against a product the test knows exactly: element codes of small integers
// (FP8) or e2m1 values, each scale block its own power of two varying along K and along the rows,
// so that every partial sum is exact in any order and any fp32 accumulator, and the product is
// exact only if the device reads every code and every scale where the test put it; the shapes pad
// the scale layouts (rows to 128, blocks to 4, the 128x128 stride).
// - per-tensor FP8 (e4m3 x e4m3 and x e5m2, with and without fast accumulation): sm_89 on;
// - an FP8 D (e4m3) with a D scale and the D amax output: sm_89 on;
// - 1x128 by 128x128 and 1x128 by 1x128 fp32 tiles (fp8-block): sm_90;
// - MX blocks of 32 (e4m3) and NVFP4 blocks of 16 (e2m1, alpha the tensor scales): sm_100 on;
// - Hopper's limited FP8 accumulation on a long K, printed beside the Hopper model's prediction.
// A test skips where, and only where, why_no_scaled_gemm refuses its operands on this device
// (without a device, everything skips); a cuBLASLt refusal of what it allows is a failure.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "harness/backends/cuda/scaled_gemm.hpp"
#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

class LtScaledTest : public kernels::test::GpuTest {
 protected:
  static int cc() { return device().compute_major * 10 + device().compute_minor; }
};

const numeric::Format& format_of(ScaledElement e) {
  switch (e) {
    case ScaledElement::e4m3: return numeric::formats::e4m3;
    case ScaledElement::e5m2: return numeric::formats::e5m2;
    case ScaledElement::e2m1: return numeric::formats::e2m1;
  }
  throw std::logic_error("unknown element");
}

// An operand built by hand: element (r, c) is the code of value(r, c) (exact in the format), the
// scale of (r, block b) 2^exponent(r, b) (the same for every row of a 128-row block under
// 128x128 tiles), placed where scale_index says cuBLAS reads it. `values` holds the dequantized
// operand, row-major.
struct HandOperand {
  ScaledOperand packed;
  std::vector<double> values;
};
HandOperand hand_operand(ScaledElement element, ScaleMode mode, std::size_t rows, std::size_t k,
                         const std::function<double(std::size_t, std::size_t)>& value,
                         const std::function<int(std::size_t, std::size_t)>& exponent) {
  HandOperand h;
  ScaledOperand& o = h.packed;
  o.shape = ScaledShape{.element = element, .mode = mode, .rows = rows, .k = k};
  const numeric::Format& f = format_of(element);
  const bool fp4 = element == ScaledElement::e2m1;
  o.codes.assign(fp4 ? rows * k / 2 : rows * k, 0);
  const std::size_t block = scale_block(mode, k);
  const bool byte_scales = mode == ScaleMode::vec32_ue8m0 || mode == ScaleMode::vec16_ue4m3;
  o.scales.assign(scale_entries(mode, rows, k) * (byte_scales ? 1 : 4), 0);
  h.values.resize(rows * k);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t b = 0; b < k / block; ++b) {
      const int e = exponent(mode == ScaleMode::blk128x128_32f ? r / 128 * 128 : r, b);
      const std::size_t at = scale_index(mode, rows, k, r, b);
      if (mode == ScaleMode::vec32_ue8m0) {
        o.scales[at] = static_cast<std::uint8_t>(e + 127);
      } else if (mode == ScaleMode::vec16_ue4m3) {
        o.scales[at] = static_cast<std::uint8_t>((e + 7) << 3);  // a normal UE4M3 power of two
      } else {
        const auto bits = std::bit_cast<std::uint32_t>(std::ldexp(1.0f, e));
        for (std::size_t i = 0; i < 4; ++i) o.scales[4 * at + i] = std::uint8_t(bits >> (8 * i));
      }
      for (std::size_t c = b * block; c < (b + 1) * block; ++c) {
        const double v = value(r, c);
        const numeric::Rounded q = numeric::round_to(f, numeric::Rounding::nearest_even, v);
        EXPECT_EQ(q.value, v) << "not exact in " << f.name;
        const std::size_t i = r * k + c;
        if (fp4) {
          o.codes[i / 2] |= static_cast<std::uint8_t>((q.bits & 0xF) << (4 * (i % 2)));
        } else {
          o.codes[i] = static_cast<std::uint8_t>(q.bits);
        }
        h.values[i] = std::ldexp(v, e);
      }
    }
  }
  return h;
}

// The exact product alpha A B^T of two hand operands (exact in binary64 for these sizes).
std::vector<double> exact_product(const HandOperand& a, const HandOperand& b, double alpha) {
  const std::size_t m = a.packed.shape.rows, n = b.packed.shape.rows, k = a.packed.shape.k;
  std::vector<double> d(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t l = 0; l < k; ++l) s += a.values[i * k + l] * b.values[j * k + l];
      d[i * n + j] = alpha * s;
    }
  }
  return d;
}

// The product on the device, printing what ran. A device refusing it is not a skip here: each
// test skips first, and only, where why_no_scaled_gemm refuses the operands on this device.
std::vector<float> run_on_device(const ScaledOperand& a, const ScaledOperand& b, bool fast_accum) {
  nlohmann::json ran;
  std::vector<float> d = scaled_product(a, b, fast_accum, &ran);
  std::cout << ran.dump() << "\n";
  return d;
}

void expect_exact(const std::vector<float>& d, const std::vector<double>& exact, std::size_t n) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    if (static_cast<double>(d[i]) != exact[i] && ++wrong <= 5) {
      ADD_FAILURE() << "D(" << i / n << ", " << i % n << ") = " << d[i] << ", exact " << exact[i];
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << exact.size() << " outputs";
}

double small_int(std::size_t r, std::size_t c, std::size_t salt) {
  return static_cast<double>((r * 7 + c * 5 + salt) % 9) - 4;  // -4 .. 4
}

TEST_F(LtScaledTest, PerTensorFp8SmallIntegerProductsAreExact) {
  constexpr std::size_t m = 32, n = 16, k = 64;
  if (auto why = why_no_scaled_gemm(ScaledShape{.rows = m, .k = k}, ScaledShape{.rows = n, .k = k},
                                    cc(), true)) {
    GTEST_SKIP() << *why;
  }
  for (const ScaledElement bt : {ScaledElement::e4m3, ScaledElement::e5m2}) {
    const HandOperand a = hand_operand(
        ScaledElement::e4m3, ScaleMode::scalar_32f, m, k,
        [](std::size_t r, std::size_t c) { return small_int(r, c, 0); },
        [](std::size_t, std::size_t) { return -2; });
    const HandOperand b = hand_operand(
        bt, ScaleMode::scalar_32f, n, k,
        [](std::size_t r, std::size_t c) { return small_int(r, c, 3); },
        [](std::size_t, std::size_t) { return -1; });
    for (const bool fast : {false, true}) {
      SCOPED_TRACE(std::string(scaled_element_name(bt)) + (fast ? " fast accum" : ""));
      expect_exact(run_on_device(a.packed, b.packed, fast), exact_product(a, b, 1.0), n);
    }
  }
}

// One nonzero per row of A along K: every output is one product from {1, 2, 3, 4, 6, 8}^2, which
// e4m3 holds after any power-of-two D scale in its range; amax is the largest |A B| before it.
TEST_F(LtScaledTest, Fp8OutputAndItsAmax) {
  constexpr std::size_t m = 16, n = 32, k = 32;
  const double values[] = {1, -2, 3, 4, -6, 8};
  const HandOperand a = hand_operand(
      ScaledElement::e4m3, ScaleMode::scalar_32f, m, k,
      [&](std::size_t r, std::size_t c) { return c == (r * 3) % k ? values[r % 6] : 0.0; },
      [](std::size_t, std::size_t) { return 0; });
  const HandOperand b = hand_operand(
      ScaledElement::e4m3, ScaleMode::scalar_32f, n, k,
      [&](std::size_t r, std::size_t c) { return values[(r + c) % 6]; },
      [](std::size_t, std::size_t) { return 0; });
  if (auto why = why_no_scaled_gemm(a.packed.shape, b.packed.shape, cc(), false)) {
    GTEST_SKIP() << *why;
  }
  nlohmann::json ran;
  const Fp8Product d =
      scaled_product_fp8(a.packed, b.packed, ScaledElement::e4m3, 0.25f, false, &ran);
  std::cout << ran.dump() << "\n";
  const std::vector<double> exact = exact_product(a, b, 1.0);
  double amax = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    amax = std::max(amax, std::abs(exact[i]));
    const numeric::Rounded q =
        numeric::round_to(numeric::formats::e4m3, numeric::Rounding::nearest_even, exact[i] * 0.25);
    ASSERT_EQ(q.value, exact[i] * 0.25) << "the test's outputs must be exact in e4m3";
    ASSERT_EQ(d.codes[i], q.bits) << "D(" << i / n << ", " << i % n << ") of " << exact[i] * 0.25;
  }
  EXPECT_EQ(d.amax, amax) << "the D amax (cuBLASLt: before the D scale)";
}

// Each scale block's exponent in -2 .. 2, varying along K and along the rows (b 7 and r 3 are
// both coprime to 5), so that a layout that swaps blocks within a row or rows within a column
// changes the product.
auto varied(int salt) {
  return [salt](std::size_t r, std::size_t b) {
    return static_cast<int>((r * 3 + b * 7 + static_cast<std::size_t>(salt)) % 5) - 2;
  };
}
auto small_ints(std::size_t salt) {
  return [salt](std::size_t r, std::size_t c) { return small_int(r, c, salt); };
}

// fp8-block: x's 1x128 tiles by w's 128x128 tiles (fprop), and 1x128 by 1x128 (wgrad's dy^T x^T).
// 144 rows of x and K = 640 (5 blocks; the 128x128 layout's stride padded to 8).
TEST_F(LtScaledTest, Fp8BlockTilesReadWhereCublasSays) {
  constexpr std::size_t m = 144, n = 256, k = 640;
  const HandOperand x =
      hand_operand(ScaledElement::e4m3, ScaleMode::vec128_32f, m, k, small_ints(1), varied(0));
  for (const ScaleMode bm : {ScaleMode::blk128x128_32f, ScaleMode::vec128_32f}) {
    SCOPED_TRACE(std::string(scale_mode_name(bm)));
    const HandOperand w = hand_operand(ScaledElement::e4m3, bm, n, k, small_ints(2), varied(1));
    if (auto why = why_no_scaled_gemm(x.packed.shape, w.packed.shape, cc(), false)) {
      GTEST_SKIP() << *why;
    }
    expect_exact(run_on_device(x.packed, w.packed, false), exact_product(x, w, 1.0), n);
  }
}

// MX: 144 rows (padded to 256) and K = 96 (3 blocks, padded to 4).
TEST_F(LtScaledTest, MxBlockScalesReadWhereCublasSays) {
  constexpr std::size_t m = 144, n = 128, k = 96;
  const HandOperand a =
      hand_operand(ScaledElement::e4m3, ScaleMode::vec32_ue8m0, m, k, small_ints(1), varied(0));
  const HandOperand b =
      hand_operand(ScaledElement::e4m3, ScaleMode::vec32_ue8m0, n, k, small_ints(2), varied(1));
  if (auto why = why_no_scaled_gemm(a.packed.shape, b.packed.shape, cc(), false)) {
    GTEST_SKIP() << *why;
  }
  expect_exact(run_on_device(a.packed, b.packed, false), exact_product(a, b, 1.0), n);
}

// NVFP4: 144 rows and K = 96 (6 blocks, padded to 8), alpha 2^-3 from the tensor scales.
TEST_F(LtScaledTest, Nvfp4BlockScalesReadWhereCublasSays) {
  constexpr std::size_t m = 144, n = 128, k = 96;
  const double fp4[] = {0, 0.5, -1, 1.5, -2, 3, -4, 6};
  const auto value = [&](std::size_t salt) {
    return [&, salt](std::size_t r, std::size_t c) { return fp4[(r * 3 + c * 5 + salt) % 8]; };
  };
  HandOperand a =
      hand_operand(ScaledElement::e2m1, ScaleMode::vec16_ue4m3, m, k, value(1), varied(0));
  HandOperand b =
      hand_operand(ScaledElement::e2m1, ScaleMode::vec16_ue4m3, n, k, value(2), varied(1));
  a.packed.tensor_decode = 0.25f;  // alpha = 2^-3
  b.packed.tensor_decode = 0.5f;
  if (auto why = why_no_scaled_gemm(a.packed.shape, b.packed.shape, cc(), false)) {
    GTEST_SKIP() << *why;
  }
  expect_exact(run_on_device(a.packed, b.packed, false), exact_product(a, b, 0.125), n);
}

TEST_F(LtScaledTest, PromotionKeepsALongKExact) {
  constexpr std::size_t m = 16, k = 32768;
  const auto ones = [](std::size_t, std::size_t) { return 256.0; };
  const auto scale = [](std::size_t, std::size_t) { return -8; };
  const HandOperand a = hand_operand(ScaledElement::e4m3, ScaleMode::scalar_32f, m, k, ones, scale);
  if (auto why = why_no_scaled_gemm(a.packed.shape, a.packed.shape, cc(), true)) {
    GTEST_SKIP() << *why;
  }
  const std::vector<float> promoted = run_on_device(a.packed, a.packed, false);
  const std::vector<float> fast = run_on_device(a.packed, a.packed, true);
  std::cout << "finding: ones(16 x 32768) elements 256 on sm_" << cc() << ": D = " << promoted[0]
            << " promoted, " << fast[0]
            << " with fast accumulation (the Hopper model: 32768 promoted every 128, 16384 "
               "never; exact: 32768)\n";
  // Hopper's cuBLASLt promotes without fast accumulation (DeepSeek-V3, Transformer Engine);
  // elsewhere what it does is the finding.
  if (cc() == 90) {
    for (const float v : promoted) ASSERT_EQ(v, 32768.0f);
  }
}

}  // namespace
}  // namespace ampbench::backends::cuda
