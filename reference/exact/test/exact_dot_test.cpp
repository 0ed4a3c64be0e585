// Exact dot products, sums and matrix products against MPFR used directly: the exact value (limb
// for limb), its rounding to every format in every mode (against the MPFR rounding oracle), and
// its exact decimal and hex renderings (parsed back by MPFR). Inputs: adversarial cancellation,
// the whole binary64 exponent range, subnormal products, every fast path, lengths 1 to 10^6.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"
#include "reference/exact/accumulator.hpp"
#include "reference/exact/dot.hpp"
#include "reference/exact/test/mpfr_sum.hpp"

namespace ampbench::reference::test {
namespace {

using numeric::Format;
using numeric::Rounding;
namespace formats = numeric::formats;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Random finite values of f: a random binary64 (uniform significand in [1, 2), exponent uniform in
// [low_exponent, high_exponent], random sign) rounded to f toward zero, so that the top binade
// gives f's largest values rather than overflowing.
std::vector<double> random_values(const Format& f, std::size_t n, std::mt19937_64& rng,
                                  int low_exponent, int high_exponent) {
  std::uniform_int_distribution<int> exponent(low_exponent, high_exponent);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  std::vector<double> v(n);
  for (auto& x : v) {
    const double raw = std::ldexp(significand(rng), exponent(rng)) * (rng() & 1 ? -1.0 : 1.0);
    x = numeric::round_to(f, Rounding::toward_zero, raw).value;
  }
  return v;
}

// Checks v against the exact MPFR value: the same number, every rounding the oracle agrees with,
// the decimal and hex strings parse back to it.
void expect_matches(const ExactValue& v, const Mp& expected, const std::string& what) {
  ASSERT_EQ(v.kind(), ExactKind::finite) << what;
  Mp got;
  to_mpfr(got, v);
  ASSERT_TRUE(mpfr_equal_p(got.get(), expected.get()))
      << what << ": exact value " << v.to_hex() << " differs from MPFR's";

  for (const Format& f : formats::builtin) {
    for (const Rounding mode : numeric::test::kAllModes) {
      const std::uint32_t draws[] = {
          0u, 0x80000000u, 0xFFFFFFFFu,
          static_cast<std::uint32_t>(
              numeric::oracle::stochastic_threshold(numeric::oracle::spec_of(f), expected.get()))};
      for (const std::uint32_t random : draws) {
        const auto want =
            numeric::oracle::round(numeric::oracle::spec_of(f), mode, expected.get(), random);
        const auto have = v.round(f, mode, random);
        const bool same = std::isnan(want.value)
                              ? std::isnan(have.value)
                              : (want.value == have.value &&
                                 std::signbit(want.value) == std::signbit(have.value));
        ASSERT_TRUE(same && want.event == have.event)
            << what << " rounded to " << f.name << " mode " << numeric::rounding_name(mode)
            << " draw " << random << ": got " << have.value << " ("
            << numeric::event_name(have.event) << "), MPFR " << want.value << " ("
            << numeric::event_name(want.event) << ")";
      }
    }
  }

  const mpfr_prec_t digits_precision = Mp::kWide * 2;
  Mp decimal(digits_precision), hex(digits_precision);
  ASSERT_EQ(mpfr_set_str(decimal.get(), v.to_decimal().c_str(), 10, MPFR_RNDN), 0)
      << what << ": decimal " << v.to_decimal() << " is not exact";
  EXPECT_TRUE(mpfr_equal_p(decimal.get(), expected.get())) << what << ": " << v.to_decimal();
  ASSERT_EQ(mpfr_set_str(hex.get(), v.to_hex().c_str(), 0, MPFR_RNDN), 0) << v.to_hex();
  EXPECT_TRUE(mpfr_equal_p(hex.get(), expected.get())) << what << ": " << v.to_hex();
}

void check_dot(const Format& f, const std::vector<double>& a, const std::vector<double>& b,
               const std::string& what) {
  Mp expected;
  exact_dot(expected, a, b);
  expect_matches(reference::exact_dot(f, a, b), expected, what);
}

TEST(ExactDot, HugeCancellationLeavesTheTinyRemainder) {
  const double big = std::ldexp(1.0, 1000);
  const double tiny = std::ldexp(1.0, -1074);
  check_dot(formats::fp64, {big, tiny, -big}, {big, 1.0, big}, "2^2000 + 2^-1074 - 2^2000");
  const ExactValue v =
      reference::exact_dot(formats::fp64, std::vector{big, tiny, -big}, std::vector{big, 1.0, big});
  EXPECT_EQ(v.to_hex(), "0x1p-1074");
  EXPECT_EQ(v.round(formats::fp64, Rounding::nearest_even).value, tiny);
  // Every pair cancels except a product far below: the sum is the smallest product of all.
  check_dot(formats::fp64, {big, tiny, -big, 3.0}, {-big, tiny, -big, 0.0}, "2^-2148");
  EXPECT_EQ(reference::exact_dot(formats::fp64, std::vector{big, tiny, -big},
                                 std::vector{-big, tiny, -big})
                .to_hex(),
            "0x1p-2148");
}

TEST(ExactDot, Fp32CancellationNeedsMoreThanBinary64) {
  // 1e30 * 1e30 - 1e30 * 1e30 + 1: binary64 loses the 1 entirely.
  const double x = static_cast<float>(1e30);
  const ExactValue v =
      reference::exact_dot(formats::fp32, std::vector{x, 1.0, -x}, std::vector{x, 1.0, x});
  EXPECT_EQ(v.to_decimal(), "1e+00");
  check_dot(formats::fp32, {x, 1.0, -x}, {x, 1.0, x}, "fp32 cancellation");
}

TEST(ExactDot, WholeBinary64ExponentRange) {
  std::mt19937_64 rng(20261129);
  for (int trial = 0; trial < 20; ++trial) {
    const auto a = random_values(formats::fp64, 64, rng, -1074, 1000);
    const auto b = random_values(formats::fp64, 64, rng, -1074, 1000);
    // Products may overflow binary64 (up to 2^2001) and go far below its subnormals: the exact
    // accumulator holds them all.
    check_dot(formats::fp64, a, b, "fp64 trial " + std::to_string(trial));
  }
}

TEST(ExactDot, SubnormalProducts) {
  const double fp16_min = std::ldexp(1.0, -24);
  const double fp32_min = std::ldexp(1.0, -149);
  const double fp64_min = std::ldexp(1.0, -1074);
  check_dot(formats::fp16, {fp16_min, -3 * fp16_min}, {fp16_min, 5 * fp16_min},
            "fp16 subnormal products");
  check_dot(formats::fp32, {fp32_min, 7 * fp32_min}, {-fp32_min, fp32_min}, "fp32 subnormals");
  check_dot(formats::fp64, {fp64_min, fp64_min}, {fp64_min, 3 * fp64_min}, "fp64 subnormals");
  check_dot(formats::e4m3, {std::ldexp(1.0, -9)}, {std::ldexp(1.0, -9)}, "e4m3 2^-18");
  check_dot(formats::e5m2, {std::ldexp(1.0, -16)}, {-std::ldexp(3.0, -16)}, "e5m2");
}

TEST(ExactDot, EveryFormatAndFastPathAgreesWithMpfr) {
  std::mt19937_64 rng(7);
  for (const Format& f : formats::builtin) {
    SCOPED_TRACE(f.name);
    for (const std::size_t n : {1u, 2u, 3u, 100u, 4099u}) {
      // Values over the format's whole range, subnormals and the top binade included.
      const auto a = random_values(f, n, rng, f.emin - f.precision, f.emax);
      const auto b = random_values(f, n, rng, f.emin - f.precision, f.emax);
      check_dot(f, a, b, std::string(f.name) + " n=" + std::to_string(n));
    }
  }
}

TEST(ExactDot, NarrowAccumulatorIsUsedWhereProductsFit) {
  EXPECT_TRUE(NarrowAccumulator::fits(formats::fp16));
  EXPECT_TRUE(NarrowAccumulator::fits(formats::e4m3));
  EXPECT_TRUE(NarrowAccumulator::fits(formats::e5m2));
  EXPECT_FALSE(NarrowAccumulator::fits(formats::bf16));
  EXPECT_FALSE(NarrowAccumulator::fits(formats::fp32));
  EXPECT_EQ(NarrowAccumulator::lowest_exponent(formats::fp16), -48);
  // The largest fp16 products at the accumulator's limit of terms do not overflow its 128 bits:
  // 65504^2 < 2^32, 2^31 terms, and 48 fraction bits make < 2^111.
  NarrowAccumulator acc(formats::fp16);
  for (int i = 0; i < 1000; ++i) acc.add_product(65504.0, 65504.0);
  EXPECT_EQ(acc.value().to_decimal(), "4.290774016e+12");
}

TEST(ExactDot, LengthsUpToAMillion) {
  std::mt19937_64 rng(1);
  for (const std::size_t n : {1u, 10u, 1000u, 1000000u}) {
    SCOPED_TRACE(n);
    const auto a = random_values(formats::fp32, n, rng, -30, 30);
    const auto b = random_values(formats::fp32, n, rng, -30, 30);
    Mp expected;
    exact_dot(expected, a, b);
    expect_matches(reference::exact_dot(formats::fp32, a, b), expected, "fp32");
    const std::vector<float> af(a.begin(), a.end());
    const std::vector<float> bf(b.begin(), b.end());
    expect_matches(reference::exact_dot(af, bf), expected, "fp32 as float");
    const auto h = random_values(formats::fp16, n, rng, -24, 15);
    const auto g = random_values(formats::fp16, n, rng, -24, 15);
    exact_dot(expected, h, g);
    expect_matches(reference::exact_dot(formats::fp16, h, g), expected, "fp16");
  }
}

TEST(ExactDot, CarriesPropagateAcrossManyTermsOfOneSign) {
  // 2^31 - 1 ... enough pieces land in one chunk to force carry propagation many times over.
  ExactAccumulator acc;
  Mp expected;
  const double x = std::ldexp(0x1.fffffffffffffp0, 40);
  for (int i = 0; i < 3000000; ++i) acc.add(x);
  mpfr_set_d(expected.get(), x, MPFR_RNDN);
  require_exact(mpfr_mul_ui(expected.get(), expected.get(), 3000000, MPFR_RNDN), "product");
  expect_matches(acc.value(), expected, "3e6 equal terms");
}

TEST(ExactDot, MergeIsExact) {
  std::mt19937_64 rng(3);
  const auto a = random_values(formats::fp64, 200, rng, -1074, 1000);
  ExactAccumulator first, second, all;
  for (std::size_t i = 0; i < a.size(); ++i) {
    (i % 3 == 0 ? first : second).add(a[i]);
    all.add(a[i]);
  }
  first.merge(second);
  EXPECT_EQ(first.value().to_hex(), all.value().to_hex());
  Mp expected;
  for (const double x : a) add_product(expected, x, 1.0);
  expect_matches(first.value(), expected, "merged");
}

TEST(ExactDot, SpecialValues) {
  const auto dot = [](std::vector<double> a, std::vector<double> b) {
    return reference::exact_dot(formats::fp32, a, b);
  };
  EXPECT_EQ(dot({kNaN, 1.0}, {1.0, 1.0}).kind(), ExactKind::nan);
  EXPECT_EQ(dot({kInf, 1.0}, {0.0, 1.0}).kind(), ExactKind::nan);  // inf * 0
  EXPECT_EQ(dot({kInf, -kInf}, {1.0, 1.0}).kind(), ExactKind::nan);
  EXPECT_EQ(dot({kInf, 0x1p100}, {1.0, -0x1p100}).kind(), ExactKind::positive_infinity);
  EXPECT_EQ(dot({kInf, 2.0}, {-1.0, 3.0}).kind(), ExactKind::negative_infinity);
  EXPECT_EQ(dot({kInf}, {-1.0}).to_decimal(), "-inf");
  // e4m3 has no infinity: an infinite input is not a value of it.
  EXPECT_THROW(reference::exact_dot(formats::e4m3, std::vector{kInf}, std::vector{1.0}),
               std::invalid_argument);
  // The infinite result of fp16 inputs rounds to fp16's infinity; in e4m3 (no infinity) to NaN.
  EXPECT_TRUE(std::isinf(dot({kInf}, {1.0}).round(formats::fp16, Rounding::nearest_even).value));
  EXPECT_TRUE(std::isnan(dot({kInf}, {1.0}).round(formats::e4m3, Rounding::nearest_even).value));
}

TEST(ExactDot, SignOfAZeroSumFollowsIeee) {
  const auto rounded = [](std::vector<double> a, std::vector<double> b, Rounding mode) {
    return reference::exact_dot(formats::fp32, a, b).round(formats::fp32, mode).value;
  };
  EXPECT_FALSE(std::signbit(rounded({}, {}, Rounding::nearest_even)));
  EXPECT_TRUE(std::signbit(rounded({-0.0, 1.0}, {1.0, -0.0}, Rounding::nearest_even)));
  EXPECT_FALSE(std::signbit(rounded({-0.0, 0.0}, {1.0, 1.0}, Rounding::nearest_even)));
  EXPECT_TRUE(std::signbit(rounded({-0.0, 0.0}, {1.0, 1.0}, Rounding::downward)));
  EXPECT_FALSE(std::signbit(rounded({3.0, -3.0}, {2.0, 2.0}, Rounding::upward)));
  EXPECT_TRUE(std::signbit(rounded({3.0, -3.0}, {2.0, 2.0}, Rounding::downward)));
}

TEST(ExactDot, InputsMustBeValuesOfTheirFormat) {
  try {
    reference::exact_dot(formats::fp16, std::vector{1.0, 1.0 + 0x1p-20}, std::vector{1.0, 1.0});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "a[1] = 0x1.00001p+0 is not a value of fp16");
  }
  EXPECT_THROW(reference::exact_dot(formats::fp16, std::vector{1.0}, std::vector{1e6}),
               std::invalid_argument);
  EXPECT_THROW(reference::exact_dot(formats::fp16, std::vector{1.0}, std::vector{1.0, 2.0}),
               std::invalid_argument);
  EXPECT_TRUE(is_value_of(formats::e4m3, 448.0));
  EXPECT_FALSE(is_value_of(formats::e4m3, 480.0));
  EXPECT_FALSE(is_value_of(formats::e4m3, kInf));
  EXPECT_TRUE(is_value_of(formats::fp16, std::ldexp(1.0, -24)));
  EXPECT_FALSE(is_value_of(formats::fp16, std::ldexp(1.0, -25)));
}

TEST(ExactSum, MatchesMpfr) {
  std::mt19937_64 rng(11);
  const auto x = random_values(formats::fp64, 10000, rng, -1074, 1023);
  Mp expected;
  for (const double v : x) add_product(expected, v, 1.0);
  expect_matches(exact_sum(x), expected, "sum of 10^4 binary64 values");
}

TEST(ExactValueText, KnownRenderings) {
  EXPECT_EQ(exact_sum(std::vector{0.1}).to_decimal(),
            "1.000000000000000055511151231257827021181583404541015625e-01");
  EXPECT_EQ(exact_sum(std::vector{0.1}).to_hex(), "0x1.999999999999ap-4");
  EXPECT_EQ(exact_sum(std::vector{-1024.0, -256.0}).to_decimal(), "-1.28e+03");
  EXPECT_EQ(exact_sum(std::vector{-1024.0, -256.0}).to_hex(), "-0x1.4p+10");
  EXPECT_EQ(exact_sum(std::vector{0x1p-1074}).to_decimal().substr(0, 24),
            "4.9406564584124654417656");
  EXPECT_EQ(exact_sum(std::vector{0.0}).to_hex(), "0x0p+0");
  EXPECT_EQ(exact_sum(std::vector{-0.0}).to_decimal(), "-0");
}

// The naive loop in binary64 and binary32 is what the hardware's fused multiply-add gives.
TEST(NaiveDot, MatchesHardwareFma) {
  std::mt19937_64 rng(5);
  const auto a = random_values(formats::fp32, 5000, rng, -20, 20);
  const auto b = random_values(formats::fp32, 5000, rng, -20, 20);
  double s64 = 0;
  float s32 = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s64 = std::fma(a[i], b[i], s64);
    s32 = std::fma(static_cast<float>(a[i]), static_cast<float>(b[i]), s32);
  }
  numeric::RoundingOptions acc;
  acc.format = formats::fp64;
  EXPECT_EQ(naive_dot(acc, a, b).value, s64);
  acc.format = formats::fp32;
  const NaiveDot naive = naive_dot(acc, a, b);
  EXPECT_EQ(naive.value, static_cast<double>(s32));
  EXPECT_EQ(naive.step_events.total(), a.size());
}

TEST(NaiveDot, Fp16AccumulationStagnates) {
  // 4096 * (1 * 1) in fp16: the sum stops at 2048, where adding 1 is a tie that rounds to even.
  const std::vector<double> ones(4096, 1.0);
  numeric::RoundingOptions acc;
  acc.format = formats::fp16;
  EXPECT_EQ(naive_dot(acc, ones, ones).value, 2048.0);
  EXPECT_EQ(reference::exact_dot(formats::fp16, ones, ones).to_decimal(), "4.096e+03");
}

TEST(ExactGemm, MatchesExactDotsAndThreadCountDoesNotMatter) {
  std::mt19937_64 rng(9);
  const std::size_t m = 7, n = 5, k = 33;
  const auto a = random_values(formats::bf16, m * k, rng, -130, 20);
  const auto b = random_values(formats::bf16, k * n, rng, -130, 20);
  const auto c = random_values(formats::fp64, m * n, rng, -40, 10);
  numeric::RoundingOptions out;
  out.format = formats::bf16;
  const GemmOperands op{m, n, k, a, b, c};
  const GemmReference one = exact_gemm(formats::bf16, op, out, {}, 1);
  const GemmReference two = exact_gemm(formats::bf16, op, out, {}, 2);
  ASSERT_EQ(one.positions.size(), m * n);
  EXPECT_EQ(one.rounded, two.rounded);
  EXPECT_EQ(one.nearest, two.nearest);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      Mp expected;
      for (std::size_t l = 0; l < k; ++l) add_product(expected, a[i * k + l], b[l * n + j]);
      add_product(expected, c[i * n + j], 1.0);
      const auto want = numeric::oracle::round(numeric::oracle::spec_of(formats::bf16),
                                               Rounding::nearest_even, expected.get());
      EXPECT_EQ(one.rounded[i * n + j], want.value) << i << "," << j;
      EXPECT_EQ(one.nearest[i * n + j], mpfr_get_d(expected.get(), MPFR_RNDN));
    }
  }
  EXPECT_EQ(one.events.total(), m * n);
}

