// Every bit pattern of the 16-, 8-, 6- and 4-bit formats: decoding against the published field
// layouts, round trips in every mode, ordering, F16C agreement, and round_to against the MPFR
// oracle at each value, the midpoints between values and their binary64 neighbours (the probe set
// of CPFloat's tests: Fasi and Mikaitis, ACM TOMS 47(1), 2021).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/numeric/test/failure_log.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Field layouts as published: IEEE 754-2019 table 3.5 (binary16), Google's bfloat16, the OCP
// 8-bit floating point specification rev 1.0 (E4M3, E5M2), NVIDIA's A100 whitepaper (TF32), the
// OCP Microscaling Formats (MX) specification v1.0 (FP6 E3M2 bias 3, FP6 E2M3 bias 1, FP4 E2M1
// bias 1, none with infinity or NaN).
enum class Specials { ieee, ocp_e4m3, finite };

struct Published {
  const char* name;
  Format format;
  int exponent_bits;
  int fraction_bits;
  int bias;
  Specials specials;  // ocp_e4m3: no infinities, only S.1111.111 is NaN; finite: neither
};

constexpr Published kFp16{"fp16", formats::fp16, 5, 10, 15, Specials::ieee};
constexpr Published kBf16{"bf16", formats::bf16, 8, 7, 127, Specials::ieee};
constexpr Published kE4m3{"e4m3", formats::e4m3, 4, 3, 7, Specials::ocp_e4m3};
constexpr Published kE5m2{"e5m2", formats::e5m2, 5, 2, 15, Specials::ieee};
constexpr Published kTf32{"tf32", formats::tf32, 8, 10, 127, Specials::ieee};
constexpr Published kE3m2{"e3m2", formats::e3m2, 3, 2, 3, Specials::finite};
constexpr Published kE2m3{"e2m3", formats::e2m3, 2, 3, 1, Specials::finite};
constexpr Published kE2m1{"e2m1", formats::e2m1, 2, 1, 1, Specials::finite};

void PrintTo(const Published& l, std::ostream* os) {
  *os << l.name;
}

int total_bits(const Published& l) {
  return 1 + l.exponent_bits + l.fraction_bits;
}
std::uint32_t pattern_count(const Published& l) {
  return std::uint32_t{1} << total_bits(l);
}

struct Fields {
  bool negative;
  std::uint32_t exponent;
  std::uint32_t fraction;
};

Fields fields(const Published& l, std::uint32_t bits) {
  const int t = l.fraction_bits;
  return {((bits >> (t + l.exponent_bits)) & 1) != 0, (bits >> t) & ((1u << l.exponent_bits) - 1),
          bits & ((1u << t) - 1)};
}

bool is_nan_pattern(const Published& l, std::uint32_t bits) {
  const Fields x = fields(l, bits);
  const std::uint32_t top = (1u << l.exponent_bits) - 1;
  switch (l.specials) {
    case Specials::ocp_e4m3: return x.exponent == top && x.fraction == (1u << l.fraction_bits) - 1;
    case Specials::finite: return false;
    case Specials::ieee: break;
  }
  return x.exponent == top && x.fraction != 0;
}

bool is_inf_pattern(const Published& l, std::uint32_t bits) {
  const Fields x = fields(l, bits);
  return l.specials == Specials::ieee && x.exponent == (1u << l.exponent_bits) - 1 &&
         x.fraction == 0;
}

// The value of a pattern from its fields alone, with ldexp. NaNs: a quiet binary64 NaN with the
// pattern's sign and its fraction as the top payload bits (what decode documents).
double reference_decode(const Published& l, std::uint32_t bits) {
  const Fields x = fields(l, bits);
  const int t = l.fraction_bits;
  if (is_nan_pattern(l, bits)) {
    return double_of((x.negative ? std::uint64_t{1} << 63 : 0) | 0x7FF8000000000000u |
                     (std::uint64_t{x.fraction} << (52 - t)));
  }
  if (is_inf_pattern(l, bits)) return x.negative ? -kInf : kInf;
  const double magnitude = x.exponent == 0 ? std::ldexp(x.fraction, 1 - l.bias - t)
                                           : std::ldexp((1u << t) + x.fraction,
                                                        static_cast<int>(x.exponent) - l.bias - t);
  return x.negative ? -magnitude : magnitude;
}

