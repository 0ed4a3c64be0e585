// Checks of the MPFR oracle itself, against independent references: the CPU's binary64 ->
// binary32 conversion in the four IEEE rounding directions, F16C's binary32 -> binary16
// conversion in the same four, the classic bf16 rounding bit trick, and hand-computed cases of the
// modes MPFR does not provide. The library is not involved, so a failure here is the oracle's.
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

using oracle::spec_of;

constexpr std::pair<int, Rounding> kIeeeDirections[] = {
    {FE_TONEAREST, Rounding::nearest_even},
    {FE_TOWARDZERO, Rounding::toward_zero},
    {FE_UPWARD, Rounding::upward},
    {FE_DOWNWARD, Rounding::downward},
};

// Kept out of line and fed through a volatile so that the conversion happens at run time, in the
// current rounding direction.
[[gnu::noinline]] float hardware_to_float(double x) {
  volatile double v = x;
  return static_cast<float>(v);
}

// Doubles spread over binary32's range and beyond: random exponent in [-160, 140], random
// fraction, random sign, and every tenth one a value with few significant bits (ties).
std::vector<double> sample_doubles(std::size_t n, int emin, int emax, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) {
    const int e = emin + static_cast<int>(rng() % static_cast<std::uint64_t>(emax - emin + 1));
    std::uint64_t fraction = rng() & ((std::uint64_t{1} << 52) - 1);
    if (i % 10 == 0) fraction &= ~((std::uint64_t{1} << 26) - 1);
    const double x = std::ldexp(1.0 + std::ldexp(static_cast<double>(fraction), -52), e);
    out.push_back((rng() & 1) != 0 ? -x : x);
  }
  return out;
}

TEST(MpfrOracle, Fp32MatchesHardwareConversionInAllIeeeDirections) {
  const oracle::Spec fp32 = spec_of(formats::fp32);
  const auto xs = sample_doubles(200000, -160, 140, 1);
  const int saved = std::fegetround();
  for (const auto& [direction, mode] : kIeeeDirections) {
    int failures = 0;
    for (const double x : xs) {
      std::fesetround(direction);
      const double hardware = hardware_to_float(x);
      std::fesetround(saved);
      const double want = oracle::round(fp32, mode, x).value;
      if (!same(want, hardware) && ++failures <= 5) {
        ADD_FAILURE() << "mode " << static_cast<int>(mode) << " x=" << describe(x)
                      << " hardware=" << describe(hardware) << " oracle=" << describe(want);
      }
    }
    EXPECT_EQ(failures, 0);
  }
}

