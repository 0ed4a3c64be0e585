// validate(), the command-line names of formats and modes, and the ulp functions.
#include "harness/numeric/options.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "harness/numeric/test/test_support.hpp"
#include "harness/numeric/ulp.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Validation check(const Format& f, Container container = Container::binary64) {
  return validate(RoundingOptions{f, Rounding::nearest_even, 0, container});
}

bool mentions(const std::vector<std::string>& messages, std::string_view needle) {
  for (const auto& m : messages) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(Validate, RejectsImpossibleFormats) {
  EXPECT_FALSE(check(user_format(60, -10, 10)).ok());
  EXPECT_TRUE(mentions(check(user_format(60, -10, 10)).errors, "60"));
  EXPECT_FALSE(check(user_format(54, -10, 10)).ok());
  EXPECT_FALSE(check(user_format(0, -10, 10)).ok());
  EXPECT_FALSE(check(user_format(1, -10, 10)).ok());  // IEEE-style needs a fraction bit for NaN
  EXPECT_FALSE(check(user_format(8, 5, 4)).ok());
  EXPECT_TRUE(mentions(check(user_format(8, 5, 4)).errors, "emin"));
  EXPECT_FALSE(check(user_format(8, -1022, 1024)).ok());   // beyond binary64's range
  EXPECT_FALSE(check(user_format(53, -1023, 1023)).ok());  // subnormals below 2^-1074
  EXPECT_FALSE(check(user_format(2, -1074, 10)).ok());
}

TEST(Validate, AcceptsTheEdgesOfBinary64) {
  EXPECT_TRUE(check(user_format(53, -1022, 1023)).ok());
  EXPECT_TRUE(check(user_format(2, -1073, 1023)).ok());  // 2^-1073 with one fraction bit
  EXPECT_TRUE(check(user_format(2, 0, 0)).ok());
  EXPECT_TRUE(check(user_format(2, -8, -8)).ok());
}

TEST(Validate, BuiltInFormatsAreValidAndWithoutWarningsWhereDoubleRoundingIsHarmless) {
  for (const Format& f : formats::builtin) {
    const Validation v = check(f);
    EXPECT_TRUE(v.ok()) << f.name;
    EXPECT_TRUE(v.warnings.empty()) << f.name << ": " << (v.warnings.empty() ? "" : v.warnings[0]);
  }
  // In binary32, 24 >= 2p + 2 for bf16 (p=8), fp16 and tf32 (p=11), and the fp8 formats; fp32
  // itself needs no second rounding.
  for (const Format& f : {formats::fp32, formats::tf32, formats::bf16, formats::fp16, formats::e4m3,
                          formats::e5m2, formats::e3m2, formats::e2m3, formats::e2m1}) {
    const Validation v = check(f, Container::binary32);
    EXPECT_TRUE(v.ok()) << f.name;
    EXPECT_TRUE(v.warnings.empty()) << f.name;
  }
  EXPECT_FALSE(check(formats::fp64, Container::binary32).ok());
}

TEST(Validate, WarnsAboutDoubleRounding) {
  // p = 20 computed in binary32: 24 < 2*20 + 2 (Figueroa's condition).
  const Validation v20 = check(user_format(20, -126, 127), Container::binary32);
  EXPECT_TRUE(v20.ok());
  ASSERT_EQ(v20.warnings.size(), 1u);
  EXPECT_NE(v20.warnings[0].find("double rounding"), std::string::npos) << v20.warnings[0];
  // p = 12 still warns (24 < 26), p = 11 does not (24 >= 24).
  EXPECT_FALSE(check(user_format(12, -14, 15), Container::binary32).warnings.empty());
  EXPECT_TRUE(check(user_format(11, -14, 15), Container::binary32).warnings.empty());
  // In binary64: p = 26 warns (53 < 54), p = 25 does not.
  EXPECT_FALSE(check(user_format(26, -126, 127)).warnings.empty());
  EXPECT_TRUE(check(user_format(25, -126, 127)).warnings.empty());
}

TEST(Validate, RejectsWhatDoesNotFitBinary32) {
  EXPECT_FALSE(check(user_format(25, -126, 127), Container::binary32).ok());
  EXPECT_FALSE(check(user_format(11, -126, 128), Container::binary32).ok());
  EXPECT_FALSE(check(user_format(11, -140, 127), Container::binary32).ok());  // 2^-150
  EXPECT_TRUE(check(user_format(11, -139, 127), Container::binary32).ok());   // 2^-149
}

TEST(Names, FormatsAndAliases) {
  const std::pair<std::string_view, Format> cases[] = {
      {"fp64", formats::fp64},     {"double", formats::fp64},        {"binary64", formats::fp64},
      {"float64", formats::fp64},  {"fp32", formats::fp32},          {"float", formats::fp32},
      {"single", formats::fp32},   {"binary32", formats::fp32},      {"float32", formats::fp32},
      {"tf32", formats::tf32},     {"bf16", formats::bf16},          {"bfloat16", formats::bf16},
      {"fp16", formats::fp16},     {"half", formats::fp16},          {"float16", formats::fp16},
      {"binary16", formats::fp16}, {"e4m3", formats::e4m3},          {"fp8-e4m3", formats::e4m3},
      {"fp8e4m3", formats::e4m3},  {"float8_e4m3fn", formats::e4m3}, {"e5m2", formats::e5m2},
      {"fp8-e5m2", formats::e5m2}, {"fp8e5m2", formats::e5m2},       {"float8_e5m2", formats::e5m2},
      {"HALF", formats::fp16},     {"BFloat16", formats::bf16},      {"e3m2", formats::e3m2},
      {"fp6-e3m2", formats::e3m2}, {"float6_e3m2fn", formats::e3m2}, {"e2m3", formats::e2m3},
      {"fp6-e2m3", formats::e2m3}, {"float6_e2m3fn", formats::e2m3}, {"e2m1", formats::e2m1},
      {"fp4", formats::e2m1},      {"float4_e2m1fn", formats::e2m1},
  };
  for (const auto& [name, f] : cases) {
    const std::optional<Format> got = format_from_name(name);
    ASSERT_TRUE(got.has_value()) << name;
    EXPECT_TRUE(same_format(*got, f)) << name;
    EXPECT_STREQ(got->name, f.name) << name;
  }
  for (const std::string_view bad : {"", "fp8", "e3m4", "fp16 ", "float8"}) {
    EXPECT_FALSE(format_from_name(bad).has_value()) << '"' << bad << '"';
  }
  const std::string all = format_names();
  for (const Format& f : formats::builtin) EXPECT_NE(all.find(f.name), std::string::npos);
}

// A user format without infinity or NaN reads as the MX formats do, saturating; one that would
// overflow to infinity is refused, naming the reason.
TEST(Names, UserFormatsWithoutSpecials) {
  const FormatSpec fp4 = parse_format("user:p=2,emin=0,emax=2,specials=none");
  ASSERT_TRUE(fp4.format.has_value()) << fp4.error;
  EXPECT_TRUE(same_format(*fp4.format, formats::e2m1));
  EXPECT_TRUE(check(*fp4.format).ok());
  const FormatSpec ocp = parse_format("user:p=4,emin=-6,emax=8,specials=single_nan");
  ASSERT_TRUE(ocp.format.has_value()) << ocp.error;
  EXPECT_TRUE(same_format(*ocp.format, formats::e4m3));
  Format overflowing = *fp4.format;
  overflowing.overflow = Overflow::infinity;
  EXPECT_TRUE(mentions(check(overflowing).errors, "overflow must be saturate"));
  EXPECT_EQ(specials_name(SpecialEncoding::none), "none");
}

TEST(Names, ScaleFormats) {
  for (const std::string_view name : {"ue8m0", "E8M0", "float8_e8m0fnu"}) {
    ASSERT_TRUE(scale_format_from_name(name).has_value()) << name;
    EXPECT_EQ(scale_format_from_name(name)->kind, ScaleKind::e8m0) << name;
  }
  ASSERT_TRUE(scale_format_from_name("ue4m3").has_value());
  EXPECT_EQ(scale_format_from_name("ue4m3")->kind, ScaleKind::e4m3_unsigned);
  EXPECT_FALSE(scale_format_from_name("e4m3").has_value());  // the signed element format
  EXPECT_EQ(scale_format_names(), "ue8m0, ue4m3");
}

TEST(Names, UserFormatsTakeEachKeyOnceAsAPlainInteger) {
  const FormatSpec good = parse_format("user:p=11,emin=-14,emax=15");
  ASSERT_TRUE(good.format.has_value()) << good.error;
  EXPECT_TRUE(same_format(*good.format, user_format(11, -14, 15)));
  EXPECT_TRUE(parse_format("USER:P=11,EMIN=-14,EMAX=15").format.has_value());
  const std::pair<std::string_view, std::string_view> bad[] = {
      {"user:p=11,p=12,emin=-14,emax=15",
       "format 'user:p=11,p=12,emin=-14,emax=15': p is given twice"},
      {"user:p=11,emin=-14,emax=15,emin=-14",
       "format 'user:p=11,emin=-14,emax=15,emin=-14': emin is given twice"},
      {"user:p=+11,emin=-14,emax=15", "'p=+11' is not KEY=INTEGER"},
      {"user:p= 11,emin=-14,emax=15", "'p= 11' is not KEY=INTEGER"},
      {"user:p=11 ,emin=-14,emax=15", "'p=11 ' is not KEY=INTEGER"},
      {"user:p=0x0b,emin=-14,emax=15", "'p=0x0b' is not KEY=INTEGER"},
      {"user:p=99999999999,emin=-14,emax=15", "'p=99999999999' is not KEY=INTEGER"},
      {"user: p=11,emin=-14,emax=15", "unknown key ' p' (expected p, emin, emax, specials)"},
      {"user:+p=11,emin=-14,emax=15", "unknown key '+p' (expected p, emin, emax, specials)"},
      {"user:p=2,emin=0,emax=2,specials=finite",
       "format 'user:p=2,emin=0,emax=2,specials=finite': specials 'finite' is not ieee, "
       "single_nan or none"},
      {"user:p=2,emin=0,emax=2,specials=none,specials=none", "specials is given twice"},
      {"user:p=2,emin=0,emax=2,specials=", "specials '' is not"},
  };
  for (const auto& [spec, message] : bad) {
    const FormatSpec parsed = parse_format(spec);
    EXPECT_FALSE(parsed.format.has_value()) << spec;
    EXPECT_NE(parsed.error.find(message), std::string::npos) << spec << ": " << parsed.error;
  }
}

TEST(Names, RoundingModes) {
  const std::pair<std::string_view, Rounding> cases[] = {
      {"rne", Rounding::nearest_even},
      {"rna", Rounding::nearest_away},
      {"rz", Rounding::toward_zero},
      {"ru", Rounding::upward},
      {"rd", Rounding::downward},
      {"rto", Rounding::to_odd},
      {"sr", Rounding::stochastic_proportional},
      {"srp", Rounding::stochastic_proportional},
      {"sre", Rounding::stochastic_equal},
      {"RNE", Rounding::nearest_even},
  };
  for (const auto& [name, mode] : cases) {
    EXPECT_EQ(rounding_from_name(name), mode) << name;
  }
  for (const std::string_view bad : {"", "rn", "nearest", "s"}) {
    EXPECT_FALSE(rounding_from_name(bad).has_value()) << '"' << bad << '"';
  }
  for (const Rounding mode : kAllModes) {
    EXPECT_EQ(rounding_from_name(rounding_name(mode)), mode) << rounding_name(mode);
    EXPECT_NE(rounding_names().find(rounding_name(mode)), std::string::npos);
  }
}

TEST(Names, EventsHaveDistinctNames) {
  std::vector<std::string_view> names;
  for (int e = 0; e < kRoundingEventCount; ++e) {
    const std::string_view name = event_name(static_cast<RoundingEvent>(e));
    EXPECT_NE(name, "?");
    for (const auto& other : names) EXPECT_NE(name, other);
    names.push_back(name);
  }
}

// Distances are counted from the published encodings: in IEEE-style formats consecutive positive
// patterns are consecutive values, so the distance from 0 to a positive value is its pattern.
TEST(Ulp, DistanceCountsRepresentableSteps) {
  const Format& h = formats::fp16;
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0 + 0x1p-10), 1u);
  EXPECT_EQ(ulp_distance(h, 1.0 + 0x1p-10, 1.0), 1u);
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0 - 0x1p-11), 1u);  // across a binade
  EXPECT_EQ(ulp_distance(h, 0.0, -0.0), 0u);
  EXPECT_EQ(ulp_distance(h, -0.0, 0x1p-24), 1u);
  EXPECT_EQ(ulp_distance(h, -0x1p-24, 0x1p-24), 2u);  // across zero
  EXPECT_EQ(ulp_distance(h, 0.0, 65504.0), 0x7BFFu);
  EXPECT_EQ(ulp_distance(h, 65504.0, kInf), 1u);  // infinity one step past max
  EXPECT_EQ(ulp_distance(h, -kInf, kInf), 2u * 0x7C00u);
  EXPECT_EQ(ulp_distance(h, 0.0, 1.0), 0x3C00u);
  EXPECT_EQ(ulp_distance(h, -1.0, 2.0), 0x3C00u + 0x4000u);
  EXPECT_FALSE(ulp_distance(h, kNaN, 1.0).has_value());
  EXPECT_FALSE(ulp_distance(h, 1.0, -kNaN).has_value());
  EXPECT_FALSE(ulp_distance(h, 1.0 + 0x1p-11, 1.0).has_value());  // not an fp16 value
  EXPECT_FALSE(ulp_distance(h, 1e6, 1.0).has_value());

  EXPECT_EQ(ulp_distance(formats::e4m3, 0.0, 448.0), 0x7Eu);
  EXPECT_EQ(ulp_distance(formats::e4m3, -448.0, 448.0), 2u * 0x7Eu);
  EXPECT_EQ(ulp_distance(formats::bf16, 1.0, 2.0), 128u);
  EXPECT_EQ(ulp_distance(formats::fp64, 1.0, std::nextafter(1.0, 2.0)), 1u);
  EXPECT_EQ(ulp_distance(formats::fp64, 0.0, 0x1p-1074), 1u);
}