// The gap from a finite pattern's magnitude to the next value up (beyond the largest finite:
// the top binade's quantum, as with an unbounded exponent range).
double quantum(const Published& l, std::uint32_t bits) {
  const Fields x = fields(l, bits);
  return std::ldexp(1.0, std::max(static_cast<int>(x.exponent), 1) - l.bias - l.fraction_bits);
}

class ExhaustivePatterns : public ::testing::TestWithParam<Published> {};

TEST_P(ExhaustivePatterns, FieldLayoutIsThePublishedOne) {
  const Published& l = GetParam();
  EXPECT_EQ(l.format.total_bits(), total_bits(l));
  EXPECT_EQ(l.format.exponent_bits(), l.exponent_bits);
  EXPECT_EQ(l.format.fraction_bits(), l.fraction_bits);
  EXPECT_EQ(l.format.bias(), l.bias);
  // The helpers of the other tests agree: the special field is all ones.
  EXPECT_EQ(exponent_field_bits(l.format), l.exponent_bits);
  EXPECT_EQ(special_field(l.format), (1 << l.exponent_bits) - 1);
}

TEST_P(ExhaustivePatterns, DecodeMatchesTheFields) {
  const Published& l = GetParam();
  FailureLog log(std::string("decode of ") + l.name);
  for (std::uint32_t bits = 0; bits < pattern_count(l); ++bits) {
    const double got = decode(l.format, bits);
    const double want = reference_decode(l, bits);
    if (bits_of(got) != bits_of(want)) {
      log.add(fmt_bits(bits) + ": decode " + describe(got) + ", fields give " + describe(want));
    }
  }
}

TEST_P(ExhaustivePatterns, RoundTripsInEveryMode) {
  const Published& l = GetParam();
  FailureLog log(std::string("round trip of ") + l.name);
  const std::uint32_t quiet = l.specials == Specials::ieee ? 1u << (l.fraction_bits - 1) : 0;
  for (const Format& f : {l.format, variant(l.format, true, Overflow::saturate)}) {
    const bool saturate = f.overflow == Overflow::saturate;
    for (std::uint32_t bits = 0; bits < pattern_count(l); ++bits) {
      const double v = reference_decode(l, bits);
      for (const Rounding mode : kAllModes) {
        const Rounded r = round_to(f, mode, v, 0x9E3779B9u);
        std::uint64_t want_bits = bits;
        RoundingEvent want_event = RoundingEvent::exact;
        if (is_nan_pattern(l, bits)) {
          want_bits = bits | quiet;
          want_event = RoundingEvent::nan;
        } else if (saturate && is_inf_pattern(l, bits)) {
          want_bits = bits - 1;  // the largest finite value of the same sign
          want_event = RoundingEvent::saturation;
        }
        if (r.bits != want_bits || r.event != want_event) {
          log.add(describe(f) + " " + fmt_bits(bits) + " (" + describe(v) + ") mode " +
                  std::to_string(static_cast<int>(mode)) + ": bits " + fmt_bits(r.bits) +
                  " event " + std::to_string(static_cast<int>(r.event)) + ", expected " +
                  fmt_bits(want_bits));
        }
      }
    }
  }
}