TEST(MpfrOracle, Fp16MatchesF16cInAllIeeeDirections) {
  if (!has_f16c()) GTEST_SKIP() << "this CPU has no F16C instructions";
  const oracle::Spec fp16 = spec_of(formats::fp16);
  std::mt19937 rng(2);
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    // Binary32 values around binary16's range: exponent field 90..150 (2^-37..2^23).
    const auto u = static_cast<std::uint32_t>((rng() & 0x807FFFFFu) | ((90 + rng() % 61) << 23));
    const float x = float_of(i % 8 == 0 ? u & 0xFFFFE000u : u);  // some ties and exact values
    for (const auto& [direction, mode] : kIeeeDirections) {
      const double hardware = f16c_decode(f16c_encode(x, mode));
      const double want = oracle::round(fp16, mode, x).value;
      if (!same(want, hardware) && ++failures <= 5) {
        ADD_FAILURE() << "mode " << static_cast<int>(mode) << " x=" << describe(x)
                      << " f16c=" << describe(hardware) << " oracle=" << describe(want);
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Round to nearest even to bf16 by the integer trick used in TensorFlow and PyTorch: add 0x7FFF
// plus the lowest kept bit, then truncate. Carries run into the exponent, overflowing to inf.
TEST(MpfrOracle, Bf16MatchesTheBitTrick) {
  const oracle::Spec bf16 = spec_of(formats::bf16);
  std::mt19937 rng(3);
  int failures = 0;
  for (int i = 0; i < 500000; ++i) {
    auto u = static_cast<std::uint32_t>(rng());
    if ((u & 0x7F800000u) == 0x7F800000u) continue;  // NaN and inf: not this trick's business
    if (i % 8 == 0) u &= 0xFFFF8000u;                // ties and exact values
    const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    const double want = oracle::round(bf16, Rounding::nearest_even, float_of(u)).value;
    if (!same(want, float_of(rounded)) && ++failures <= 5) {
      ADD_FAILURE() << "x=" << describe(float_of(u)) << " trick=" << describe(float_of(rounded))
                    << " oracle=" << describe(want);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(MpfrOracle, BinaryDoubleIsExact) {
  const oracle::Spec fp64 = spec_of(formats::fp64);
  for (const double x : sample_doubles(20000, -1074, 1023, 4)) {
    for (const Rounding mode : kAllModes) {
      const oracle::Result r = oracle::round(fp64, mode, x, 0x12345678u);
      EXPECT_TRUE(same(r.value, x)) << describe(x);
      EXPECT_EQ(r.event, RoundingEvent::exact) << describe(x);
    }
  }
}

// A 3-bit format: values 1, 1.25, 1.5, 1.75, 2, 2.5, ... Every expectation below is worked out by
// hand from the definitions of the modes.
TEST(MpfrOracle, HandComputedThreeBitCases) {
  const oracle::Spec s = spec_of(user_format(3, -4, 4));
  const auto value = [&](Rounding mode, double x, std::uint32_t random = 0) {
    return oracle::round(s, mode, x, random).value;
  };
  // 1.125: halfway between 1 (100b, even) and 1.25 (101b, odd).
  EXPECT_EQ(value(Rounding::nearest_even, 1.125), 1.0);
  EXPECT_EQ(value(Rounding::nearest_away, 1.125), 1.25);
  EXPECT_EQ(value(Rounding::to_odd, 1.125), 1.25);
  EXPECT_EQ(value(Rounding::nearest_away, -1.125), -1.25);
  // 1.375: halfway between 1.25 (odd) and 1.5 (110b, even).
  EXPECT_EQ(value(Rounding::nearest_even, 1.375), 1.5);
  EXPECT_EQ(value(Rounding::nearest_away, 1.375), 1.5);
  EXPECT_EQ(value(Rounding::to_odd, 1.375), 1.25);
  EXPECT_EQ(value(Rounding::to_odd, 1.3), 1.25);
  EXPECT_EQ(value(Rounding::to_odd, 1.1), 1.25);
  EXPECT_EQ(value(Rounding::to_odd, 1.75), 1.75);
  EXPECT_EQ(value(Rounding::to_odd, 1.8), 1.75);  // 1.75 = 111b is odd
  EXPECT_EQ(value(Rounding::to_odd, 2.1), 2.5);   // 2 = 100b * 2^-1 is even
  // 1.0625 is a quarter of the way from 1 to 1.25: threshold 2^30.
  EXPECT_EQ(oracle::stochastic_threshold(s, 1.0625), std::uint64_t{1} << 30);
  EXPECT_EQ(value(Rounding::stochastic_proportional, 1.0625, (1u << 30) - 1), 1.25);
  EXPECT_EQ(value(Rounding::stochastic_proportional, 1.0625, 1u << 30), 1.0);
  EXPECT_EQ(value(Rounding::stochastic_proportional, -1.0625, 0), -1.25);
  // 1 + 1/3 of the quantum (not a double exactly): floor(2^32 * fraction).
  const double third = 1.0 + 0.25 / 3;
  const auto expected = static_cast<std::uint64_t>(std::ldexp(third - 1.0, 2 + 32));
  EXPECT_EQ(oracle::stochastic_threshold(s, third), expected);
  EXPECT_EQ(value(Rounding::stochastic_equal, 1.0625, 0x7FFFFFFFu), 1.0);
  EXPECT_EQ(value(Rounding::stochastic_equal, 1.0625, 0x80000000u), 1.25);
  EXPECT_EQ(value(Rounding::stochastic_equal, 1.25, 0xFFFFFFFFu), 1.25);
  // Subnormals: the quantum below 2^-4 is 2^-6; half of it is a tie with zero.
  EXPECT_EQ(value(Rounding::nearest_even, std::ldexp(1.0, -7)), 0.0);
  EXPECT_EQ(value(Rounding::nearest_away, std::ldexp(1.0, -7)), std::ldexp(1.0, -6));
  EXPECT_EQ(value(Rounding::to_odd, std::ldexp(1.0, -9)), std::ldexp(1.0, -6));
  EXPECT_EQ(value(Rounding::nearest_even, std::ldexp(3.0, -7)), std::ldexp(1.0, -5));  // 1.5 q
  // Overflow: max = 1.75 * 2^4 = 28, quantum 4 at the top, threshold 30.
  EXPECT_EQ(value(Rounding::nearest_even, 29.9), 28.0);
  EXPECT_TRUE(std::isinf(value(Rounding::nearest_even, 30.0)));
  EXPECT_EQ(value(Rounding::toward_zero, 1e9), 28.0);
  EXPECT_EQ(value(Rounding::upward, -1e9), -28.0);
  EXPECT_TRUE(std::isinf(value(Rounding::downward, -29.0)));
  EXPECT_EQ(value(Rounding::to_odd, 29.0), 28.0);
  EXPECT_TRUE(std::isinf(value(Rounding::stochastic_proportional, 29.0, 0)));
  EXPECT_EQ(value(Rounding::stochastic_proportional, 29.0, 0xFFFFFFFFu), 28.0);
  EXPECT_EQ(oracle::round(s, Rounding::toward_zero, 1e9).event, RoundingEvent::saturation);
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, 30.0).event, RoundingEvent::overflow);
}

TEST(MpfrOracle, SubnormalsOffHasOnlyZeroAndTheSmallestNormalBelowIt) {
  const oracle::Spec s = spec_of(user_format(3, -4, 4, false));
  const double smallest = std::ldexp(1.0, -4);
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, smallest / 2).value, 0.0);  // tie: to 0
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, std::nextafter(smallest / 2, 1.0)).value,
            smallest);
  EXPECT_EQ(oracle::round(s, Rounding::nearest_away, smallest / 2).value, smallest);
  EXPECT_EQ(oracle::round(s, Rounding::toward_zero, smallest * 0.99).value, 0.0);
  EXPECT_EQ(oracle::round(s, Rounding::upward, smallest * 0.01).value, smallest);
  EXPECT_EQ(oracle::round(s, Rounding::to_odd, smallest * 0.01).value, smallest);
  EXPECT_EQ(oracle::round(s, Rounding::downward, -smallest * 0.01).value, -smallest);
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, smallest * 0.75).event,
            RoundingEvent::underflow);
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, smallest * 0.25).event,
            RoundingEvent::flush_to_zero);
}