// Without subnormals the values next to 0 are +-2^emin, and subnormal numbers are no values.
TEST(Ulp, DistanceSkipsSubnormalsWhenTheyAreOff) {
  const Format h = variant(formats::fp16, false, Overflow::infinity);
  EXPECT_EQ(ulp_distance(h, 0.0, 0x1p-14), 1u);
  EXPECT_EQ(ulp_distance(h, -0x1p-14, 0x1p-14), 2u);
  EXPECT_EQ(ulp_distance(h, 0x1p-14, 0x1p-14 + 0x1p-24), 1u);
  EXPECT_EQ(ulp_distance(h, 0.0, 1.0), 0x3C00u - 0x3FFu);
  EXPECT_FALSE(ulp_distance(h, 0.0, 0x1p-24).has_value());
  EXPECT_FALSE(ulp_distance(h, 0x1p-15, 0x1p-14).has_value());
}

TEST(Ulp, Quantum) {
  EXPECT_EQ(ulp(formats::fp16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp(formats::fp16, -1.5), 0x1p-10);
  EXPECT_EQ(ulp(formats::fp16, 65504.0), 32.0);
  EXPECT_EQ(ulp(formats::fp16, kInf), 32.0);
  EXPECT_EQ(ulp(formats::fp16, 1e9), 32.0);  // beyond the range: the top binade's
  EXPECT_EQ(ulp(formats::fp16, 0.0), 0x1p-24);
  EXPECT_EQ(ulp(formats::fp16, 0x1p-20), 0x1p-24);
  EXPECT_EQ(ulp(formats::fp16, 0x1p-14), 0x1p-24);
  EXPECT_EQ(ulp(formats::bf16, 1.0), 0x1p-7);
  EXPECT_EQ(ulp(formats::e4m3, 448.0), 32.0);
  EXPECT_EQ(ulp(formats::e4m3, 1.0), 0.125);
  EXPECT_EQ(ulp(formats::e5m2, 57344.0), 8192.0);
  EXPECT_EQ(ulp(formats::fp64, 1.0), 0x1p-52);
  EXPECT_EQ(ulp(formats::fp64, 0.0), 0x1p-1074);
  EXPECT_EQ(ulp(variant(formats::fp16, false, Overflow::infinity), 0x1p-20), 0x1p-14);
  EXPECT_EQ(ulp(variant(formats::fp16, false, Overflow::infinity), 0.0), 0x1p-14);
}

}  // namespace
}  // namespace ampbench::numeric::test
