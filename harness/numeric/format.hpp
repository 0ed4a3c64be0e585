// Binary floating-point formats: the parameters that define the set of representable values
// (precision, exponent range, subnormals, overflow behaviour) and their bit encodings.
//
// A format is a plain value. The built-in ones are constexpr; user formats are made with
// `user_format` and checked with `validate` (options.hpp). Every format here is a subset of
// binary64, so any of its values is held exactly in a double.
#pragma once

#include <cstdint>

#include "harness/numeric/host_device.hpp"

namespace ampbench::numeric {

// What happens to a value beyond the largest finite number of the format.
enum class Overflow : std::uint8_t {
  infinity,  // IEEE 754: +-inf (or +-max for the directed modes that round toward zero); a format
             // without infinities (fp8 e4m3) gives NaN instead. Not valid for a format with
             // neither (SpecialEncoding::none), which can only saturate.
  saturate,  // clamp to +-max finite; infinite inputs also become +-max (as NVIDIA's satfinite)
};

// How the top exponent field is used.
enum class SpecialEncoding : std::uint8_t {
  ieee,        // top exponent field: fraction 0 is infinity, anything else NaN
  single_nan,  // OCP fp8 e4m3: no infinity; top field holds normal numbers, S.1111.111 is NaN
  none,        // OCP MX FP6/FP4 (e3m2, e2m3, e2m1): no infinity and no NaN, every pattern is a
               // finite number. Overflow saturates; a NaN input gives +max finite (event nan), as
               // NVIDIA's cvt .satfinite does for these formats.
};

struct Format {
  const char* name;
  int precision;  // p: significand bits including the implicit leading bit
  int emin;       // exponent of the smallest normal number, 2^emin
  int emax;       // exponent of the largest binade
  bool subnormals;
  Overflow overflow;
  SpecialEncoding specials;

