// Tests of Blackwell's block-scaled MMA models (mma_block_scale.hpp):
//   - the scale decodings (UE8M0, UE4M3 without its sign);
//   - the behaviours MMA-Sim's code implies, derived by hand: a term truncated before the sum
//     (c = 2^30 minus one product stays 2^30), zero products whose exponents still count (large
//     scales wipe out c), c's exponent floor of -126, NaN scales, groups of 16 in kind::mxf4;
//   - against the exact sum (MPFR): where no term loses a bit (scales within a narrow window),
//     each instruction is the exact c + sum of scaled products truncated to fp32.
#include "harness/numeric/mma_block_scale.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

double p2(int e) {
  return std::ldexp(1.0, e);
}

const MmaModel& blackwell() {
  static const MmaModel m = *mma_model("blackwell", formats::e4m3);
  return m;
}

BlockScale ue8m0(int exponent) {
  return decode_block_scale(ScaleEncoding::ue8m0, static_cast<std::uint8_t>(exponent + 127));
}

using oracle::Mpfr;

std::uint32_t fp32_bits(double x) {
  return static_cast<std::uint32_t>(round_to(formats::fp32, Rounding::nearest_even, x).bits);
}

TEST(BlockScale, Decodings) {
  EXPECT_EQ(ue8m0(0).exponent, 0);
  EXPECT_EQ(ue8m0(-127).exponent, -127);  // 0x00: 2^-127, not a subnormal
  EXPECT_TRUE(decode_block_scale(ScaleEncoding::ue8m0, 0xFF).nan);
  const BlockScale two = decode_block_scale(ScaleEncoding::ue4m3, 0x40);
  EXPECT_EQ(two.significand, 1.0);
  EXPECT_EQ(two.exponent, 1);
  // The sign bit is ignored: 0xC0 is 2 as well.
  const BlockScale also_two = decode_block_scale(ScaleEncoding::ue4m3, 0xC0);
  EXPECT_EQ(also_two.significand, 1.0);
  EXPECT_EQ(also_two.exponent, 1);
  const BlockScale sub = decode_block_scale(ScaleEncoding::ue4m3, 0x01);  // 2^-9
  EXPECT_EQ(std::ldexp(sub.significand, sub.exponent), p2(-9));
  EXPECT_EQ(decode_block_scale(ScaleEncoding::ue4m3, 0x00).exponent, -126);
  EXPECT_EQ(decode_block_scale(ScaleEncoding::ue4m3, 0x7E).significand, 1.75);  // 448
  EXPECT_EQ(decode_block_scale(ScaleEncoding::ue4m3, 0x7E).exponent, 8);
  EXPECT_TRUE(decode_block_scale(ScaleEncoding::ue4m3, 0x7F).nan);
  EXPECT_TRUE(decode_block_scale(ScaleEncoding::ue4m3, 0xFF).nan);
}

// c = 2^30 and one product -1: the product's term, aligned 25 bits below 2^30, is -2^-5 of a unit
// and truncates to 0 before the sum; one rounding of the exact sum would give 2^30 - 64.
TEST(Mxf8f6f4, ATermIsTruncatedBeforeTheSum) {
  const std::array<double, 1> a{-1.0}, b{1.0};
  EXPECT_EQ(mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e4m3, p2(30), a.data(), b.data(),
                              1, ue8m0(0), ue8m0(0)),
            p2(30));
}

// Zero elements keep exponent -126 and the scales raise it: a = 0 (32 of them), b = 448,
// scales 2^127 each: the largest exponent is -126 + 8 + 254 = 136, and c = 1 + 2^-20 (exponent
// 0) lies 136 below it, beyond F = 25: D = +0.
TEST(Mxf8f6f4, ZeroProductsWithLargeScalesWipeOutC) {
  std::vector<double> a(32, 0.0), b(32, 448.0);
  const double d = mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e4m3, 1 + p2(-20),
                                     a.data(), b.data(), 32, ue8m0(127), ue8m0(127));
  EXPECT_EQ(fp32_bits(d), 0u);
  EXPECT_FALSE(std::signbit(d));
  // With unit scales c comes through (the zero products' exponent -126 + 8 lies below c's).
  EXPECT_EQ(mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e4m3, 1 + p2(-20), a.data(),
                              b.data(), 32, ue8m0(0), ue8m0(0)),
            1 + p2(-20));
}

