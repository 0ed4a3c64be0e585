// Rounding of one binary64 value to any Format, in every rounding mode, with the bit pattern of
// the result and the class of the rounding event; and decoding of bit patterns.
//
// This is the reference software path: integer arithmetic on the binary64 encoding, no floating
// point operation that could itself round, so the result does not depend on the FPU's mode. The
// fast array paths (rounding_array.hpp) and the CUDA kernels must agree with it bit for bit; it is
// itself checked against MPFR (harness/numeric/test/).
#pragma once

#include <cstdint>
#include <cstring>

#include "harness/numeric/format.hpp"
#include "harness/numeric/host_device.hpp"

namespace ampbench::numeric {

enum class Rounding : std::uint8_t {
  nearest_even,             // IEEE roundTiesToEven
  nearest_away,             // IEEE roundTiesToAway
  toward_zero,              // truncation
  upward,                   // toward +inf
  downward,                 // toward -inf
  to_odd,                   // truncate, then set the last bit if anything was lost (von Neumann)
  stochastic_proportional,  // up with probability (x - lo) / (hi - lo), resolution 2^-32
  stochastic_equal,         // up or down with probability 1/2 when inexact
};

// What rounding did to one value. When several apply, the first in this list is reported.
enum class RoundingEvent : std::uint8_t {
  exact,          // the result equals the input (infinities and zeros included)
  inexact,        // rounded within the normal range
  underflow,      // inexact, |x| < 2^emin (tiny before rounding), nonzero result
  flush_to_zero,  // a nonzero input gave a zero result
  overflow,       // beyond the range: the result is +-inf (or NaN in a format with no infinity)
  saturation,     // beyond the range, clamped to +-max finite (saturate policy, or a mode
                  // that rounds toward zero at the top of the range)
  nan,            // the result is NaN because the input was NaN, or an infinity the format
                  // cannot hold
};
inline constexpr int kRoundingEventCount = 7;

struct Rounded {
  std::uint64_t bits;  // the result's encoding in the format, in the low total_bits() bits
  double value;        // the same result as a binary64 (exact: every format is a subset)
  RoundingEvent event;
};

namespace detail {

// The object representation of `from` as a To of the same size (std::bit_cast, which device code
// cannot call).
template <class To, class From>
AMPBENCH_HD inline To bit_copy(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

AMPBENCH_HD inline std::uint64_t bits_of(double x) {
  return bit_copy<std::uint64_t>(x);
}

AMPBENCH_HD inline double double_of(std::uint64_t u) {
  return bit_copy<double>(u);
}

// binary32 -> binary64 by bits, as x86's cvtss2sd does it: exact for numbers; a NaN keeps its sign
// and payload and becomes quiet (so does x86's arithmetic on one NaN operand). A GPU's conversion
// and arithmetic need not keep NaN signs and payloads, and round_to's NaN result carries them.
AMPBENCH_HD inline double widen(float x) {
  const auto u = bit_copy<std::uint32_t>(x);
  if ((u & 0x7FFFFFFFu) <= 0x7F800000u) return static_cast<double>(x);
  const std::uint64_t sign = static_cast<std::uint64_t>(u >> 31) << 63;
  const std::uint64_t payload = static_cast<std::uint64_t>(u & 0x003FFFFFu) << 29;
  return double_of(sign | 0x7FF8000000000000ull | payload);
}

AMPBENCH_HD inline int bit_width(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return 64 - __clzll(static_cast<long long>(v));
#else
  return v == 0 ? 0 : 64 - __builtin_clzll(v);
#endif
}

inline constexpr std::uint64_t kF64FractionMask = (std::uint64_t{1} << 52) - 1;
inline constexpr std::uint64_t kF64Infinity = 0x7FF0000000000000;
inline constexpr std::uint64_t kF64QuietBit = std::uint64_t{1} << 51;

// The binary64 value n * 2^q, exact: n < 2^54 and n * 2^q lies in binary64's range, which every
// valid Format guarantees.
AMPBENCH_HD inline double compose(bool negative, std::uint64_t n, int q) {
  const std::uint64_t sign = negative ? std::uint64_t{1} << 63 : 0;
  if (n == 0) return double_of(sign);
  const int width = bit_width(n);
  const int e = q + width - 1;
  if (e >= -1022) {
    const std::uint64_t significand = width <= 53 ? n << (53 - width) : n >> (width - 53);
    return double_of(sign | (static_cast<std::uint64_t>(e + 1023) << 52) |
                     (significand & kF64FractionMask));
  }
  return double_of(sign | (n << (q + 1074)));
}

AMPBENCH_HD constexpr std::uint64_t fraction_mask(const Format& f) {
  return (std::uint64_t{1} << f.fraction_bits()) - 1;
}

AMPBENCH_HD constexpr std::uint64_t max_finite_bits(const Format& f) {
  const int t = f.fraction_bits();
  switch (f.specials) {
    case SpecialEncoding::ieee:
      return (static_cast<std::uint64_t>(f.special_field() - 1) << t) | fraction_mask(f);
    case SpecialEncoding::single_nan:
      return (static_cast<std::uint64_t>(f.special_field()) << t) | (fraction_mask(f) - 1);
    case SpecialEncoding::none: break;
  }
  return (static_cast<std::uint64_t>(f.special_field()) << t) | fraction_mask(f);
}

AMPBENCH_HD constexpr std::uint64_t infinity_bits(const Format& f) {
  return static_cast<std::uint64_t>(f.special_field()) << f.fraction_bits();
}

// A quiet NaN keeping the top fraction bits of a binary64 NaN's payload (as IEEE 754 recommends
// and x86 F16C does); the single NaN pattern where the format has only one; +max finite where it
// has none (NVIDIA's cvt .satfinite to e2m1, e2m3 and e3m2; the caller must not add a sign).
AMPBENCH_HD constexpr std::uint64_t nan_bits(const Format& f, std::uint64_t f64_fraction) {
  const int t = f.fraction_bits();
  const std::uint64_t field = static_cast<std::uint64_t>(f.special_field()) << t;
  if (f.specials == SpecialEncoding::none) return max_finite_bits(f);
  if (f.specials == SpecialEncoding::single_nan) return field | fraction_mask(f);
  return field | (std::uint64_t{1} << (t - 1)) | (f64_fraction >> (52 - t));
}

}  // namespace detail

// The value of a bit pattern of format f (bits above total_bits() are ignored). NaN patterns give
// a quiet binary64 NaN with the same sign and payload. A subnormal pattern decodes to its value
// even when f.subnormals is off (rounding never produces one then).
AMPBENCH_HD inline double decode(const Format& f, std::uint64_t bits) {
  const int t = f.fraction_bits();
  const int w = f.exponent_bits();
  const bool negative = (bits >> (t + w)) & 1;
  const int field = static_cast<int>((bits >> t) & ((std::uint64_t{1} << w) - 1));
  const std::uint64_t fraction = bits & detail::fraction_mask(f);
  const std::uint64_t sign = negative ? std::uint64_t{1} << 63 : 0;
  const bool is_nan =
      f.specials == SpecialEncoding::ieee
          ? field > f.special_field() || (field == f.special_field() && fraction != 0)
          : f.specials == SpecialEncoding::single_nan && field == f.special_field() &&
                fraction == detail::fraction_mask(f);
  if (is_nan) {
    return detail::double_of(sign | detail::kF64Infinity | detail::kF64QuietBit |
                             (fraction << (52 - t)));
  }
  if (f.specials == SpecialEncoding::ieee && field == f.special_field()) {
    return detail::double_of(sign | detail::kF64Infinity);
  }
  if (field == 0) return detail::compose(negative, fraction, f.emin - t);
  return detail::compose(negative, (std::uint64_t{1} << t) | fraction, field - f.bias() - t);
}

namespace detail {

// A finite nonzero magnitude cut at the quantum 2^qt of its rounded result: `kept` whole quanta,
// and what lies below them summarised for every rounding mode.
struct Cut {
  std::uint64_t kept;
  int qt;
  bool tiny;                   // below 2^emin before rounding
  bool inexact;                // something lies below the cut
  int versus_half;             // the part below compared with half a quantum: -1, 0 or 1
  std::uint64_t sr_threshold;  // floor(2^32 * part below / quantum)
};

// The quantum of the result for a magnitude in [2^ex, 2^(ex+1)). Below 2^emin it is fixed by the
// subnormals; without them the only neighbours there are 0 and 2^emin.
AMPBENCH_HD inline int result_quantum(const Format& f, int ex) {
  if (ex >= f.emin) return ex - f.fraction_bits();
  return f.subnormals ? f.emin - f.fraction_bits() : f.emin;
}

// The rounded result of a cut magnitude: direction by mode, then overflow, then the encoding.
AMPBENCH_HD inline Rounded finish(const Format& f, Rounding mode, bool negative, const Cut& c,
                                  std::uint32_t random) {
  const std::uint64_t sign = negative ? f.sign_mask() : 0;
  const int t = f.fraction_bits();
  const auto result = [&](std::uint64_t bits, RoundingEvent event) {
    return Rounded{bits, decode(f, bits), event};
  };

  bool away = false;  // add one quantum to the magnitude
  if (c.inexact) {
    switch (mode) {
      case Rounding::nearest_even:
        away = c.versus_half > 0 || (c.versus_half == 0 && (c.kept & 1));
        break;
      case Rounding::nearest_away: away = c.versus_half >= 0; break;
      case Rounding::toward_zero: away = false; break;
      case Rounding::upward: away = !negative; break;
      case Rounding::downward: away = negative; break;
      case Rounding::to_odd: away = (c.kept & 1) == 0; break;
      case Rounding::stochastic_proportional: away = random < c.sr_threshold; break;
      case Rounding::stochastic_equal: away = (random >> 31) != 0; break;
    }
  }
  const std::uint64_t n = c.kept + (away ? 1 : 0);

  // IEEE overflow: the result rounded with an unbounded exponent range exceeds the largest finite
  // value. Round-to-nearest and rounding away from zero then give infinity; rounding toward zero
  // gives the largest finite value. Stochastic rounding picks one of those two directions.
  // A tiny value cannot overflow: it rounds to at most 2^emin (and without subnormals qt is emin,
  // which may exceed emax - t in a narrow format, so the test below would misfire).
  if (!c.tiny && (c.qt > f.emax - t || (c.qt == f.emax - t && n > f.max_significand()))) {
    const bool to_infinity =
        mode == Rounding::nearest_even || mode == Rounding::nearest_away ||
        (mode == Rounding::upward && !negative) || (mode == Rounding::downward && negative) ||
        ((mode == Rounding::stochastic_proportional || mode == Rounding::stochastic_equal) && away);
    if (!to_infinity || f.overflow == Overflow::saturate || !f.has_nan()) {
      return result(sign | max_finite_bits(f), RoundingEvent::saturation);
    }
    return result(sign | (f.has_infinity() ? infinity_bits(f) : nan_bits(f, 0)),
                  RoundingEvent::overflow);
  }

  if (n == 0) return result(sign, RoundingEvent::flush_to_zero);
  const int width = bit_width(n);
  const int e = c.qt + width - 1;  // exponent of the result
  std::uint64_t bits;
  if (e < f.emin) {
    bits = n;  // subnormal: qt == emin - t, so n is the fraction field
  } else {
    const std::uint64_t normalized = width - 1 <= t ? n << (t - (width - 1)) : n >> 1;
    bits = (static_cast<std::uint64_t>(e + f.bias()) << t) | (normalized & fraction_mask(f));
  }
  const RoundingEvent event = !c.inexact
                                  ? RoundingEvent::exact
                                  : (c.tiny ? RoundingEvent::underflow : RoundingEvent::inexact);
  return result(sign | bits, event);
}

}  // namespace detail

// Rounds x to format f. `random` is used by the stochastic modes only: one uniform 32-bit draw per
// value (see stochastic_draw); the result rounds away from zero when random < floor(2^32 * frac),
// frac being x's position between its two neighbours, or (equal mode) when its top bit is set.
AMPBENCH_HD inline Rounded round_to(const Format& f, Rounding mode, double x,
                                    std::uint32_t random = 0) {
  const std::uint64_t xb = detail::bits_of(x);
  const bool negative = xb >> 63;
  const std::uint64_t magnitude = xb & ~(std::uint64_t{1} << 63);
  const std::uint64_t sign = negative ? f.sign_mask() : 0;
  const auto result = [&](std::uint64_t bits, RoundingEvent event) {
    return Rounded{bits, decode(f, bits), event};
  };

  if (magnitude > detail::kF64Infinity) {
    const std::uint64_t nan = detail::nan_bits(f, magnitude & detail::kF64FractionMask);
    return result(f.has_nan() ? sign | nan : nan, RoundingEvent::nan);
  }
  if (magnitude == detail::kF64Infinity) {
    if (f.overflow == Overflow::saturate || !f.has_nan()) {
      return result(sign | detail::max_finite_bits(f), RoundingEvent::saturation);
    }
    if (f.has_infinity()) return result(sign | detail::infinity_bits(f), RoundingEvent::exact);
    return result(sign | detail::nan_bits(f, 0), RoundingEvent::nan);
  }
  if (magnitude == 0) return result(sign, RoundingEvent::exact);

  // x = m * 2^q with m < 2^53, and 2^ex <= |x| < 2^(ex+1).
  const int biased = static_cast<int>(magnitude >> 52);
  const std::uint64_t m =
      biased == 0 ? magnitude : (magnitude & detail::kF64FractionMask) | (std::uint64_t{1} << 52);
  const int q = biased == 0 ? -1074 : biased - 1075;
  const int ex = q + detail::bit_width(m) - 1;

  detail::Cut c{};
  c.tiny = ex < f.emin;
  c.qt = detail::result_quantum(f, ex);
  c.versus_half = -1;
  const int shift = c.qt - q;
  if (shift <= 0) {
    c.kept = m << -shift;
  } else if (shift < 64) {
    c.kept = m >> shift;
    const std::uint64_t rest = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    c.inexact = rest != 0;
    c.versus_half = rest < half ? -1 : (rest == half ? 0 : 1);
    c.sr_threshold = shift <= 32 ? rest << (32 - shift) : rest >> (shift - 32);
  } else {  // m < 2^53 <= half a quantum
    c.inexact = true;
    c.sr_threshold = shift - 32 < 64 ? m >> (shift - 32) : 0;
  }
  return detail::finish(f, mode, negative, c, random);
}

// A finite magnitude held to more bits than a binary64 has, as an exact accumulator or an
// arbitrary-precision number gives it: (high + low * 2^-64 + tail) * 2^exponent, where high has
// its top bit set (or high, low and sticky are all zero for a zero), and the tail, 0 <= tail <
// 2^-64, is known only as zero or not (sticky). 128 bits and a sticky bit decide every mode: the
// result keeps at most 53 of them, and stochastic rounding reads 32 more.
struct Window {
  bool negative;
  std::uint64_t high;
  std::uint64_t low;
  bool sticky;
  int exponent;
};

// Rounds the value of a window to format f, as round_to does a binary64.
AMPBENCH_HD inline Rounded round_window(const Format& f, Rounding mode, const Window& w,
                                        std::uint32_t random = 0) {
  if (w.high == 0) {
    const std::uint64_t bits = w.negative ? f.sign_mask() : 0;
    return Rounded{bits, decode(f, bits), RoundingEvent::exact};
  }
  const int ex = w.exponent + 63;
  detail::Cut c{};
  c.tiny = ex < f.emin;
  c.qt = detail::result_quantum(f, ex);
  // The result keeps at most 53 bits, so at least the low 11 bits of high are cut off.
  const int shift = c.qt - w.exponent;
  const bool below_high = w.low != 0 || w.sticky;  // anything beneath the high word
  if (shift < 64) {
    c.kept = w.high >> shift;
    const std::uint64_t rest = w.high & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    c.inexact = rest != 0 || below_high;
    c.versus_half = rest < half ? -1 : (rest > half || below_high ? 1 : 0);
    c.sr_threshold = shift < 32    ? (rest << (32 - shift)) | (w.low >> (32 + shift))
                     : shift == 32 ? rest
                                   : rest >> (shift - 32);
  } else {
    c.kept = 0;
    c.inexact = true;
    // The whole window is below the cut: exactly half a quantum only if it is 2^63 * 2^exponent
    // with nothing beneath, and shift == 64.
    c.versus_half = shift > 64 ? -1 : (w.high > (std::uint64_t{1} << 63) || below_high ? 1 : 0);
    c.sr_threshold = shift == 64 ? w.high >> 32 : (shift < 96 ? w.high >> (shift - 32) : 0);
  }
  return detail::finish(f, mode, w.negative, c, random);
}

// Number `index` of the splitmix64 stream `seed` (Steele, Lea and Flood, OOPSLA 2014), evaluated
// at a position: element i of an array gets the same draw whatever the chunking, thread count or
// device.
AMPBENCH_HD constexpr std::uint64_t splitmix64(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Draw number `index` of the stream `seed` for stochastic rounding: the top half of splitmix64.
AMPBENCH_HD constexpr std::uint32_t stochastic_draw(std::uint64_t seed, std::uint64_t index) {
  return static_cast<std::uint32_t>(splitmix64(seed, index) >> 32);
}

// The same draw from splitmix64's first step, the state z = seed + (index + 1) * kSplitmixGamma:
// loops over consecutive indices advance z by one addition per element instead of a 64-bit
// multiplication.
inline constexpr std::uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;
AMPBENCH_HD constexpr std::uint32_t stochastic_draw_from_state(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z >> 32);
}

AMPBENCH_HD constexpr bool is_stochastic(Rounding mode) {
  return mode == Rounding::stochastic_proportional || mode == Rounding::stochastic_equal;
}

// ---- scale formats ------------------------------------------------------------------------------

// The value of a scale pattern (bits above the format's 8 are ignored): e8m0 0xFF and ue4m3 0x7F
// are NaN; a ue4m3 pattern with its top bit set is no ue4m3 value and decodes as NaN.
AMPBENCH_HD inline double decode_scale(const ScaleFormat& s, std::uint64_t bits) {
  bits &= 0xFF;
  if (s.kind == ScaleKind::e8m0) {
    if (bits == 0xFF) return detail::double_of(detail::kF64Infinity | detail::kF64QuietBit);
    return detail::compose(false, 1, static_cast<int>(bits) - 127);
  }
  if (bits > 0x7F) return detail::double_of(detail::kF64Infinity | detail::kF64QuietBit);
  return decode(formats::ocp_e4m3(Overflow::infinity), bits);
}

// Rounds x to a scale format. Scales are positive: a negative x (or -inf) gives NaN with event
// nan, as does NaN; +inf and values beyond the largest saturate (2^127, 448), as NVIDIA's
// cvt .satfinite does. ue4m3 rounds as e4m3 (with zero and subnormals). e8m0 has no zero: every
// value below 2^-127, zero included, gives 2^-127 (event underflow); above it x lies between two
// powers of two 2^e < x < 2^(e+1) and the modes choose as for any format of precision 1, ties
// (x = 1.5 * 2^e) to the even exponent field under rne, to odd means the odd exponent field, and
// the stochastic draw reads x's position between the two.
AMPBENCH_HD inline Rounded round_scale(const ScaleFormat& s, Rounding mode, double x,
                                       std::uint32_t random = 0) {
  const std::uint64_t xb = detail::bits_of(x);
  const std::uint64_t nan_pattern = s.kind == ScaleKind::e8m0 ? 0xFF : 0x7F;
  const auto result = [&](std::uint64_t bits, RoundingEvent event) {
    return Rounded{bits, decode_scale(s, bits), event};
  };
  const bool negative = (xb >> 63) != 0 && (xb << 1) != 0;  // -0 is zero, not negative
  if ((xb & ~(std::uint64_t{1} << 63)) > detail::kF64Infinity || negative) {
    return result(nan_pattern, RoundingEvent::nan);
  }
  if (s.kind == ScaleKind::e4m3_unsigned) {
    return round_to(formats::ocp_e4m3(Overflow::saturate), mode, x == 0 ? 0.0 : x,
                    random);  // +0 for -0: the scale has no sign
  }
  if (xb == detail::kF64Infinity) return result(0xFE, RoundingEvent::saturation);
  constexpr int kMin = -127;
  constexpr int kMax = 127;
  const std::uint64_t magnitude = xb << 1 >> 1;
  if (magnitude < (static_cast<std::uint64_t>(kMin + 1023) << 52)) {
    return result(0, RoundingEvent::underflow);
  }
  // 2^e <= x < 2^(e+1), x = 2^e * (1 + fraction / 2^52): x is a normal binary64 here.
  const int e = static_cast<int>(magnitude >> 52) - 1023;
  const std::uint64_t fraction = magnitude & detail::kF64FractionMask;
  bool up = false;
  if (fraction != 0) {
    const std::uint64_t half = std::uint64_t{1} << 51;
    const bool lo_field_odd = ((e + 127) & 1) != 0;
    switch (mode) {
      case Rounding::nearest_even:
        up = fraction > half || (fraction == half && lo_field_odd);
        break;
      case Rounding::nearest_away: up = fraction >= half; break;
      case Rounding::toward_zero:
      case Rounding::downward: up = false; break;
      case Rounding::upward: up = true; break;
      case Rounding::to_odd: up = !lo_field_odd; break;
      case Rounding::stochastic_proportional: up = random < (fraction >> 20); break;
      case Rounding::stochastic_equal: up = (random >> 31) != 0; break;
    }
  }
  const int r = e + (up ? 1 : 0);
  if (r > kMax) return result(0xFE, RoundingEvent::saturation);
  return result(static_cast<std::uint64_t>(r + 127),
                fraction == 0 ? RoundingEvent::exact : RoundingEvent::inexact);
}

}  // namespace ampbench::numeric
