// Distributions: reproducibility (bits depend on seed and index only), statistical sanity with
// thresholds derived from the distributions' moments, the rounding report on hand-computed cases,
// and the spec parser's messages.
#include "harness/inputs/distributions.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstring>
#include <vector>

namespace ampbench::inputs {
namespace {

using numeric::Format;
namespace formats = numeric::formats;

std::vector<std::uint64_t> bits_of(const std::vector<double>& v) {
  std::vector<std::uint64_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(double));
  return out;
}

std::vector<double> values(std::string_view spec, std::size_t n, const Format& f,
                           std::uint64_t seed) {
  const std::size_t shape[] = {n};
  return generate(spec, shape, f, seed).tensor.data;
}

std::string spec_error(std::string_view text, const Format& f = formats::fp32) {
  try {
    resolve(parse_spec(text), f);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr std::string_view kAllSpecs[] = {"normal",
                                          "normal:mu=1,sigma=3",
                                          "uniform:a=-2,b=5",
                                          "loguniform",
                                          "loguniform:emin=-3,emax=3",
                                          "near-overflow",
                                          "subnormal",
                                          "cancel",
                                          "relu",
                                          "constant:value=0.1"};

// ---- reproducibility --------------------------------------------------------------------------

TEST(Reproducibility, SameSeedSameBits) {
  for (const auto spec : kAllSpecs) {
    for (const Format& f : {formats::fp64, formats::fp32, formats::bf16, formats::fp16}) {
      EXPECT_EQ(bits_of(values(spec, 1000, f, 7)), bits_of(values(spec, 1000, f, 7)))
          << spec << " " << f.name;
    }
  }
}

TEST(Reproducibility, DifferentSeedsDiffer) {
  for (const auto spec : kAllSpecs) {
    if (spec.starts_with("constant")) continue;
    const auto a = values(spec, 1000, formats::fp32, 1);
    const auto b = values(spec, 1000, formats::fp32, 2);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    // relu: both zero for about a quarter of the elements.
    EXPECT_GT(differ, 600u) << spec;
  }
}

TEST(Reproducibility, ElementDoesNotDependOnTensorSizeOrShape) {
  for (const auto spec : kAllSpecs) {
    const auto big = values(spec, 4096, formats::fp16, 99);
    const auto small = values(spec, 37, formats::fp16, 99);
    EXPECT_EQ(bits_of(small), bits_of(std::vector<double>(big.begin(), big.begin() + 37))) << spec;
    const std::size_t shape[] = {64, 4, 16};
    EXPECT_EQ(bits_of(generate(spec, shape, formats::fp16, 99).tensor.data), bits_of(big)) << spec;
  }
}

TEST(Reproducibility, ElementIsTheRoundedSampleAtItsIndex) {
  const Spec s = resolve(parse_spec("loguniform"), formats::bf16);
  const auto v = values("loguniform", 500, formats::bf16, 5);
  for (std::uint64_t i = 0; i < 500; i += 37) {
    const double x = sample(s, formats::bf16, 5, i);
    EXPECT_EQ(v[i], numeric::round_to(formats::bf16, numeric::Rounding::nearest_even, x).value);
  }
}

TEST(Reproducibility, TheConversionRoundsInTheModeAsked) {
  // A policy's input_mode reaches generated operands: tf32 truncation (rz) of the same samples,
  // and stochastic rounding with its own stream (each value one of its two neighbours; at least
  // one element of 500 rounded up and one down).
  const Spec s = resolve(parse_spec("normal"), formats::tf32);
  const auto rz = generate("normal", std::vector<std::size_t>{500}, formats::tf32, 9,
                           numeric::Rounding::toward_zero);
  const auto sr = generate("normal", std::vector<std::size_t>{500}, formats::tf32, 9,
                           numeric::Rounding::stochastic_proportional);
  std::size_t up = 0;
  std::size_t down = 0;
  for (std::uint64_t i = 0; i < 500; ++i) {
    const double x = sample(s, formats::tf32, 9, i);
    EXPECT_EQ(rz.tensor.data[i],
              numeric::round_to(formats::tf32, numeric::Rounding::toward_zero, x).value);
    const double below = numeric::round_to(formats::tf32, numeric::Rounding::downward, x).value;
    const double above = numeric::round_to(formats::tf32, numeric::Rounding::upward, x).value;
    EXPECT_TRUE(sr.tensor.data[i] == below || sr.tensor.data[i] == above) << i;
    EXPECT_EQ(sr.tensor.data[i],
              numeric::round_to(formats::tf32, numeric::Rounding::stochastic_proportional, x,
                                numeric::stochastic_draw(conversion_stream(9), i))
                  .value);
    up += below != above && sr.tensor.data[i] == above ? 1 : 0;
    down += below != above && sr.tensor.data[i] == below ? 1 : 0;
  }
  EXPECT_GT(up, 0u);
  EXPECT_GT(down, 0u);
  EXPECT_EQ(rz.report.changed, 500u);  // normal samples are never tf32 values
}

TEST(Reproducibility, TensorRecordsSeedAndResolvedSpecForReplay) {
  const std::size_t shape[] = {3, 5};
  const Generated g = generate("loguniform", shape, formats::fp16, 1234);
  EXPECT_EQ(g.tensor.seed, 1234u);
  EXPECT_EQ(g.tensor.source, "loguniform:emin=-26,emax=16");
  EXPECT_EQ(g.tensor.shape, (std::vector<std::size_t>{3, 5}));
  EXPECT_STREQ(g.tensor.format.name, "fp16");
  const Generated replay = generate(g.tensor.source, g.tensor.shape, formats::fp16, *g.tensor.seed);
  EXPECT_EQ(bits_of(replay.tensor.data), bits_of(g.tensor.data));
  EXPECT_EQ(generate("cancel", shape, formats::fp16, 1).tensor.source,
            "cancel:eps=0.0009765625,spread=4");
}

// Golden values, computed once on x86-64 glibc: a platform or compiler that produces other bits
// breaks the cross-platform promise of docs/inputs.md.
TEST(Reproducibility, GoldenValues) {
  const auto normal = values("normal", 4, formats::fp64, 42);
  const auto loguniform = values("loguniform:emin=-30,emax=10", 4, formats::fp64, 42);
  const auto cancel = values("cancel", 4, formats::fp64, 42);
  EXPECT_EQ(
      fmt::format("{:a} {:a} {:a} {:a}", normal[0], normal[1], normal[2], normal[3]),
      "0x1.c3b620ee5015bp-1 0x1.81bf069d25a47p-3 -0x1.573aedc159931p-1 -0x1.30d6c47f109c6p+0");
  EXPECT_EQ(
      fmt::format("{:a} {:a} {:a} {:a}", loguniform[0], loguniform[1], loguniform[2],
                  loguniform[3]),
      "-0x1.28efe333b266fp+0 0x1.de4431fa3c80dp-29 0x1.9e54d738297f7p-17 -0x1.851f977347ed6p-9");
  EXPECT_EQ(
      fmt::format("{:a} {:a} {:a} {:a}", cancel[0], cancel[1], cancel[2], cancel[3]),
      "0x1.28efe333b266fp+2 -0x1.28efe333b266ep+2 -0x1.9e54d738297f7p-1 0x1.9e54d738297f6p-1");
}

// ---- the elementary functions -----------------------------------------------------------------

TEST(Elementary, LogAgreesWithLibmWithinTwoUlps) {
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const double x = 1 - unit_double(numeric::splitmix64(3, i)) * (i % 2 ? 1.0 : 0x1p-30);
    const double ref = static_cast<double>(std::log(static_cast<long double>(x)));
    EXPECT_LE(std::abs(det_log(x) - ref), 2 * std::abs(std::nextafter(ref, 0.0) - ref) + 0x1p-1074)
        << fmt::format("{:a}", x);
  }
  EXPECT_EQ(det_log(1.0), 0.0);
  EXPECT_EQ(det_log(0x1p-53), -53 * std::log(2.0));
}

TEST(Elementary, CosAgreesWithLongDoubleWithin2ToMinus52) {
  const long double two_pi = 6.283185307179586476925286766559L;
  for (std::uint64_t i = 0; i < 200000; ++i) {
    const double u = unit_double(numeric::splitmix64(4, i));
    const auto ref = static_cast<double>(std::cos(two_pi * static_cast<long double>(u)));
    ASSERT_LE(std::abs(det_cos_2pi(u) - ref), 0x1p-52) << fmt::format("{:a}", u);
  }
  EXPECT_EQ(det_cos_2pi(0.0), 1.0);
  EXPECT_EQ(det_cos_2pi(0.5), -1.0);
  EXPECT_EQ(det_cos_2pi(0.25), 0.0);
}

// ---- statistics -------------------------------------------------------------------------------
// N = 10^5 draws; each mean and variance must lie within 5 standard errors of its expectation
// (a two-sided normal tail of 5.7e-7 per check), each standard error computed from the
// distribution's moments.

constexpr std::size_t kN = 100000;

struct Moments {
  double mean, variance;
};
Moments moments(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (const double x : v) ss += (x - mean) * (x - mean);
  return {mean, ss / static_cast<double>(v.size() - 1)};
}

TEST(Statistics, NormalMeanAndVarianceWithinFiveStandardErrors) {
  const double mu = 3, sigma = 2, n = kN;
  const auto v = values("normal:mu=3,sigma=2", kN, formats::fp64, 11);
  const Moments m = moments(v);
  const double se_mean = sigma / std::sqrt(n);
  const double se_var = sigma * sigma * std::sqrt(2 / (n - 1));  // normal: Var(s^2)=2s^4/(n-1)
  EXPECT_NEAR(m.mean, mu, 5 * se_mean);
  EXPECT_NEAR(m.variance, sigma * sigma, 5 * se_var);
  // Tails: P(|z| > 2) from the normal CDF, binomial standard error.
  const double p = 2 * boost::math::cdf(boost::math::complement(boost::math::normal(), 2.0));
  std::size_t tail = 0;
  for (const double x : v) tail += std::abs(x - mu) > 2 * sigma;
  EXPECT_NEAR(static_cast<double>(tail) / n, p, 5 * std::sqrt(p * (1 - p) / n));
}

TEST(Statistics, UniformMeanAndVarianceWithinFiveStandardErrors) {
  const double a = -2, b = 5, n = kN, w = b - a;
  const auto v = values("uniform:a=-2,b=5", kN, formats::fp64, 12);
  for (const double x : v) ASSERT_TRUE(a <= x && x < b) << x;
  const Moments m = moments(v);
  // Var = w^2/12; the sample variance's variance is (mu4 - sigma^4)/n with mu4 = w^4/80.
  EXPECT_NEAR(m.mean, (a + b) / 2, 5 * w / std::sqrt(12 * n));
  EXPECT_NEAR(m.variance, w * w / 12, 5 * w * w * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
}

TEST(Statistics, LogUniformExponentsUniformByChiSquare) {
  const int emin = -30, emax = 10, bins = emax - emin + 1;
  const auto v = values("loguniform:emin=-30,emax=10", kN, formats::fp64, 13);
  std::vector<double> count(bins, 0);
  std::size_t negative = 0;
  for (const double x : v) {
    int e = 0;
    std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    ASSERT_TRUE(e - 1 >= emin && e - 1 <= emax) << x;
    ++count[e - 1 - emin];
    negative += x < 0;
  }
  const double expected = static_cast<double>(kN) / bins;
  double chi2 = 0;
  for (const double c : count) chi2 += (c - expected) * (c - expected) / expected;
  // Rejected at p = 0.001 when above the 0.999 quantile of chi-square with bins - 1 = 40 degrees
  // of freedom (73.40).
  const double critical = boost::math::quantile(boost::math::chi_squared(bins - 1), 0.999);
  EXPECT_NEAR(critical, 73.40, 0.01);
  EXPECT_LT(chi2, critical);
  EXPECT_NEAR(static_cast<double>(negative), kN / 2.0, 5 * std::sqrt(kN * 0.25));
}

TEST(Statistics, LogUniformDefaultRangeReachesUnderflowAndOverflow) {
  const std::size_t shape[] = {kN};
  const Generated g = generate("loguniform", shape, formats::fp16, 14);
  EXPECT_EQ(g.tensor.source, "loguniform:emin=-26,emax=16");
  // 43 binades, each with probability 1/43. [2^-26, 2^-25) flushes to zero; [2^-25, 2^-24)
  // rounds up to 2^-24 (but for 2^-25 itself, a tie, probability 2^-52). [2^16, 2^17) overflows,
  // and so does the top 16/32768 of [2^15, 2^16), from 65520 up.
  const double n = kN;
  const double p_flush = 1.0 / 43;
  const double p_overflow = (1 + 16.0 / 32768) / 43;
  EXPECT_NEAR(static_cast<double>(g.report.flushed), n * p_flush,
              5 * std::sqrt(n * p_flush * (1 - p_flush)));
  EXPECT_NEAR(static_cast<double>(g.report.overflowed), n * p_overflow,
              5 * std::sqrt(n * p_overflow * (1 - p_overflow)));
  EXPECT_GT(g.report.events[numeric::RoundingEvent::underflow], 0u);
  EXPECT_EQ(resolve(parse_spec("loguniform"), formats::fp64).emin, -1022);
  EXPECT_EQ(resolve(parse_spec("loguniform"), formats::fp64).emax, 1023);
}

TEST(Statistics, SubnormalIsMostlySubnormalsOfTheFormat) {
  for (const Format& f :
       {formats::fp16, formats::bf16, formats::fp32, formats::fp64, formats::e4m3, formats::e5m2}) {
    const std::size_t shape[] = {kN};
    const Generated g = generate("subnormal", shape, f, 15);
    EXPECT_EQ(g.report.changed, 0u) << f.name;  // every value is one of the format
    const double min_normal = std::ldexp(1.0, f.emin);
    std::size_t subnormal = 0;
    std::vector<int> binades(f.fraction_bits(), 0);
    for (const double x : g.tensor.data) {
      ASSERT_NE(x, 0.0);
      ASSERT_LT(std::abs(x), 2 * min_normal) << f.name;
      if (std::abs(x) < min_normal) {
        ++subnormal;
        int e = 0;
        std::frexp(x, &e);
        ++binades.at(e - 1 - (f.emin - f.fraction_bits()));
      }
    }
    const double p = 0.9;
    EXPECT_NEAR(static_cast<double>(subnormal) / kN, p, 5 * std::sqrt(p * (1 - p) / kN)) << f.name;
    for (const int c : binades) EXPECT_GT(c, 0) << f.name;  // every subnormal binade is reached
  }
  EXPECT_EQ(values("subnormal:fraction=1", 100, formats::fp16, 1).size(), 100u);
}

TEST(Statistics, ReluIsHalfZerosAndOtherwiseTheNormal) {
  const auto relu = values("relu", kN, formats::fp32, 16);
  const auto normal = values("normal", kN, formats::fp32, 16);
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < kN; ++i) {
    if (relu[i] == 0) {
      ++zeros;
      ASSERT_FALSE(std::signbit(relu[i]));
      ASSERT_LE(normal[i], 0);
    } else {
      ASSERT_EQ(relu[i], normal[i]);
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros) / kN, 0.5, 5 * std::sqrt(0.25 / kN));
}

TEST(Statistics, CancelSumsNearZero) {
  const Format f = formats::fp32;
  const auto v = values("cancel", kN, f, 17);
  // Magnitudes lie in [2^-4, 2^5) and values are fp32, multiples of 2^-27; every partial sum is
  // below 2^22 and so exact in binary64.
  double sum = 0, sum_abs = 0, sum_r2 = 0;
  for (std::size_t k = 0; k + 1 < kN; k += 2) {
    ASSERT_LT(v[k] * v[k + 1], 0) << k;  // opposite signs
    const double r = v[k] + v[k + 1];
    sum += r;
    sum_abs += std::abs(v[k]) + std::abs(v[k + 1]);
    sum_r2 += r * r;
    // |r| <= |m| eps + rounding of both (2^-24 each, relative) + binary64 rounding of m(1 + delta)
    ASSERT_LE(std::abs(r), (0x1p-23 + 0x1p-23 + 0x1p-52) * std::abs(v[k]) * 1.01) << k;
  }
  // The pair sums are independent and symmetric about zero: the total lies within 5 standard
  // deviations, sqrt(sum of r^2), of zero; against sum |x| it is tiny.
  EXPECT_LE(std::abs(sum), 5 * std::sqrt(sum_r2));
  EXPECT_LT(std::abs(sum), 1e-6 * sum_abs);
  // Both orders occur.
  std::size_t positive_first = 0;
  for (std::size_t k = 0; k < kN; k += 2) positive_first += v[k] > 0;
  EXPECT_NEAR(static_cast<double>(positive_first), kN / 4.0, 5 * std::sqrt(kN / 2.0 * 0.25));
}

TEST(Statistics, NearOverflowWithinTheFactorOfMax) {
  const std::size_t shape[] = {kN};
  const Generated g = generate("near-overflow", shape, formats::fp16, 18);
  EXPECT_EQ(g.report.overflowed, 0u);
  std::size_t negative = 0;
  for (const double x : g.tensor.data) {
    ASSERT_GE(std::abs(x), 65504.0 / 2);
    ASSERT_LE(std::abs(x), 65504.0);
    negative += x < 0;
  }
  EXPECT_NEAR(static_cast<double>(negative), kN / 2.0, 5 * std::sqrt(kN * 0.25));
  for (const double x : values("near-overflow:factor=1", 10, formats::e4m3, 1)) {
    EXPECT_EQ(std::abs(x), 448.0);
  }
}

// ---- the rounding report ----------------------------------------------------------------------

RoundingReport report_of(std::string_view spec, const Format& f, std::size_t n = 3) {
  const std::size_t shape[] = {n};
  return generate(spec, shape, f, 0).report;
}

TEST(RoundingReport, HandComputedConstants) {
  using numeric::RoundingEvent;
  const Format fp16 = formats::fp16;
  // 70000 > 65520, the fp16 overflow threshold (65504 + half its ulp of 32): inf.
  auto r = report_of("constant:value=70000", fp16);
  EXPECT_EQ(r.overflowed, 3u);
  EXPECT_EQ(r.changed, 3u);
  EXPECT_EQ(r.events[RoundingEvent::overflow], 3u);
  // 65520 is the midpoint between 65504 and 2^16: ties to even, the even one is 2^16: overflow.
  EXPECT_EQ(report_of("constant:value=65520", fp16).overflowed, 3u);
  r = report_of("constant:value=65519", fp16);  // rounds down to 65504
  EXPECT_EQ(r.overflowed, 0u);
  EXPECT_EQ(r.events[RoundingEvent::inexact], 3u);
  // 1e-10 < 2^-25 (half the smallest subnormal 2^-24): flushed.
  r = report_of("constant:value=1e-10", fp16);
  EXPECT_EQ(r.flushed, 3u);
  EXPECT_EQ(r.changed, 3u);
  // 3e-8 > 2^-25 = 2.98e-8: rounds up to 2^-24, an underflow but not a flush.
  r = report_of("constant:value=3e-8", fp16);
  EXPECT_EQ(r.flushed, 0u);
  EXPECT_EQ(r.changed, 3u);
  EXPECT_EQ(r.events[RoundingEvent::underflow], 3u);
  EXPECT_EQ(report_of("constant:value=0.1", fp16).changed, 3u);
  r = report_of("constant:value=1", fp16);
  EXPECT_EQ(r.changed, 0u);
  EXPECT_EQ(r.events[RoundingEvent::exact], 3u);
  EXPECT_EQ(report_of("constant:value=nan", fp16).changed, 0u);  // NaN stays NaN
  EXPECT_EQ(report_of("constant:value=inf", fp16).changed, 0u);
  EXPECT_EQ(report_of("constant:value=-inf", formats::e4m3).changed, 3u);  // no infinity: NaN
  // A saturating format clamps to +-max: still counted as overflowed.
  Format sat = fp16;
  sat.overflow = numeric::Overflow::saturate;
  r = report_of("constant:value=-70000", sat);
  EXPECT_EQ(r.overflowed, 3u);
  EXPECT_EQ(r.events[RoundingEvent::saturation], 3u);
  EXPECT_EQ(r.summary(), "3 values: 3 changed by rounding, 0 flushed to zero, 3 overflowed");
}

TEST(RoundingReport, ConstantIsRoundedFromItsTextNotThroughBinary64) {
  // 1 + 2^-11 + 2^-60: its binary64 is the fp16 midpoint 1 + 2^-11, which would round to even (1);
  // the exact value lies above the midpoint and rounds up to 1 + 2^-10.
  const std::size_t shape[] = {1};
  EXPECT_EQ(generate("constant:value=0x1.002000000000001p0", shape, formats::fp16, 0).tensor.data,
            std::vector<double>{0x1.004p0});
}

TEST(RoundingReport, CountsAddUpAndAccumulate) {
  const std::size_t shape[] = {1000};
  const Generated g = generate("loguniform:emin=-40,emax=40", shape, formats::fp16, 3);
  EXPECT_EQ(g.report.total(), 1000u);
  EXPECT_EQ(g.report.changed, 1000 - g.report.events[numeric::RoundingEvent::exact]);
  RoundingReport sum = g.report;
  sum += g.report;
  EXPECT_EQ(sum.total(), 2000u);
  EXPECT_EQ(sum.flushed, 2 * g.report.flushed);
}

TEST(Shapes, ScalarAndEmpty) {
  const Generated scalar = generate("normal", {}, formats::fp32, 1);
  EXPECT_EQ(scalar.tensor.size(), 1u);
  const std::size_t empty[] = {4, 0, 3};
  EXPECT_EQ(generate("normal", empty, formats::fp32, 1).tensor.size(), 0u);
  EXPECT_EQ(shape_string(empty), "[4, 0, 3]");
}

// ---- the spec parser --------------------------------------------------------------------------

TEST(SpecParser, ParsesEveryExampleAndRoundTrips) {
  for (const auto text :
       {"normal", "normal:mu=0,sigma=2", "uniform:a=-1,b=1", "loguniform:emin=-30,emax=10",
        "near-overflow", "near-overflow:factor=4", "subnormal", "subnormal:fraction=0.5", "cancel",
        "cancel:eps=0.001,spread=2", "relu", "constant:value=0.1", "file:/tmp/x.npy",
        "uniform:a=0x1p-3,b=1e300", "log-uniform"}) {
    const Spec s = parse_spec(text);
    EXPECT_EQ(parse_spec(to_string(s)), s) << text;
  }
  const Spec s = parse_spec("normal:sigma=2,mu=-0.5");
  EXPECT_EQ(s.mu, -0.5);
  EXPECT_EQ(s.sigma, 2);
  EXPECT_EQ(to_string(s), "normal:mu=-0.5,sigma=2");
  EXPECT_EQ(parse_spec("file:a,b=c:d.npy").path, "a,b=c:d.npy");
  EXPECT_EQ(parse_spec("uniform:a=0x1p-3").a, 0.125);
}

TEST(SpecParser, ErrorsNameTheSpecAndTheProblem) {
  EXPECT_EQ(spec_error("gauss"),
            "input spec 'gauss': unknown distribution 'gauss' (known: normal, uniform, "
            "loguniform, near-overflow, subnormal, cancel, relu, constant, file)");
  EXPECT_EQ(spec_error("normal:scale=2"),
            "input spec 'normal:scale=2': unknown parameter 'scale' (normal takes mu, sigma)");
  EXPECT_EQ(spec_error("normal:sigma=abc"),
            "input spec 'normal:sigma=abc': sigma=abc is not a number");
  EXPECT_EQ(spec_error("normal:sigma=-1"),
            "input spec 'normal:sigma=-1': sigma must be >= 0 (got -1)");
  EXPECT_EQ(spec_error("normal:mu=inf"), "input spec 'normal:mu=inf': mu=inf must be finite");
  EXPECT_EQ(spec_error("uniform:a=2,b=1"),
            "input spec 'uniform:a=2,b=1': a must be <= b (got a=2, b=1)");
  EXPECT_EQ(
      spec_error("uniform:a=-1e308,b=1e308"),
      "input spec 'uniform:a=-1e308,b=1e308': b - a overflows binary64 (a=-1e+308, b=1e+308)");
  EXPECT_EQ(spec_error("normal:mu=1,mu=2"),
            "input spec 'normal:mu=1,mu=2': parameter 'mu' given twice");
  EXPECT_EQ(spec_error("normal:mu"), "input spec 'normal:mu': 'mu' is not of the form name=value");
  EXPECT_EQ(spec_error("normal:mu="), "input spec 'normal:mu=': mu= has no value");
  EXPECT_EQ(spec_error("normal:"),
            "input spec 'normal:': nothing after ':' (write the name alone for the defaults)");
  EXPECT_EQ(spec_error("normal:mu=1,"),
            "input spec 'normal:mu=1,': '' is not of the form name=value");
  EXPECT_EQ(spec_error("loguniform:emin=1.5"),
            "input spec 'loguniform:emin=1.5': emin=1.5 is not an integer");
  EXPECT_EQ(spec_error("loguniform:emin=3,emax=2"),
            "input spec 'loguniform:emin=3,emax=2': emin must be <= emax (got emin=3, emax=2)");
  EXPECT_EQ(spec_error("loguniform:emin=-1074"),
            "input spec 'loguniform:emin=-1074': emin=-1074 is outside binary64's normal "
            "exponents [-1022, 1023]");
  EXPECT_EQ(
      spec_error("loguniform:emin=20", formats::fp16),
      "input spec 'loguniform:emin=20': emin must be <= emax (got emin=20, emax=16 for fp16)");
  EXPECT_EQ(spec_error("near-overflow:factor=0.5"),
            "input spec 'near-overflow:factor=0.5': factor must be >= 1 (got 0.5)");
  EXPECT_EQ(spec_error("subnormal:fraction=2"),
            "input spec 'subnormal:fraction=2': fraction must be in [0, 1] (got 2)");
  EXPECT_EQ(spec_error("subnormal", numeric::user_format(11, -14, 15, false)),
            "input spec 'subnormal:fraction=0.9': format user has no subnormals");
  EXPECT_EQ(spec_error("cancel:eps=-1"),
            "input spec 'cancel:eps=-1': eps must be in [0, 1] (got -1)");
  EXPECT_EQ(spec_error("constant:value=x"),
            "input spec 'constant:value=x': value=x is not a number");
  EXPECT_EQ(spec_error("file:"), "input spec 'file:': file: needs a path (file:PATH)");
  EXPECT_EQ(spec_error(""),
            "input spec '': no distribution named (known: normal, uniform, loguniform, "
            "near-overflow, subnormal, cancel, relu, constant, file)");
  // SpecError is an io::InputError: one catch for every bad input.
  EXPECT_THROW(parse_spec("nope"), io::InputError);
}

}  // namespace
}  // namespace ampbench::inputs