// c enters with exponent at least -126 (a zero's): 32 products of 2^-152 (2^-9 * 2^-9 elements,
// scales 2^-67 each) align 26 binades below it, beyond F = 25, and vanish.
TEST(Mxf8f6f4, CsExponentFloorDropsTinyProducts) {
  std::vector<double> a(32, p2(-9)), b(32, p2(-9));
  const double d = mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e4m3, 0.0, a.data(),
                                     b.data(), 32, ue8m0(-67), ue8m0(-67));
  EXPECT_EQ(fp32_bits(d), 0u);
  // Scales 2^-50: products 2^-118, normal: 32 of them are exactly 2^-113.
  EXPECT_EQ(mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e4m3, 0.0, a.data(), b.data(),
                              32, ue8m0(-50), ue8m0(-50)),
            p2(-113));
}

TEST(Mxf8f6f4, ANanScaleGivesTheCanonicalNan) {
  std::vector<double> a(32, 0.0), b(32, 0.0);
  const double d =
      mma_mxf8f6f4_step(blackwell(), formats::e4m3, formats::e5m2, 1.0, a.data(), b.data(), 32,
                        decode_block_scale(ScaleEncoding::ue8m0, 0xFF), ue8m0(0));
  EXPECT_EQ(fp32_bits(d), 0x7FFFFFFFu);
}

// kind::mxf4: all-zero data with scales 2^127 each: every group term has exponent 254 (whatever
// its zero value), c = 1 lies 254 below: D = +0.
TEST(Mxf4, ZeroGroupsWithLargeScalesWipeOutC) {
  std::vector<double> a(64, 0.0), b(64, 0.0);
  const std::array<BlockScale, 2> s{ue8m0(127), ue8m0(127)};
  EXPECT_EQ(
      fp32_bits(mma_mxf4_step(blackwell(), 1.0, a.data(), b.data(), 64, s.data(), s.data(), 32)),
      0u);
  const std::array<BlockScale, 2> unit{ue8m0(0), ue8m0(0)};
  EXPECT_EQ(mma_mxf4_step(blackwell(), 1.0, a.data(), b.data(), 64, unit.data(), unit.data(), 32),
            1.0);
}

// A NaN scale anywhere in the row's or column's vector gives NaN, even over zero data; so does a
// NaN c.
TEST(Mxf4, ANanScaleOrCGivesTheCanonicalNan) {
  std::vector<double> a(64, 0.0), b(64, 1.0);
  std::array<BlockScale, 4> sa{ue8m0(0), ue8m0(0), ue8m0(0), ue8m0(0)};
  const std::array<BlockScale, 4> sb = sa;
  sa[3] = decode_block_scale(ScaleEncoding::ue4m3, 0x7F);
  EXPECT_EQ(
      fp32_bits(mma_mxf4_step(blackwell(), 0.0, a.data(), b.data(), 64, sa.data(), sb.data(), 16)),
      0x7FFFFFFFu);
  sa[3] = ue8m0(0);
  EXPECT_EQ(fp32_bits(mma_mxf4_step(blackwell(), std::nan(""), a.data(), b.data(), 64, sa.data(),
                                    sb.data(), 16)),
            0x7FFFFFFFu);
}

// Groups of 16 are separate terms even under one block-32 scale. Groups 0 and 1 (one block, scale
// 1) each sum to 15.75; group 2 (the second block, scales 2^17 each) to 32 * 2^34 = 2^39; c is
// -2^39. The largest exponent is c's, 39, so a unit is 2^(39 - 35) = 16: each 15.75 truncates to
// 0 and D = +0; one term for the block (31.5) would have kept 16.
TEST(Mxf4, GroupsOfSixteenAreTruncatedApart) {
  std::vector<double> a(64, 0.0), b(64, 0.0);
  for (std::size_t i = 0; i < 32; ++i) a[i] = b[i] = 1.0;
  a[15] = a[31] = 1.5;
  b[15] = b[31] = 0.5;  // each of groups 0 and 1: fifteen 1s and 0.75, 15.75
  for (std::size_t i = 32; i < 48; ++i) {
    a[i] = 2.0;
    b[i] = 1.0;  // group 2: 32
  }
  const std::array<BlockScale, 2> s{ue8m0(0), ue8m0(17)};
  const double d =
      mma_mxf4_step(blackwell(), -p2(39), a.data(), b.data(), 64, s.data(), s.data(), 32);
  EXPECT_EQ(fp32_bits(d), 0u) << describe(d);
}

