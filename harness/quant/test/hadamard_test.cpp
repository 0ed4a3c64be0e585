// The 16x16 random Hadamard transform (hadamard.hpp) against independent oracles: the Sylvester
// construction, H H^T = 16 I in integers, the inverse on small integers, the weight-gradient
// product unchanged (exact dot products from reference/exact), and NVFP4's quantization error on
// blocks with an outlier, with and without the transform.
#include "harness/quant/hadamard.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/quant/scaling.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::quant {
namespace {

constexpr std::size_t kN = kHadamardSize;
using Matrix = std::array<std::array<int, kN>, kN>;

// Sylvester's construction written out: H_1 = [1], H_2n = [[H_n, H_n], [H_n, -H_n]].
Matrix sylvester() {
  Matrix h{};
  h[0][0] = 1;
  for (std::size_t n = 1; n < kN; n *= 2) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        h[i][j + n] = h[i][j];
        h[i + n][j] = h[i][j];
        h[i + n][j + n] = -h[i][j];
      }
    }
  }
  return h;
}

int sign(std::uint16_t signs, std::size_t i) {
  return ((signs >> i) & 1u) != 0 ? -1 : 1;
}

// Deterministic N(0, 1) samples (Box-Muller on splitmix64), the same on every platform.
std::vector<float> normal(std::size_t count, std::uint64_t seed) {
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double u1 = (static_cast<double>(numeric::splitmix64(seed, 2 * i) >> 11) + 0.5) * 0x1p-53;
    const double u2 = static_cast<double>(numeric::splitmix64(seed, 2 * i + 1) >> 11) * 0x1p-53;
    out[i] = static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
  }
  return out;
}

TEST(Hadamard, EntriesAreSylvesterAndOrthogonal) {
  const Matrix h = sylvester();
  for (std::size_t i = 0; i < kN; ++i) {
    for (std::size_t j = 0; j < kN; ++j) {
      EXPECT_EQ(hadamard_entry(i, j), h[i][j]) << i << "," << j;
      EXPECT_EQ(hadamard_entry(i, j), hadamard_entry(j, i));
    }
  }
  // H H^T = 16 I and (D H)(D H)^T = 16 I, in integers: exactly.
  for (const std::uint16_t signs : {std::uint16_t{0}, kTeWgradSigns, hadamard_signs(7)}) {
    for (std::size_t i = 0; i < kN; ++i) {
      for (std::size_t j = 0; j < kN; ++j) {
        int plain = 0, signed_sum = 0;
        for (std::size_t k = 0; k < kN; ++k) {
          plain += hadamard_entry(i, k) * hadamard_entry(j, k);
          signed_sum +=
              sign(signs, i) * hadamard_entry(i, k) * sign(signs, j) * hadamard_entry(j, k);
        }
        EXPECT_EQ(plain, i == j ? 16 : 0);
        EXPECT_EQ(signed_sum, i == j ? 16 : 0);
      }
    }
  }
}

TEST(Hadamard, TransformerEngineSignVector) {
  // TE's get_wgrad_sign_vector, written out.
  const int te[kN] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  for (std::size_t i = 0; i < kN; ++i) EXPECT_EQ(sign(kTeWgradSigns, i), te[i]) << i;
  EXPECT_EQ(hadamard_signs(std::nullopt), kTeWgradSigns);
  EXPECT_EQ(hadamard_signs(std::optional<std::uint64_t>{5}), hadamard_signs(5));
  EXPECT_NE(hadamard_signs(5), hadamard_signs(6));
}

TEST(Hadamard, UnitVectorsGiveTheRowsOfDHOverFour) {
  // u = e_k: y = e_k (D H) / 4 = d_k H[k][*] / 4.
  for (std::size_t k = 0; k < kN; ++k) {
    std::vector<float> u(kN, 0.0f);
    u[k] = 1;
    const std::vector<float> y = hadamard_transform(u, 1, kN, kTeWgradSigns);
    for (std::size_t j = 0; j < kN; ++j) {
      EXPECT_EQ(y[j], 0.25f * static_cast<float>(sign(kTeWgradSigns, k) * hadamard_entry(k, j)));
    }
  }
}

TEST(Hadamard, InverseReturnsSmallIntegersExactly) {
  std::vector<float> x(4 * 48);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(static_cast<int>(numeric::splitmix64(3, i) % 2001) - 1000);
  }
  for (const std::uint16_t signs : {kTeWgradSigns, hadamard_signs(11)}) {
    const std::vector<float> y = hadamard_transform(x, 4, 48, signs);
    EXPECT_EQ(hadamard_inverse(y, 4, 48, signs), x);
  }
}