TEST_P(ExhaustivePatterns, PositiveValuesIncreaseAndNegativesMirrorThem) {
  const Published& l = GetParam();
  FailureLog log(std::string("ordering of ") + l.name);
  const std::uint32_t sign = 1u << (total_bits(l) - 1);
  double previous = -1;
  std::uint32_t finite = 0;
  for (std::uint32_t bits = 0; bits < sign; ++bits) {
    if (is_nan_pattern(l, bits)) continue;
    const double v = decode(l.format, bits);
    if (!(v > previous)) log.add(fmt_bits(bits) + " does not exceed the previous pattern");
    if (!same(decode(l.format, bits | sign), -v)) log.add(fmt_bits(bits | sign) + " is not -v");
    previous = v;
    if (std::isfinite(v)) ++finite;
  }
  // IEEE-style: all patterns below the all-ones exponent; e4m3: all but S.1111.111; the MX
  // FP6/FP4 formats: all of them.
  switch (l.specials) {
    case Specials::ieee: EXPECT_EQ(finite, ((1u << l.exponent_bits) - 1) << l.fraction_bits); break;
    case Specials::ocp_e4m3: EXPECT_EQ(finite, sign - 1); break;
    case Specials::finite: EXPECT_EQ(finite, sign); break;
  }
}

std::string PublishedName(const ::testing::TestParamInfo<Published>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Formats, ExhaustivePatterns,
                         ::testing::Values(kFp16, kBf16, kE4m3, kE5m2, kE3m2, kE2m3, kE2m1),
                         PublishedName);