TEST(MpfrOracle, E4m3HasNoInfinity) {
  const oracle::Spec s = spec_of(formats::e4m3);
  EXPECT_EQ(s.max_finite, 448.0);  // OCP OFP8 rev 1.0, table 1
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, 464.0).value, 448.0);
  EXPECT_TRUE(std::isnan(oracle::round(s, Rounding::nearest_even, 465.0).value));
  EXPECT_EQ(oracle::round(s, Rounding::nearest_even, 465.0).event, RoundingEvent::overflow);
  EXPECT_EQ(oracle::round(s, Rounding::toward_zero, 1e6).value, 448.0);
  EXPECT_EQ(oracle::round(s, Rounding::to_odd, 450.0).value, 448.0);  // 480 would be odd
}

TEST(MpfrOracle, RestoresTheExponentRange) {
  const mpfr_exp_t emin = mpfr_get_emin();
  const mpfr_exp_t emax = mpfr_get_emax();
  for (const Rounding mode : kAllModes) {
    oracle::round(spec_of(formats::e4m3), mode, 1000.0, 1);
    oracle::round(spec_of(formats::fp16), mode, 1e-30, 1);
  }
  EXPECT_EQ(mpfr_get_emin(), emin);
  EXPECT_EQ(mpfr_get_emax(), emax);
}

}  // namespace
}  // namespace ampbench::numeric::test