TEST(Hadamard, ColumnsMustBeAMultipleOf16) {
  const std::vector<float> x(2 * 24, 1.0f);
  try {
    (void)hadamard_transform(x, 2, 24, kTeWgradSigns);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "the 16-wide Hadamard transform does not divide the tensor's 24 columns");
  }
}

// The 16 terms d_i H[i][j] u_i / 4 of output j of the run starting at `base`.
std::vector<double> terms(const std::vector<float>& u, std::size_t base, std::size_t j,
                          std::uint16_t signs) {
  std::vector<double> t(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    t[i] = 0.25 * sign(signs, i) * hadamard_entry(i, j) * static_cast<double>(u[base + i]);
  }
  return t;
}

TEST(Hadamard, OutputsAreCorrectlyRoundedOnNormalData) {
  const std::vector<float> x = normal(8 * 64, 21);
  const std::vector<float> y = hadamard_transform(x, 8, 64, kTeWgradSigns);
  for (std::size_t base = 0; base < x.size(); base += kN) {
    for (std::size_t j = 0; j < kN; ++j) {
      const reference::ExactValue exact = reference::exact_sum(terms(x, base, j, kTeWgradSigns));
      EXPECT_EQ(y[base + j],
                exact.round(numeric::formats::fp32, numeric::Rounding::nearest_even).value);
    }
  }
}

// dW = dY^T X reduces over the tokens K; the operands as the GEMM reads them are A = X^T (m x K)
// and B = dY^T (n x K), and dW[i][j] = sum_k B[i][k] A[j][k]. Transforming every row of both
// along K by the orthogonal (D H)/4 leaves each of these sums unchanged.
TEST(Hadamard, WeightGradientUnchangedExactly) {
  constexpr std::size_t m = 3, n = 4, k = 64;
  // Binary32 values with 24-bit significands and exponents within 4 binades: every transformed
  // value (a sum of 16 of them over 4) is exact in binary64, so the exact dot products of the
  // exact transforms are those of the real-number transform.
  const auto operand = [](std::size_t rows, std::uint64_t seed) {
    std::vector<float> v(rows * k);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint64_t r = numeric::splitmix64(seed, i);
      const double significand = static_cast<double>((r & 0xffffff) | 0x800000);
      v[i] = static_cast<float>(std::ldexp(significand, -24 + static_cast<int>((r >> 24) % 4)) *
                                (((r >> 30) & 1) != 0 ? -1 : 1));
    }
    return v;
  };
  const std::vector<float> a = operand(m, 1), b = operand(n, 2);
  const std::uint16_t signs = hadamard_signs(99);
  // The exact transforms, checked exact: the 16 terms minus the binary64 result sum to zero.
  const auto exact_transform = [&](const std::vector<float>& v) {
    std::vector<double> out(v.size());
    for (std::size_t base = 0; base < v.size(); base += kN) {
      for (std::size_t j = 0; j < kN; ++j) {
        std::vector<double> t = terms(v, base, j, signs);
        double s = 0;
        for (const double term : t) s += term;
        t.push_back(-s);
        EXPECT_TRUE(reference::exact_sum(t).is_zero());
        out[base + j] = s;
      }
    }
    return out;
  };
  const std::vector<double> ah = exact_transform(a), bh = exact_transform(b);
  // The implementation's binary32 transform is that exact transform rounded once.
  const std::vector<float> a32 = hadamard_transform(a, m, k, signs);
  const std::vector<float> b32 = hadamard_transform(b, n, k, signs);
  for (std::size_t i = 0; i < ah.size(); ++i) EXPECT_EQ(a32[i], static_cast<float>(ah[i]));
  for (std::size_t i = 0; i < bh.size(); ++i) EXPECT_EQ(b32[i], static_cast<float>(bh[i]));

  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < m; ++j) {
      const std::span<const float> bi(b.data() + i * k, k), aj(a.data() + j * k, k);
      const std::span<const double> bhi(bh.data() + i * k, k), ahj(ah.data() + j * k, k);
      // Exact arithmetic: the same exact value, every bit.
      EXPECT_EQ(reference::exact_dot(numeric::formats::fp64, bhi, ahj).to_hex(),
                reference::exact_dot(bi, aj).to_hex());
      // Binary32 transforms: each factor within a relative 2^-24 of the exact one, so the exact
      // difference of the two dot products is at most (2u + u^2) sum |bh ah|, u = 2^-24.
      std::vector<float> left(b32.begin() + i * k, b32.begin() + (i + 1) * k);
      std::vector<float> right(a32.begin() + j * k, a32.begin() + (j + 1) * k);
      for (std::size_t t = 0; t < k; ++t) {
        left.push_back(-bi[t]);
        right.push_back(aj[t]);
      }
      const double difference = std::fabs(reference::exact_dot(left, right).to_double());
      std::vector<double> abs_b(bhi.begin(), bhi.end()), abs_a(ahj.begin(), ahj.end());
      for (double& v : abs_b) v = std::fabs(v);
      for (double& v : abs_a) v = std::fabs(v);
      const double magnitude =
          reference::exact_dot(numeric::formats::fp64, abs_b, abs_a).to_double();
      const double u = 0x1p-24;
      EXPECT_LE(difference, (2 * u + u * u) * magnitude * (1 + 0x1p-50)) << i << "," << j;
    }
  }
}