// The output stage at the top of binary32's range (kind::mxf4's F = 35, truncation toward zero).
// One group of sixteen 1 x 1 products, 16 = 2^4, scaled by 2^a * 2^b: the sum 2^(4 + a + b). At
// 2^126 and 2^127 it is a binary32 value: exact. At 2^128 it is past every binary32 value: an
// infinity with the sum's sign (MMA-Sim), not the largest finite value truncation would clamp to;
// so is the largest binary32 value plus 2^127.
TEST(Mxf4, SumsFromTwoTo127OnAreExactThenInfinite) {
  std::vector<double> a(64, 0.0), b(64, 0.0), minus(64, 0.0);
  for (std::size_t i = 0; i < 16; ++i) {
    a[i] = b[i] = 1.0;
    minus[i] = -1.0;
  }
  const std::array<BlockScale, 2> s61{ue8m0(61), ue8m0(0)}, s62{ue8m0(62), ue8m0(0)},
      s63{ue8m0(63), ue8m0(0)};
  // 2^(4 + 61 + 61) = 2^126, 2^(4 + 62 + 61) = 2^127, 2^(4 + 62 + 62) = 2^128.
  EXPECT_EQ(mma_mxf4_step(blackwell(), 0.0, a.data(), b.data(), 64, s61.data(), s61.data(), 32),
            p2(126));
  EXPECT_EQ(mma_mxf4_step(blackwell(), 0.0, a.data(), b.data(), 64, s62.data(), s61.data(), 32),
            p2(127));
  EXPECT_EQ(mma_mxf4_step(blackwell(), 0.0, a.data(), b.data(), 64, s62.data(), s62.data(), 32),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(mma_mxf4_step(blackwell(), 0.0, minus.data(), b.data(), 64, s63.data(), s61.data(), 32),
            -std::numeric_limits<double>::infinity());
  // The largest binary32 value as c, plus 2^127: the sum lies in [2^128, 2^129): infinite.
  EXPECT_EQ(mma_mxf4_step(blackwell(), static_cast<double>(std::numeric_limits<float>::max()),
                          a.data(), b.data(), 64, s62.data(), s61.data(), 32),
            std::numeric_limits<double>::infinity());
}

// Against the exact sum: with the scales' exponents within a few binades of c's, no term loses a
// bit (F = 35 for kind::mxf4, 25 for kind::mxf8f6f4 on products of at most 8 bits), so each
// instruction is the exact c + sum, truncated to fp32.
TEST(BlockScaledExact, NoTruncationMeansTheExactSumTruncatedToFp32) {
  std::mt19937_64 rng(41);
  const auto e2m1 = [&] {
    static constexpr double kValues[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const double v = kValues[rng() % 8];
    return (rng() & 1) != 0 ? -v : v;
  };
  for (int t = 0; t < 2000; ++t) {
    const bool nvfp4 = t % 2 == 0;
    const int block = nvfp4 ? 16 : 32;
    std::vector<double> a(64), b(64);
    for (auto& x : a) x = e2m1();
    for (auto& x : b) x = e2m1();
    std::array<BlockScale, 4> sa{}, sb{};
    for (int s = 0; s < 64 / block; ++s) {
      if (nvfp4) {
        // UE4M3 scales in [1, 16): exponents 0..3, any significand.
        sa[static_cast<std::size_t>(s)] = decode_block_scale(
            ScaleEncoding::ue4m3, static_cast<std::uint8_t>(((7 + rng() % 4) << 3) | (rng() % 8)));
        sb[static_cast<std::size_t>(s)] = decode_block_scale(
            ScaleEncoding::ue4m3, static_cast<std::uint8_t>(((7 + rng() % 4) << 3) | (rng() % 8)));
      } else {
        sa[static_cast<std::size_t>(s)] = ue8m0(static_cast<int>(rng() % 5) - 2);
        sb[static_cast<std::size_t>(s)] = ue8m0(static_cast<int>(rng() % 5) - 2);
      }
    }
    const double c = round_to(formats::fp32, Rounding::nearest_even,
                              std::ldexp(static_cast<double>(rng() % 2048) - 1024.0, -3))
                         .value;
    Mpfr exact, term;
    mpfr_set_d(exact.v, c, MPFR_RNDN);
    for (int i = 0; i < 64; ++i) {
      const BlockScale& x = sa[static_cast<std::size_t>(i / block)];
      const BlockScale& y = sb[static_cast<std::size_t>(i / block)];
      mpfr_set_d(term.v, a[static_cast<std::size_t>(i)] * b[static_cast<std::size_t>(i)],
                 MPFR_RNDN);
      mpfr_mul_d(term.v, term.v, std::ldexp(x.significand, x.exponent), MPFR_RNDN);
      mpfr_mul_d(term.v, term.v, std::ldexp(y.significand, y.exponent), MPFR_RNDN);
      mpfr_add(exact.v, exact.v, term.v, MPFR_RNDN);
    }
    const double want =
        mpfr_zero_p(exact.v)
            ? 0.0
            : oracle::round(oracle::spec_of(formats::fp32), Rounding::toward_zero, exact.v).value;
    const double got =
        mma_mxf4_step(blackwell(), c, a.data(), b.data(), 64, sa.data(), sb.data(), block);
    ASSERT_TRUE(same(got, want)) << "trial " << t << ": " << describe(got) << " vs "
                                 << describe(want);
  }
}

}  // namespace
}  // namespace ampbench::numeric::test