// The values the MX formats' publications list: every positive FP4 E2M1 value (OCP MX v1.0), and
// the extremes of the FP6 formats as LLVM's APFloat/MLIR types f6E3M2FN, f6E2M3FN and f4E2M1FN
// document them (llvm-project PRs 94735, 95392, 105573, 107999, 108877).
TEST(MxPublishedValues, E2m1PositiveValuesAreTheSpecsEight) {
  const double want[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (std::uint32_t bits = 0; bits < 8; ++bits) {
    EXPECT_EQ(decode(formats::e2m1, bits), want[bits]) << fmt_bits(bits);
    EXPECT_TRUE(same(decode(formats::e2m1, bits | 8u), -want[bits])) << fmt_bits(bits | 8u);
  }
}

TEST(MxPublishedValues, Fp6AndFp4Extremes) {
  struct Extremes {
    Format f;
    double max_normal, min_normal, max_subnormal, min_subnormal;
  };
  for (const Extremes& e : {Extremes{formats::e3m2, 28, 0.25, 0.1875, 0.0625},
                            Extremes{formats::e2m3, 7.5, 1.0, 0.875, 0.125},
                            Extremes{formats::e2m1, 6, 1.0, 0.5, 0.5}}) {
    const int t = e.f.fraction_bits();
    EXPECT_EQ(decode(e.f, (std::uint64_t{1} << (e.f.total_bits() - 1)) - 1), e.max_normal);
    EXPECT_EQ(decode(e.f, std::uint64_t{1} << t), e.min_normal);
    EXPECT_EQ(decode(e.f, (std::uint64_t{1} << t) - 1), e.max_subnormal);
    EXPECT_EQ(decode(e.f, 1), e.min_subnormal);
    // Beyond the largest value every mode saturates; a NaN becomes +max.
    for (const Rounding mode : kAllModes) {
      EXPECT_EQ(round_to(e.f, mode, 1e6, 0xFFFFFFFFu).value, e.max_normal) << describe(e.f);
      EXPECT_EQ(round_to(e.f, mode, -1e6, 0xFFFFFFFFu).value, -e.max_normal) << describe(e.f);
      const Rounded nan = round_to(e.f, mode, -std::numeric_limits<double>::quiet_NaN());
      EXPECT_EQ(nan.value, e.max_normal) << describe(e.f);
      EXPECT_EQ(nan.event, RoundingEvent::nan) << describe(e.f);
    }
  }
}

// ---- round_to against the oracle at every value, midpoint, and their neighbours ---------------

// v, its binary64 neighbour away from zero, the midpoint to the next value in magnitude and the
// midpoint's two binary64 neighbours.
std::vector<double> probes(const Published& l, std::uint32_t bits) {
  const double v = reference_decode(l, bits);
  const double sign = std::signbit(v) ? -1.0 : 1.0;
  const double mid = v + sign * quantum(l, bits) / 2;
  return {v, std::nextafter(v, sign * kInf), std::nextafter(mid, 0.0), mid,
          std::nextafter(mid, sign * kInf)};
}

void check_probes(const Published& l, const Format& f, std::span<const std::uint32_t> patterns,
                  FailureLog& log) {
  for (const std::uint32_t bits : patterns) {
    if (is_nan_pattern(l, bits) || is_inf_pattern(l, bits)) continue;
    for (const double x : probes(l, bits)) {
      for (const Draw& d : kDraws) {
        if (const auto mismatch = check_round_to(f, d.mode, x, d.random)) log.add(*mismatch);
      }
    }
  }
}

std::vector<std::uint32_t> all_patterns(const Published& l) {
  std::vector<std::uint32_t> out(pattern_count(l));
  for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = i;
  return out;
}

TEST(ExhaustiveOracle, Fp16EveryValueMidpointAndNeighbour) {
  FailureLog log("fp16 probes");
  check_probes(kFp16, formats::fp16, all_patterns(kFp16), log);
}

TEST(ExhaustiveOracle, Bf16EveryValueMidpointAndNeighbour) {
  FailureLog log("bf16 probes");
  check_probes(kBf16, formats::bf16, all_patterns(kBf16), log);
}

// The 8-, 6- and 4-bit formats are small enough for every variant too.
TEST(ExhaustiveOracle, Fp8EveryValueMidpointAndNeighbourInEveryVariant) {
  for (const Published& l : {kE4m3, kE5m2}) {
    FailureLog log(std::string(l.name) + " probes");
    for (const Format& f : variants(l.format)) check_probes(l, f, all_patterns(l), log);
  }
}

TEST(ExhaustiveOracle, Fp6AndFp4EveryValueMidpointAndNeighbourInEveryVariant) {
  for (const Published& l : {kE3m2, kE2m3, kE2m1}) {
    EXPECT_EQ(variants(l.format).size(), 2u);  // subnormals on and off; saturating only
    FailureLog log(std::string(l.name) + " probes");
    for (const Format& f : variants(l.format)) {
      check_probes(l, f, all_patterns(l), log);
      for (const double x : {kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                             -std::numeric_limits<double>::quiet_NaN(), 1e300, -1e-300}) {
        for (const Draw& d : kDraws) {
          if (const auto mismatch = check_round_to(f, d.mode, x, d.random)) log.add(*mismatch);
        }
      }
    }
  }
}

// The 16-bit formats' variants (subnormals off, saturation) only differ near zero and the top of
// the range: probe the lowest and highest 1024 patterns of each sign there.
TEST(ExhaustiveOracle, SixteenBitVariantsAtTheEndsOfTheRange) {
  for (const Published& l : {kFp16, kBf16}) {
    std::vector<std::uint32_t> ends;
    const std::uint32_t inf = ((1u << l.exponent_bits) - 1) << l.fraction_bits;
    const std::uint32_t sign = 1u << (total_bits(l) - 1);
    for (std::uint32_t i = 0; i < 1024; ++i) {
      for (const std::uint32_t s : {0u, sign}) ends.insert(ends.end(), {s | i, s | (inf - 1 - i)});
    }
    FailureLog log(std::string(l.name) + " variant probes");
    for (const Format& f : variants(l.format)) check_probes(l, f, ends, log);
  }
}

// TF32 has 2^19 patterns; a fixed random sample of them, plus both ends of the range.
TEST(ExhaustiveOracle, Tf32SampledValuesMidpointsAndNeighbours) {
  std::mt19937 rng(19);
  std::vector<std::uint32_t> sample;
  for (int i = 0; i < 8192; ++i) sample.push_back(static_cast<std::uint32_t>(rng()) & 0x7FFFFu);
  for (std::uint32_t i = 0; i < 64; ++i) {
    sample.insert(sample.end(), {i, 0x3FC00u - 1 - i, 0x40000u | i, 0x7FC00u - 1 - i});
  }
  FailureLog log("tf32 probes");
  for (const Format& f : variants(formats::tf32)) check_probes(kTf32, f, sample, log);
}

// ---- F16C ---------------------------------------------------------------------------------------

TEST(ExhaustiveF16c, DecodeMatchesVcvtph2psForEveryPattern) {
  if (!has_f16c()) GTEST_SKIP() << "this CPU has no F16C instructions";
  FailureLog log("fp16 decode vs F16C");
  std::vector<std::uint16_t> patterns(65536);
  std::vector<float> decoded(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) patterns[i] = static_cast<std::uint16_t>(i);
  decode_array(formats::fp16, patterns, decoded);
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    const float hardware = f16c_decode(static_cast<std::uint16_t>(bits));
    const auto scalar = static_cast<float>(decode(formats::fp16, bits));
    if (bits_of(scalar) != bits_of(hardware) || bits_of(decoded[bits]) != bits_of(hardware)) {
      log.add(fmt_bits(bits) + ": decode " + describe(scalar) + ", decode_array " +
              describe(decoded[bits]) + ", F16C " + describe(hardware));
    }
  }
}