// NVFP4 (1x16 blocks along K) of rows x cols values: the sum of squared errors in the original
// domain, with or without the transform (the dequantized transform mapped back by the exact
// inverse in binary64).
double nvfp4_squared_error(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                           bool transform) {
  Layout layout;
  layout.rows = rows;
  layout.cols = cols;
  layout.block_rows = 1;
  layout.block_cols = 16;
  const std::vector<float> in = transform ? hadamard_transform(x, rows, cols, kTeWgradSigns) : x;
  const Quantized q = quantize_nvfp4(in, layout);
  double sum = 0;
  for (std::size_t base = 0; base < x.size(); base += kN) {
    for (std::size_t i = 0; i < kN; ++i) {
      double back = q.dequantized[base + i];
      if (transform) {
        back = 0;
        for (std::size_t j = 0; j < kN; ++j) {
          back += 0.25 * sign(kTeWgradSigns, i) * hadamard_entry(i, j) * q.dequantized[base + j];
        }
      }
      const double e = back - static_cast<double>(x[base + i]);
      sum += e * e;
    }
  }
  return sum;
}

// Measured, not assumed: on blocks of N(0, 1) values with one outlier each, NVFP4 with nearest
// rounding loses MORE with the transform than without, in the original domain. Without it the
// outlier sets the block scale and is kept almost exactly while the 15 small values flush or round
// coarsely; with it all 16 values become +-outlier/4 plus O(1) noise, which e2m1's top binade
// (4, 6: a step of a third of the block's amax) cannot tell apart. Relative squared errors seen
// (64x256, TE's signs): outlier 8: 0.00708 plain, 0.00983 transformed (1.39x); 32: 0.00785,
// 0.01455 (1.85x); 128: 0.00092, 0.00387 (4.21x); N(0, 1) without outliers: 1.02x.
// docs/scaling.md discusses it; the recipe's transform is for training dynamics the paper
// reports, which a one-tensor error does not show.
TEST(Hadamard, OneOutlierBlocksLoseMoreTransformed) {
  constexpr std::size_t rows = 64, cols = 256;
  const struct {
    double outlier;
    double at_least;  // the ratio transformed / plain must exceed this (measured above it)
  } cases[] = {{8, 1.3}, {32, 1.7}, {128, 4.0}};
  for (const auto& c : cases) {
    std::vector<float> x = normal(rows * cols, 5);
    // One outlier per block of 16 along K, at a position and sign drawn per block.
    for (std::size_t base = 0; base < x.size(); base += kN) {
      const std::uint64_t r = numeric::splitmix64(77, base);
      x[base + r % kN] = static_cast<float>(c.outlier * (((r >> 8) & 1) != 0 ? -1 : 1));
    }
    const double plain = nvfp4_squared_error(x, rows, cols, false);
    const double rotated = nvfp4_squared_error(x, rows, cols, true);
    EXPECT_GT(rotated / plain, c.at_least) << "outlier " << c.outlier;
  }
  const std::vector<float> x = normal(rows * cols, 5);
  const double ratio =
      nvfp4_squared_error(x, rows, cols, true) / nvfp4_squared_error(x, rows, cols, false);
  EXPECT_GT(ratio, 0.95);
  EXPECT_LT(ratio, 1.1);
}

}  // namespace
}  // namespace ampbench::quant