  AMPBENCH_HD constexpr int fraction_bits() const { return precision - 1; }
  AMPBENCH_HD constexpr int bias() const { return 1 - emin; }
  // The exponent field that holds infinity and NaN (ieee), NaN among normals (single_nan), or
  // the top binade (none, which has no special values).
  AMPBENCH_HD constexpr int special_field() const {
    return specials == SpecialEncoding::ieee ? emax + bias() + 1 : emax + bias();
  }
  AMPBENCH_HD constexpr int exponent_bits() const {
    int bits = 0;
    for (int v = special_field(); v > 0; v >>= 1) ++bits;
    return bits;
  }
  AMPBENCH_HD constexpr int total_bits() const { return 1 + exponent_bits() + fraction_bits(); }
  AMPBENCH_HD constexpr bool has_infinity() const { return specials == SpecialEncoding::ieee; }
  AMPBENCH_HD constexpr bool has_nan() const { return specials != SpecialEncoding::none; }
  // Largest finite significand as an integer: the largest finite value is this times
  // 2^(emax - fraction_bits).
  AMPBENCH_HD constexpr std::uint64_t max_significand() const {
    const std::uint64_t all_ones = (std::uint64_t{1} << precision) - 1;
    return specials == SpecialEncoding::single_nan ? all_ones - 1 : all_ones;
  }
  AMPBENCH_HD constexpr std::uint64_t sign_mask() const {
    return std::uint64_t{1} << (total_bits() - 1);
  }
};

// The same values and encodings (overflow behaviour aside).
AMPBENCH_HD constexpr bool same_values(const Format& a, const Format& b) {
  return a.precision == b.precision && a.emin == b.emin && a.emax == b.emax &&
         a.subnormals == b.subnormals && a.specials == b.specials;
}

AMPBENCH_HD constexpr bool same_format(const Format& a, const Format& b) {
  return same_values(a, b) && a.overflow == b.overflow;
}

namespace formats {
inline constexpr Format fp64{
    "fp64", 53, -1022, 1023, true, Overflow::infinity, SpecialEncoding::ieee};
inline constexpr Format fp32{
    "fp32", 24, -126, 127, true, Overflow::infinity, SpecialEncoding::ieee};
// TensorFloat-32: fp32's exponent with fp16's precision; encoded in 19 bits (1+8+10). In an fp32
// container it is the same value with the low 13 fraction bits zero.
inline constexpr Format tf32{
    "tf32", 11, -126, 127, true, Overflow::infinity, SpecialEncoding::ieee};
inline constexpr Format bf16{"bf16", 8, -126, 127, true, Overflow::infinity, SpecialEncoding::ieee};
inline constexpr Format fp16{"fp16", 11, -14, 15, true, Overflow::infinity, SpecialEncoding::ieee};
// OCP 8-bit floating point specification (OFP8) rev 1.0: E4M3 has no infinities, max 448, one NaN
// per sign; E5M2 follows IEEE 754 conventions, max 57344.
// A function too, so that host-device code (round_scale) can make it without naming a host
// variable, which device code cannot.
AMPBENCH_HD constexpr Format ocp_e4m3(Overflow overflow) {
  return Format{"e4m3", 4, -6, 8, true, overflow, SpecialEncoding::single_nan};
}
inline constexpr Format e4m3 = ocp_e4m3(Overflow::infinity);
inline constexpr Format e5m2{"e5m2", 3, -14, 15, true, Overflow::infinity, SpecialEncoding::ieee};

// OCP Microscaling Formats (MX) Specification v1.0 (September 2023), element data types FP6 and
// FP4: no infinities, no NaN, subnormals; max normal 28 (E3M2), 7.5 (E2M3) and 6 (E2M1).
// Conversions to them saturate (a value beyond the largest finite is clamped to it): they have
// nothing else to overflow to.
inline constexpr Format e3m2{"e3m2", 3, -2, 4, true, Overflow::saturate, SpecialEncoding::none};
inline constexpr Format e2m3{"e2m3", 4, 0, 2, true, Overflow::saturate, SpecialEncoding::none};
inline constexpr Format e2m1{"e2m1", 2, 0, 2, true, Overflow::saturate, SpecialEncoding::none};

inline constexpr Format builtin[] = {fp64, fp32, tf32, bf16, fp16, e4m3, e5m2, e3m2, e2m3, e2m1};
}  // namespace formats

// A format given by its parameters (IEEE-style encoding with infinities, or with specials none:
// every pattern finite; exponent field width derived from the range). Check it with `validate`
// before use.
constexpr Format user_format(int precision, int emin, int emax, bool subnormals = true,
                             Overflow overflow = Overflow::infinity,
                             SpecialEncoding specials = SpecialEncoding::ieee) {
  return Format{"user", precision, emin, emax, subnormals, overflow, specials};
}

// ---- scale formats ------------------------------------------------------------------------------
// The block and tensor scales of the microscaling recipes: unsigned, so not Formats (which have a
// sign bit and a zero). Rounding to them is round_scale (rounding.hpp).
enum class ScaleKind : std::uint8_t {
  // OCP MX v1.0, the scale data type E8M0: 8 exponent bits, bias 127, no sign, no mantissa;
  // patterns
  // 0x00..0xFE are 2^-127 .. 2^127, 0xFF is NaN; no zero, no infinity.
  e8m0,
  // The E4M3 block scale of NVFP4 (the sign bit is 0): e4m3's non-negative values, 0 .. 448,
  // subnormals from 2^-9; 0x7F is NaN.
  e4m3_unsigned,
};

struct ScaleFormat {
  const char* name;
  ScaleKind kind;
  int bits;
  int emin;  // the smallest normal value 2^emin (e8m0: the smallest value)
  int emax;  // the top binade
};

namespace formats {
inline constexpr ScaleFormat ue8m0{"ue8m0", ScaleKind::e8m0, 8, -127, 127};
inline constexpr ScaleFormat ue4m3{"ue4m3", ScaleKind::e4m3_unsigned, 8, -6, 8};
inline constexpr ScaleFormat scale_builtin[] = {ue8m0, ue4m3};
}  // namespace formats

}  // namespace ampbench::numeric