TEST(ExactGemm, SampledPositionsAreTheFullResultAtThosePositions) {
  std::mt19937_64 rng(4);
  const std::size_t m = 40, n = 30, k = 16;
  const auto a = random_values(formats::fp16, m * k, rng, -10, 5);
  const auto b = random_values(formats::fp16, k * n, rng, -10, 5);
  numeric::RoundingOptions out;
  out.format = formats::fp16;
  const GemmOperands op{m, n, k, a, b, {}};
  const auto full = exact_gemm(formats::fp16, op, out);
  const auto positions = sample_positions(m * n, 50, 42);
  const auto sampled = exact_gemm(formats::fp16, op, out, positions);
  ASSERT_EQ(sampled.rounded.size(), 50u);
  for (std::size_t i = 0; i < positions.size(); ++i) {
    EXPECT_EQ(sampled.rounded[i], full.rounded[positions[i]]);
  }
  const std::size_t bad[] = {3, 3};
  EXPECT_THROW(exact_gemm(formats::fp16, op, out, bad), std::invalid_argument);
  const GemmOperands wrong{m, n, k + 1, a, b, {}};
  EXPECT_THROW(exact_gemm(formats::fp16, wrong, out), std::invalid_argument);
}

TEST(SamplePositions, DistinctSortedReproducibleAndUniform) {
  const auto p = sample_positions(1000, 100, 7);
  ASSERT_EQ(p.size(), 100u);
  EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end());
  EXPECT_EQ(p, sample_positions(1000, 100, 7));
  EXPECT_NE(p, sample_positions(1000, 100, 8));
  EXPECT_EQ(sample_positions(5, 10, 1), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  // Each of 10 positions chosen 3 at a time over 20000 seeds: expected 6000 each; a chi-square
  // statistic with 9 degrees of freedom above 27.9 has probability 0.001.
  std::vector<int> hits(10);
  for (std::uint64_t seed = 0; seed < 20000; ++seed) {
    for (const auto i : sample_positions(10, 3, seed)) ++hits[i];
  }
  double chi2 = 0;
  for (const int h : hits) chi2 += (h - 6000.0) * (h - 6000.0) / 6000.0;
  EXPECT_LT(chi2, 27.9);
}

}  // namespace
}  // namespace ampbench::reference::test
