// The per-tile scales and the per-element rounding of the FP8 and microscaling quantizers in the
// arithmetic a GPU kernel uses (binary32 operations, each rounded once; the MX product exact in
// binary64), for host and device code alike: kernels/quant_kernels.cu runs these functions, and
// harness/quant/test/scaling_fast_test.cpp runs them on the host against the reference quantizers
// of harness/quant/scaling.hpp, which compute the same scales another way (binary64 with explicit
// roundings to binary32). The sources of each rule, and why the two agree, are there and in
// docs/scaling.md.
#pragma once

#include <cstdint>

#include "harness/numeric/format.hpp"
#include "harness/numeric/host_device.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric::scale_math {

// How a tile's scale is chosen (quant::ScaleRule and the options of its quantizers).
enum class TileRule : std::uint8_t {
  fp32_given,      // one fp32 scale for the tensor, given (delayed scaling)
  fp32_amax,       // fl32(fmt_max / amax) (current scaling, blockwise)
  fp32_amax_pow2,  // the same, rounded down to a power of two
  mx_ocp,          // OCP MX v1.0: 2^(floor(log2 amax) - emax_elem) in E8M0
  mx_round_up,     // Transformer Engine's MXFP8: the E8M0 value at or above amax / max_elem
  nvfp4,           // NVFP4: an E4M3 block scale under the fp32 tensor scale
};

AMPBENCH_HD constexpr bool is_mx(TileRule r) {
  return r == TileRule::mx_ocp || r == TileRule::mx_round_up;
}

inline constexpr float kFloatMax = 3.40282346638528859812e+38f;

AMPBENCH_HD inline std::uint32_t bits_of(float x) {
  return detail::bit_copy<std::uint32_t>(x);
}

AMPBENCH_HD inline float float_of(std::uint32_t u) {
  return detail::bit_copy<float>(u);
}

// fmaxf(m, |x|): the running amax, NaN ignored, an infinity kept.
AMPBENCH_HD inline float amax_step(float m, float x) {
  const float a = float_of(bits_of(x) & 0x7FFFFFFFu);
  if (a != a) return m;
  return a > m ? a : m;
}

// Transformer Engine's compute_scale_from_amax (recipe_common.cuh): fmt_max / amax in binary32
// for a finite positive amax, fp32's largest value where that overflows, 1 for a zero, infinite or
// NaN amax; with pow2 the fraction bits cleared.
AMPBENCH_HD inline float current_scale(float amax, float fmt_max, bool pow2) {
  if (!(amax > 0) || amax > kFloatMax) return 1.0f;
  float s = fmt_max / amax;
  if (s > kFloatMax) s = kFloatMax;
  if (pow2) s = float_of(bits_of(s) & 0xFF800000u);
  return s;
}

// floor(log2 |v|) of a nonzero finite binary64 (binary32 subnormals are normal binary64 values).
AMPBENCH_HD inline int floor_log2(double v) {
  return static_cast<int>((detail::bits_of(v) >> 52) & 0x7FF) - 1023;
}

// The E8M0 exponent of an MX block of amax `amax` (finite, no NaN in the block): OCP's
// floor(log2 amax) - emax_elem, or TE's smallest power of two at or above
// fl32(amax * fl32(1 / max_elem)) (ptx.cuh float_to_e8m0: cvt.rp.satfinite.ue8m0x2.f32); -127
// for an all-zero block; clamped to [-127, 127].
AMPBENCH_HD inline int mx_shared_exponent(float amax, const Format& element, bool round_up) {
  int shared = -127;
  if (!round_up && amax != 0) {
    shared = floor_log2(amax) - element.emax;
  } else if (round_up) {
    const auto reciprocal =
        static_cast<float>(1.0 / decode(element, detail::max_finite_bits(element)));
    const float v = amax * reciprocal;
    if (v > 0) {
      const double d = v;
      const bool power_of_two = (detail::bits_of(d) & detail::kF64FractionMask) == 0;
      shared = floor_log2(d) + (power_of_two ? 0 : 1);
    }
  }
  return shared < -127 ? -127 : (shared > 127 ? 127 : shared);
}

