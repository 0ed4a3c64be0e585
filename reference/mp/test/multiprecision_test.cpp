// The multiprecision layer: WorkingPrecision gives the bits it says (read back from MPFR), exact
// conversions, rounding of Reals to every built-in format and mode against the independent MPFR
// oracle (random values of 256 bits, exact ties, values 2^-200 relative off ties, subnormal and
// overflow ranges), and the Ziv loop on exact, hard and undecidable cases.
#include "reference/mp/multiprecision.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/test/failure_log.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::reference {
namespace {

using numeric::Format;
using numeric::Rounding;
using numeric::RoundingEvent;
namespace oracle = numeric::oracle;
namespace nt = numeric::test;

// x in decimal, 40 digits.
std::string text(const Real& x) {
  char digits[80];
  mpfr_snprintf(digits, sizeof digits, "%.40Re", x.backend().data());
  return digits;
}

// An MPFR number of the working precision, for building test inputs with the C API.
Real power_of_two(long e) {
  Real r(1);
  mpfr_mul_2si(r.backend().data(), r.backend().data(), e, MPFR_RNDN);
  return r;
}

// Checks round_to(f, mode, x, draw) against the oracle for every variant of every built-in format,
// every mode, and for the stochastic modes the draws on both sides of x's threshold.
void check_all_roundings(const Real& x, std::uint32_t random, nt::FailureLog& log) {
  for (const Format& base : numeric::formats::builtin) {
    for (const Format& f : nt::variants(base)) {
      const oracle::Spec spec = oracle::spec_of(f);
      std::vector<std::uint32_t> draws = {random};
      if (mpfr_number_p(x.backend().data())) {
        const std::uint64_t threshold = oracle::stochastic_threshold(spec, x.backend().data());
        if (threshold > 0) draws.push_back(static_cast<std::uint32_t>(threshold - 1));
        if (threshold < (std::uint64_t{1} << 32)) {
          draws.push_back(static_cast<std::uint32_t>(threshold));
        }
      }
      for (const Rounding mode : nt::kAllModes) {
        for (const std::uint32_t draw : draws) {
          const numeric::Rounded got = round_to(f, mode, x, draw);
          const oracle::Result want = oracle::round(spec, mode, x.backend().data(), draw);
          if (!nt::same(got.value, want.value) || got.event != want.event ||
              !nt::same(numeric::decode(f, got.bits), got.value)) {
            log.add(nt::describe(f) + " mode " + std::to_string(static_cast<int>(mode)) + " draw " +
                    std::to_string(draw) + " x " + text(x) + ": got " + nt::describe(got.value) +
                    " event " + std::to_string(static_cast<int>(got.event)) + ", oracle " +
                    nt::describe(want.value) + " event " +
                    std::to_string(static_cast<int>(want.event)));
          }
        }
      }
    }
  }
}

// A random value with a full 256-bit significand and exponent in [lowest, highest].
Real random_real(std::mt19937_64& rng, int lowest, int highest) {
  Real r;
  mpfr_ptr p = r.backend().data();
  mpfr_set_ui(p, 0, MPFR_RNDN);
  for (int i = 0; i < 4; ++i) {
    mpfr_mul_2ui(p, p, 64, MPFR_RNDN);
    mpfr_add_ui(p, p, static_cast<unsigned long>(rng()), MPFR_RNDN);
  }
  const int e = std::uniform_int_distribution<int>(lowest, highest)(rng);
  mpfr_mul_2si(p, p, e - 256, MPFR_RNDN);
  if (rng() & 1) mpfr_neg(p, p, MPFR_RNDN);
  return r;
}

// A midpoint of f (with an unbounded exponent): an odd (p+1)-bit integer times 2^(e - p).
Real midpoint(std::mt19937_64& rng, int precision, int e) {
  const std::uint64_t odd = (std::uint64_t{1} << precision) | (rng() >> (64 - precision)) | 1;
  Real r(1);
  mpfr_set_ui(r.backend().data(), static_cast<unsigned long>(odd), MPFR_RNDN);
  mpfr_mul_2si(r.backend().data(), r.backend().data(), e - precision, MPFR_RNDN);
  return r;
}

TEST(WorkingPrecision, GivesTheBitsItReports) {
  for (const int bits : {64, 65, 66, 67, 100, 128, 200, 255, 256, 257, 512, 1000, 1024, 4096}) {
    const WorkingPrecision precision(bits);
    EXPECT_GE(precision.bits(), bits);
    EXPECT_LE(precision.bits(), bits + 3);
    EXPECT_EQ(working_precision_bits(), precision.bits());
    const Real one(1);
    const Real third = one / 3;
    const Real e = math::exp(third) + math::sqrt(third) * third;
    const Real parsed = math::decimal("0.044715", one);
    for (const Real* x : {&one, &third, &e, &parsed}) {
      EXPECT_EQ(mpfr_get_prec(x->backend().data()), precision.bits()) << bits;
    }
    // 1/3 rounded to nearest at P bits is within 2^-(P+1) relative: the bits are really there.
    mpfr_t exact;
    mpfr_init2(exact, 8192);
    mpfr_set_ui(exact, 1, MPFR_RNDN);
    mpfr_div_ui(exact, exact, 3, MPFR_RNDN);
    mpfr_sub(exact, exact, third.backend().data(), MPFR_RNDN);
    EXPECT_LE(mpfr_get_exp(exact), -precision.bits() - 1) << bits;
    mpfr_clear(exact);
  }
}

TEST(WorkingPrecision, DefaultNestingAndMinimum) {
  const int outside = working_precision_bits();
  {
    const WorkingPrecision p256;
    EXPECT_EQ(p256.bits(), 257);  // 77 decimal digits: the smallest Boost setting >= 256 bits
    {
      const WorkingPrecision p1024(1024);
      EXPECT_EQ(working_precision_bits(), p1024.bits());
    }
    EXPECT_EQ(working_precision_bits(), 257);
  }
  EXPECT_EQ(working_precision_bits(), outside);
  EXPECT_THROW(WorkingPrecision(63), std::invalid_argument);
}

TEST(Conversion, DoublesAreExactAndRoundTrip) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(1);
  nt::FailureLog log("double round trips");
  for (int i = 0; i < 100000; ++i) {
    const double x = nt::double_of(rng());
    if (std::isnan(x)) continue;
    const Real r = to_real(x);
    if (mpfr_cmp_d(r.backend().data(), x) != 0 || !nt::same(to_double(r), x)) {
      log.add(nt::describe(x));
    }
  }
  EXPECT_TRUE(std::isnan(to_double(to_real(std::numeric_limits<double>::quiet_NaN()))));
  EXPECT_TRUE(std::signbit(to_double(to_real(-0.0))));
}

