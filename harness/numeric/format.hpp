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
             // without infinities (fp8 e4m3) gives NaN instead
  saturate,  // clamp to +-max finite; infinite inputs also become +-max (as NVIDIA's satfinite)
};

// How the top exponent field is used.
enum class SpecialEncoding : std::uint8_t {
  ieee,        // top exponent field: fraction 0 is infinity, anything else NaN
  single_nan,  // OCP fp8 e4m3: no infinity; top field holds normal numbers, S.1111.111 is NaN
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
  // The exponent field that holds infinity and NaN (ieee), or NaN among normals (single_nan).
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
  // Largest finite significand as an integer: the largest finite value is this times
  // 2^(emax - fraction_bits).
  AMPBENCH_HD constexpr std::uint64_t max_significand() const {
    const std::uint64_t all_ones = (std::uint64_t{1} << precision) - 1;
    return specials == SpecialEncoding::ieee ? all_ones : all_ones - 1;
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
inline constexpr Format e4m3{
    "e4m3", 4, -6, 8, true, Overflow::infinity, SpecialEncoding::single_nan};
inline constexpr Format e5m2{"e5m2", 3, -14, 15, true, Overflow::infinity, SpecialEncoding::ieee};

inline constexpr Format builtin[] = {fp64, fp32, tf32, bf16, fp16, e4m3, e5m2};
}  // namespace formats

// A format given by its parameters (IEEE-style encoding with infinities; exponent field width
// derived from the range). Check it with `validate` before use.
constexpr Format user_format(int precision, int emin, int emax, bool subnormals = true,
                             Overflow overflow = Overflow::infinity) {
  return Format{"user", precision, emin, emax, subnormals, overflow, SpecialEncoding::ieee};
}

}  // namespace ampbench::numeric