// Every fp16 value as a binary32, the midpoints between neighbours and the binary32 numbers next
// to them, and binary32 NaNs with assorted payloads: round_to in the four IEEE directions against
// vcvtps2ph with the same rounding immediate, and encode_array (RNE) against vcvtps2ph.
TEST(ExhaustiveF16c, EncodeMatchesVcvtps2phInTheFourIeeeDirections) {
  if (!has_f16c()) GTEST_SKIP() << "this CPU has no F16C instructions";
  std::vector<float> inputs;
  for (std::uint32_t bits = 0; bits < 65536; ++bits) {
    if (is_inf_pattern(kFp16, bits)) continue;
    if (is_nan_pattern(kFp16, bits)) {
      const std::uint32_t sign = (bits & 0x8000u) != 0 ? 0x80000000u : 0;
      inputs.push_back(float_of(sign | 0x7F800000u | ((bits & 0x3FFu) << 13)));
      continue;
    }
    for (const double x : probes(kFp16, bits)) {
      const auto mid = static_cast<float>(x);  // exact for v and the midpoint
      inputs.insert(inputs.end(), {mid, std::nextafter(mid, 0.0f),
                                   std::nextafter(mid, std::numeric_limits<float>::infinity()),
                                   std::nextafter(mid, -std::numeric_limits<float>::infinity())});
    }
  }
  inputs.insert(inputs.end(), {std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), 1e30f, -1e30f});
  FailureLog log("fp16 encode vs F16C");
  for (const Rounding mode :
       {Rounding::nearest_even, Rounding::toward_zero, Rounding::upward, Rounding::downward}) {
    for (const float x : inputs) {
      const std::uint16_t hardware = f16c_encode(x, mode);
      const Rounded r = round_to(formats::fp16, mode, x);
      if (r.bits != hardware) {
        log.add("mode " + std::to_string(static_cast<int>(mode)) + " x=" + describe(x) +
                ": round_to " + fmt_bits(r.bits) + ", F16C " + fmt_bits(hardware));
      }
    }
  }
  std::vector<std::uint16_t> encoded(inputs.size());
  encode_array(RoundingOptions{formats::fp16, Rounding::nearest_even, 0, Container::binary32},
               inputs, encoded);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::uint16_t hardware = f16c_encode(inputs[i], Rounding::nearest_even);
    if (encoded[i] != hardware) {
      log.add("encode_array x=" + describe(inputs[i]) + ": " + fmt_bits(encoded[i]) + ", F16C " +
              fmt_bits(hardware));
    }
  }
}

}  // namespace
}  // namespace ampbench::numeric::test