TEST(Conversion, ToDoubleRoundsToNearestAtTheSubnormalEdge) {
  const WorkingPrecision precision;
  // 2^-1075 is half the smallest subnormal: a tie to even (zero); a hair above rounds up.
  const Real half_tiny = power_of_two(-1075);
  EXPECT_EQ(to_double(half_tiny), 0.0);
  EXPECT_EQ(to_double(half_tiny * (1 + power_of_two(-200))),
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(to_double(power_of_two(1024) * (1 - power_of_two(-54))),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(to_double(power_of_two(1024) * (1 - power_of_two(-53))),
            std::numeric_limits<double>::max());
}

TEST(RoundReal, RandomFullPrecisionValuesAgreeWithOracle) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(2);
  nt::FailureLog log("random 256-bit values");
  // Exponents from below fp64's subnormals to above its overflow, and densely around the small
  // formats' ranges.
  for (int i = 0; i < 1500; ++i) {
    check_all_roundings(random_real(rng, -1100, 1100), static_cast<std::uint32_t>(rng()), log);
    check_all_roundings(random_real(rng, -30, 20), static_cast<std::uint32_t>(rng()), log);
    check_all_roundings(random_real(rng, -160, 140), static_cast<std::uint32_t>(rng()), log);
  }
}

TEST(RoundReal, TiesAndValuesJustOffTiesAgreeWithOracle) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(3);
  nt::FailureLog log("ties");
  const Real off = power_of_two(-200);
  for (const Format& f : numeric::formats::builtin) {
    for (int i = 0; i < 60; ++i) {
      // Normal, subnormal and beyond-the-top binades of f.
      const int e = std::uniform_int_distribution<int>(f.emin - f.precision - 2, f.emax + 1)(rng);
      const Real tie = (rng() & 1) ? midpoint(rng, f.precision, e) : -midpoint(rng, f.precision, e);
      const auto draw = static_cast<std::uint32_t>(rng());
      check_all_roundings(tie, draw, log);
      check_all_roundings(tie * (1 + off), draw, log);
      check_all_roundings(tie * (1 - off), draw, log);
    }
  }
}