// NVFP4's tensor scales (TE core_nvfp4.cuh, compute_global_encode_scaling_factor_FP4):
// S_enc = 448 * 6 / amax (fp32's largest where that overflows; 1 for a zero amax or a zero
// quotient), S_dec = 1 / S_enc, and S_enc * (1/6), which every block scale multiplies.
struct Nvfp4Tensor {
  float s_enc = 1, s_dec = 1, s_enc_sixth = 1.0f / 6.0f;
};
AMPBENCH_HD inline Nvfp4Tensor nvfp4_tensor(float tensor_amax) {
  Nvfp4Tensor t;
  const float quotient = 2688.0f / tensor_amax;
  t.s_enc = quotient < kFloatMax ? quotient : kFloatMax;
  if (tensor_amax == 0 || t.s_enc == 0) t.s_enc = 1;
  t.s_dec = 1.0f / t.s_enc;
  t.s_enc_sixth = t.s_enc * (1.0f / 6.0f);
  return t;
}

// A tile's scale: what its inputs are multiplied by, and the stored pattern (the fp32 scale's
// bits, the E8M0 pattern, the UE4M3 pattern); a NaN MX block (a NaN or an infinity in it) has the
// pattern 0xFF and rounds every element as the default quiet NaN.
struct TileScale {
  float encode = 1;
  std::uint32_t bits = 0;
  bool nan = false;
};

// The scale of a tile with amax `amax` (and `has_nan`: a NaN among its inputs) under rule r;
// `given` is the delayed-scaling scale, `nvfp4` the tensor's scales.
AMPBENCH_HD inline TileScale tile_scale(TileRule r, const Format& element, float amax, bool has_nan,
                                        float given, const Nvfp4Tensor& nvfp4) {
  TileScale s;
  switch (r) {
    case TileRule::fp32_given: s.encode = given; break;
    case TileRule::fp32_amax:
    case TileRule::fp32_amax_pow2:
      s.encode =
          current_scale(amax, static_cast<float>(decode(element, detail::max_finite_bits(element))),
                        r == TileRule::fp32_amax_pow2);
      break;
    case TileRule::mx_ocp:
    case TileRule::mx_round_up: {
      if (has_nan || amax > kFloatMax) {
        s.nan = true;
        s.bits = 0xFF;
        return s;
      }
      const int shared = mx_shared_exponent(amax, element, r == TileRule::mx_round_up);
      s.bits = static_cast<std::uint32_t>(shared + 127);
      s.encode = static_cast<float>(detail::compose(false, 1, -shared));  // 2^-shared, exact
      return s;
    }
    case TileRule::nvfp4: {
      // compute_decoding_scaling_factor: e4m3_satfinite(block_amax * (S_enc / 6)); the encode
      // scale fminf(1 / (s_b * S_dec), fp32 max).
      const float wanted = amax * nvfp4.s_enc_sixth;
      const Rounded sb = round_to(formats::ocp_e4m3(Overflow::saturate), Rounding::nearest_even,
                                  wanted != wanted ? 0.0 : static_cast<double>(wanted));
      const float product = static_cast<float>(sb.value) * nvfp4.s_dec;
      const float inverse = 1.0f / product;
      s.bits = static_cast<std::uint32_t>(sb.bits);
      s.encode = product == 0 ? kFloatMax : (inverse < kFloatMax ? inverse : kFloatMax);
      return s;
    }
  }
  s.bits = bits_of(s.encode);
  return s;
}

// One element's code: x times the tile's encode scale (rounded to binary32, as TE's cast kernels
// multiply, except under MX, whose power-of-two product is exact in binary64), rounded to the
// saturating element format in `mode` with the stochastic draw `random`. A NaN input keeps its
// sign and payload, as the host's product does (a GPU's multiplication would give its canonical
// NaN); an MX block holding a NaN or an infinity rounds the default quiet NaN.
AMPBENCH_HD inline std::uint64_t element_code(TileRule r, const Format& saturating, Rounding mode,
                                              float x, const TileScale& s, std::uint32_t random) {
  double scaled;
  if (s.nan) {
    scaled = detail::double_of(detail::kF64Infinity | detail::kF64QuietBit);
  } else if (x != x) {
    scaled = detail::widen(x);  // x86's product: the NaN operand, its sign and payload kept
  } else if (is_mx(r)) {
    scaled = static_cast<double>(x) * static_cast<double>(s.encode);
  } else {
    scaled = static_cast<double>(x * s.encode);
  }
  return round_to(saturating, mode, scaled, random).bits;
}

}  // namespace ampbench::numeric::scale_math
