// Blackwell's block-scaled MMAs (tcgen05.mma kind::mxf8f6f4, kind::mxf4, kind::mxf4nvf4) as
// MMA-Sim models them (github.com/microsoft/MMA-Sim at commit c785138,
// mmasim/simulator/arithmetic.py `fused_dot_add` with its scale arguments and
// `nv_fused_dot_add_with_block_scale`, mmasim/simulator/nv_ptx.py `tcgen05mma_block_scale`:
// F = 35 for K = 64, 25 for K = 32; the scale vectors of mmasim/isa/common.py). One call is one
// instruction's dot product for one output element; a GEMM chains them through c along K.
//
// kind::mxf8f6f4 (K = 32, one UE8M0 scale per row of A and column of B): the instruction's fused
// step (mma.hpp: the blackwell FP8 presets, F = 25, fp32 truncation) with every product's
// exponent raised by the two scales' exponents, before alignment, zero products included; c's is
// not.
//
// kind::mxf4 and kind::mxf4nvf4 (K = 64 e2m1 values; a scale per block of 32 (UE8M0) or 16
// (UE8M0 or UE4M3)): the products are summed exactly in groups of 16 along K whatever the block;
// group g's term has the significand G_g * s_a * s_b (the group sum times the scales'
// significands: 1 for UE8M0) and the exponent e_a + e_b (the scales' exponents alone, also when
// G_g is zero); c and the K / 16 terms form one fused sum with F = 35 (each term truncated toward
// zero to 35 fraction bits below the largest exponent, the truncated terms added exactly), and the
// sum is truncated to fp32 (subnormals kept, +-inf beyond the range, +0 for an exact zero). A NaN
// among the row's or the column's scales, or a NaN c, gives the canonical NaN (fp32 0x7FFFFFFF);
// MMA-Sim leaves an infinite c undefined here, and so does this model (such a c is a
// precondition violation). UE4M3 scales ignore their sign bit.
//
// Not modelled (MMA-Sim has no model either): FP6 (e3m2, e2m3) and FP4 elements in
// kind::mxf8f6f4. No output of these instructions has been checked against hardware here
// (docs/mma-models.md).
#pragma once

#include <cstdint>

#include "harness/numeric/format.hpp"
#include "harness/numeric/host_device.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric {

// How a block scale factor is stored.
enum class ScaleEncoding : std::uint8_t {
  ue8m0,  // 2^(bits - 127); 0xFF is NaN
  ue4m3,  // an e4m3 pattern read without its sign bit; 0x7F is NaN
};

// A scale factor as the instruction reads it: significand * 2^exponent, split as MMA-Sim splits
// it (a normal UE4M3 value in [1, 2), a subnormal one below 1 with e4m3's emin -6, zero with
// exponent -126; UE8M0: significand 1, exponent bits - 127).
struct BlockScale {
  double significand = 1;
  int exponent = 0;
  bool nan = false;
};

AMPBENCH_HD inline BlockScale decode_block_scale(ScaleEncoding encoding, std::uint8_t bits) {
  BlockScale s;
  if (encoding == ScaleEncoding::ue8m0) {
    s.nan = bits == 0xFF;
    s.exponent = static_cast<int>(bits) - 127;
    return s;
  }
  const std::uint8_t magnitude = bits & 0x7F;
  if (magnitude == 0x7F) {
    s.nan = true;
    return s;
  }
  const int field = magnitude >> 3;
  const int mantissa = magnitude & 7;
  if (field == 0) {
    s.significand = mantissa / 8.0;
    s.exponent = mantissa == 0 ? -126 : -6;
  } else {
    s.significand = 1 + mantissa / 8.0;
    s.exponent = field - 7;
  }
  return s;
}

namespace detail {
// v * 2^e for 0 <= v < 2^12 with at most 20 significant bits at or above 2^-8 and e <= 35: exact
// while the result can reach 1; below 2^-88 (e < -100) it is returned as 0, which truncation to an
// integer makes of it anyway.
AMPBENCH_HD inline double ldexp_exact(double v, int e) {
  if (e < -100) return 0.0;
  return v * double_of(static_cast<std::uint64_t>(e + 1023) << 52);
}
}  // namespace detail

// The Blackwell FP8 model's arithmetic with F = 35: the output stage of kind::mxf4*.
AMPBENCH_HD inline MmaModel mxf4_model(const MmaModel& blackwell) {
  MmaModel m = blackwell;
  m.fraction_bits = 35;
  return m;
}