TEST(RoundReal, SpecialValuesFollowRoundTo) {
  const WorkingPrecision precision;
  nt::FailureLog log("specials");
  const double inf = std::numeric_limits<double>::infinity();
  for (const double x : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
    for (const Format& base : numeric::formats::builtin) {
      for (const Format& f : nt::variants(base)) {
        for (const Rounding mode : nt::kAllModes) {
          const numeric::Rounded got = round_to(f, mode, to_real(x));
          const numeric::Rounded want = numeric::round_to(f, mode, x);
          if (got.bits != want.bits || got.event != want.event) log.add(nt::describe(f));
        }
      }
    }
  }
}

TEST(RoundReal, ExponentBeyondRangeThrows) {
  const WorkingPrecision precision;
  const mpfr_exp_t emax = mpfr_get_emax();
  ASSERT_EQ(mpfr_set_emax(mpfr_get_emax_max()), 0);
  const Real huge = power_of_two(long{1} << 40);
  EXPECT_THROW(round_to(numeric::formats::fp32, Rounding::nearest_even, huge), std::range_error);
  mpfr_set_emax(emax);
}

// ---- the Ziv loop ------------------------------------------------------------------------

// The oracle's rounding of a value computed with MPFR at 2048 bits (every case here is decided
// long before that).
oracle::Result oracle_of(const Format& f, Rounding mode, void (*compute)(mpfr_ptr),
                         std::uint32_t random = 0) {
  mpfr_t x;
  mpfr_init2(x, 2048);  // the oracle takes up to about 4000 bits
  compute(x);
  const oracle::Result r = oracle::round(oracle::spec_of(f), mode, x, random);
  mpfr_clear(x);
  return r;
}

TEST(Ziv, ExactValuesAreRoundedDirectly) {
  for (const Rounding mode : nt::kAllModes) {
    const ReferenceValue one =
        correctly_rounded(numeric::formats::bf16, mode, [] { return math::exp(Real(0)); });
    EXPECT_EQ(one.rounded.value, 1.0);
    EXPECT_EQ(one.rounded.event, RoundingEvent::exact);
    EXPECT_EQ(one.precision_bits, 257);
  }
  // An exact tie of fp16, 1 + 2^-11: decided by the mode, not by looping.
  const auto tie = [] { return Real(1) + power_of_two(-11); };
  const ReferenceValue even =
      correctly_rounded(numeric::formats::fp16, Rounding::nearest_even, tie);
  const ReferenceValue away =
      correctly_rounded(numeric::formats::fp16, Rounding::nearest_away, tie);
  EXPECT_EQ(even.rounded.value, 1.0);
  EXPECT_EQ(away.rounded.value, 1.0 + 0x1p-10);
  EXPECT_EQ(even.rounded.event, RoundingEvent::inexact);
  EXPECT_EQ(even.value, 1.0 + 0x1p-11);
}

TEST(Ziv, RefinesUntilDecided) {
  // exp(2^-300) = 1 + 2^-300 + ...: at 257 bits the error interval contains 1; at 513 bits it
  // does not, and every mode is decided.
  const auto compute = [] { return math::exp(power_of_two(-300)); };
  const auto with_mpfr = [](mpfr_ptr x) {
    mpfr_set_ui_2exp(x, 1, -300, MPFR_RNDN);
    mpfr_exp(x, x, MPFR_RNDN);
  };
  for (const Format& f : numeric::formats::builtin) {
    for (const Rounding mode : nt::kAllModes) {
      for (const std::uint32_t draw : {0u, 1u, 0x80000000u, 0xFFFFFFFFu}) {
        const ReferenceValue r = correctly_rounded(f, mode, compute, {}, draw);
        const oracle::Result want = oracle_of(f, mode, with_mpfr, draw);
        EXPECT_TRUE(nt::same(r.rounded.value, want.value)) << f.name;
        EXPECT_EQ(r.rounded.event, want.event) << f.name;
        EXPECT_EQ(r.value, 1.0);
        EXPECT_EQ(r.precision_bits, WorkingPrecision(512).bits());
      }
    }
  }
  EXPECT_EQ(correctly_rounded(numeric::formats::fp64, Rounding::upward, compute).rounded.value,
            1.0 + 0x1p-52);
}