// kind::mxf8f6f4: d = c + sum_{i<n} a_i b_i 2^(sa + sb) (n <= 32), a values of a_format and b of
// b_format (e4m3 or e5m2), `model` a blackwell FP8 preset (F = 25).
AMPBENCH_HD inline double mma_mxf8f6f4_step(const MmaModel& model, const Format& a_format,
                                            const Format& b_format, double c, const double* a,
                                            const double* b, int n, const BlockScale& sa,
                                            const BlockScale& sb) {
  if (sa.nan || sb.nan) return detail::mma_nan(model);
  return mma_fused_step(model, a_format, b_format, c, a, 1, b, 1, n, sa.exponent + sb.exponent);
}

inline constexpr int kMxf4Group = 16;  // the products a kind::mxf4* group sums exactly

// mma_mxf4_step (below) from the sums of its groups: group_sum[g] the exact sum of products 16 g to
// 16 g + 15 (a multiple of 1/4 below 2^10 in magnitude: exact in binary32 and binary64, in any
// order), so that a caller may form the sums of many outputs at once.
AMPBENCH_HD inline double mma_mxf4_step_of_sums(const MmaModel& model, double c,
                                                const double* group_sum, int k,
                                                const BlockScale* sa, const BlockScale* sb,
                                                int block) {
  bool nan = detail::is_nan_bits(detail::bits_of(c));
  for (int s = 0; s < k / block; ++s) nan = nan || sa[s].nan || sb[s].nan;
  const MmaModel m = mxf4_model(model);
  if (nan) return detail::mma_nan(m);
  constexpr int kGroup = kMxf4Group;
  constexpr int kMaxGroups = 4;
  // c as an fp32 term: its significand in units of 2^-23 and its exponent (a zero: -126).
  std::uint64_t c_sig = 0;
  int c_exp = 0;
  detail::mma_split(formats::fp32, c, c_sig, c_exp);
  // Each group's term: G * s_a * s_b, exact in binary64 (G is a multiple of 1/4 below 2^10 in
  // magnitude, each scale significand has at most 4 bits), with exponent e_a + e_b.
  double group_value[kMaxGroups] = {};
  int group_exp[kMaxGroups] = {};
  const int groups = k / kGroup;
  int emax = c_exp;
  for (int g = 0; g < groups; ++g) {
    const double sum = group_sum[g];
    const BlockScale& x = sa[g * kGroup / block];
    const BlockScale& y = sb[g * kGroup / block];
    group_value[g] = sum * x.significand * y.significand;
    group_exp[g] = x.exponent + y.exponent;
    if (group_exp[g] > emax) emax = group_exp[g];
  }
  // Truncated toward zero to F fraction bits below 2^emax, added exactly: |term| < 2^(F + 11).
  const int f = m.fraction_bits;
  std::int64_t total = 0;
  const auto add = [&total](bool negative, std::uint64_t t) {
    total += negative ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  };
  add(detail::bits_of(c) >> 63,
      detail::mma_align(c_sig, formats::fp32.fraction_bits(), c_exp, emax, f));
  for (int g = 0; g < groups; ++g) {
    const double v = group_value[g] < 0 ? -group_value[g] : group_value[g];
    // v * 2^(F + e - emax), truncated: v has at most 20 significant bits at or above 2^-8, and
    // the scaled value is exact unless it falls below 1, where truncation gives 0 either way.
    const double scaled = detail::ldexp_exact(v, f + group_exp[g] - emax);
    add(group_value[g] < 0, scaled < 1 ? 0 : static_cast<std::uint64_t>(scaled));
  }
  return detail::mma_output_of_sum(m, total, emax);
}

// kind::mxf4 / kind::mxf4nvf4: d = c + the instruction's k (<= 64, a multiple of 16) e2m1 products
// in groups of 16, block `block` (16 or 32) of them sharing scales sa[l / block] and sb[l / block].
// `model` is a blackwell preset (its output stage: fp32 truncation); F is 35.
AMPBENCH_HD inline double mma_mxf4_step(const MmaModel& model, double c, const double* a,
                                        const double* b, int k, const BlockScale* sa,
                                        const BlockScale* sb, int block) {
  double group_sum[4] = {};
  for (int g = 0; g < k / kMxf4Group; ++g) {
    for (int i = g * kMxf4Group; i < (g + 1) * kMxf4Group; ++i) group_sum[g] += a[i] * b[i];
  }
  return mma_mxf4_step_of_sums(model, c, group_sum, k, sa, sb, block);
}

}  // namespace ampbench::numeric