TEST(Ziv, JustAboveAMidpointIsDecided) {
  // 1 + 2^-11 + 2^-400/3 in fp16: a hair above the tie between 1 and 1 + 2^-10.
  const auto compute = [] { return Real(1) + power_of_two(-11) + power_of_two(-400) / 3; };
  const ReferenceValue r =
      correctly_rounded(numeric::formats::fp16, Rounding::nearest_even, compute);
  EXPECT_EQ(r.rounded.value, 1.0 + 0x1p-10);
  EXPECT_EQ(r.precision_bits, WorkingPrecision(512).bits());
}

TEST(Ziv, RandomExponentialsAgreeWithOracle) {
  std::mt19937_64 rng(4);
  nt::FailureLog log("exp");
  for (int i = 0; i < 300; ++i) {
    const double x = std::uniform_real_distribution<double>(-100, 100)(rng);
    const auto draw = static_cast<std::uint32_t>(rng());
    mpfr_t exact;
    mpfr_init2(exact, 2048);
    mpfr_set_d(exact, x, MPFR_RNDN);
    mpfr_exp(exact, exact, MPFR_RNDN);
    for (const Format& f : numeric::formats::builtin) {
      for (const Rounding mode : nt::kAllModes) {
        const ReferenceValue r = correctly_rounded(
            f, mode, [x] { return math::exp(to_real(x)); }, {}, draw);
        const oracle::Result want = oracle::round(oracle::spec_of(f), mode, exact, draw);
        if (!nt::same(r.rounded.value, want.value) || r.rounded.event != want.event ||
            r.value != mpfr_get_d(exact, MPFR_RNDN)) {
          log.add(std::string(f.name) + " exp(" + nt::describe(x) + ")");
        }
      }
    }
    mpfr_clear(exact);
  }
}

TEST(Ziv, InexactlyComputedFormatValueReachesTheCap) {
  // sqrt(2)^2 is 2, but computed with rounded operations: no precision can tell it from 2 + tiny,
  // so the loop stops at the cap rather than return an unproven result.
  const auto compute = [] {
    const Real root = math::sqrt(Real(2));
    return root * root;
  };
  const ZivPolicy policy{256, 256, 2048};
  EXPECT_THROW(correctly_rounded(numeric::formats::fp32, Rounding::upward, compute, policy),
               std::runtime_error);
  EXPECT_THROW(correctly_rounded(numeric::formats::fp32, Rounding::nearest_even, compute, policy),
               std::runtime_error);
}

TEST(Ziv, LeavingMpfrsRangeThrows) {
  EXPECT_THROW(correctly_rounded(numeric::formats::fp32, Rounding::nearest_even,
                                 [] { return math::exp(power_of_two(40)); }),
               std::range_error);
  EXPECT_THROW(correctly_rounded(numeric::formats::fp32, Rounding::nearest_even,
                                 [] { return math::exp(-power_of_two(40)); }),
               std::range_error);
}

TEST(Ziv, ZeroInfinityAndNanAreDecidedAtOnce) {
  const double inf = std::numeric_limits<double>::infinity();
  const auto log_of = [](double x) { return [x] { return math::log(to_real(x)); }; };
  EXPECT_EQ(correctly_rounded(numeric::formats::fp16, Rounding::nearest_even, log_of(0.0)).value,
            -inf);
  EXPECT_EQ(
      correctly_rounded(numeric::formats::fp16, Rounding::nearest_even, log_of(1.0)).rounded.event,
      RoundingEvent::exact);
  EXPECT_TRUE(std::isnan(
      correctly_rounded(numeric::formats::fp16, Rounding::nearest_even, log_of(-1.0)).value));
}

}  // namespace
}  // namespace ampbench::reference
