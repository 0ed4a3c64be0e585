// One binary32 value to the encoding of a narrow format with subnormals (fp16, bf16, tf32, e5m2,
// e4m3, ...), branch-free and in 32-bit lanes: the host's vectorised array rounding
// (rounding_array.cpp) and the GPU's cast kernel (kernels/rounding_kernels.cu) share it, and both
// give round_to's bits (tests: numeric_array_test on the host,
// kernels/test/rounding_kernels_test.cpp on the device).
#pragma once

#include <cstdint>

#include "harness/numeric/format.hpp"
#include "harness/numeric/host_device.hpp"
#include "harness/numeric/rounding.hpp"

#if defined(__CUDACC__)
#define AMPBENCH_ENCODE_INLINE __host__ __device__ __forceinline__
#else
#define AMPBENCH_ENCODE_INLINE [[gnu::always_inline]] inline
#endif

namespace ampbench::numeric::detail {

// One binary32 value (as bits) to the encoding of F, branch-free and in 32-bit lanes only, so that
// loops vectorise. The same arithmetic as round_to, specialised: F has subnormals, 1 <= fraction
// bits <= 22, emin >= -126, and its overflow pattern follows its largest finite one.
//
// The magnitude is rounded as an integer v shifted right by s bits. Where the result is normal in
// F, v is the binary32 encoding with its exponent field rebiased to F's, and s drops the extra
// fraction bits: a carry out of the fraction then moves up a binade, and past the largest finite
// value it reaches the overflow pattern. Below F's normal range, v is the significand with its
// implicit bit and s grows by one per binade, which yields F's subnormal fraction (and a carry
// yields F's smallest normal).
template <const Format& F, bool Stochastic, bool Saturate>
AMPBENCH_ENCODE_INLINE std::uint32_t encode_one(std::uint32_t u, std::uint32_t random) {
  constexpr int kT = F.fraction_bits();
  constexpr int kDrop = 23 - kT;  // bits dropped in F's normal range
  constexpr auto kMaxMagnitude = static_cast<std::uint32_t>(detail::max_finite_bits(F));
  constexpr auto kOverflowMagnitude = static_cast<std::uint32_t>(
      F.has_infinity() ? detail::infinity_bits(F) : detail::nan_bits(F, 0));
  constexpr auto kSpecialField = static_cast<std::uint32_t>(F.special_field()) << kT;
  // The binary32 encodings of F's smallest normal number and F's exponent bias difference.
  constexpr auto kMinNormal = static_cast<std::uint32_t>(F.emin + 127) << 23;
  constexpr auto kRebias = static_cast<std::uint32_t>(F.emin + 126) << 23;
  static_assert(kT >= 1 && kT <= 22 && F.emin >= -126 && F.emax <= 127 && F.subnormals);
  static_assert(kOverflowMagnitude == kMaxMagnitude + 1);
  // A binary32 subnormal is read with an implicit bit, as 2^-127 * 1.f: either way it lies more
  // than 2^32 below F's quantum there, and rounds (or draws) as zero. Only with F.emin > -126.
  static_assert(F.emin == -126 || 23 - kT + F.emin + 127 >= 24 + 32);

  if constexpr (!Stochastic && !Saturate && F.emin == -126 && F.emax == 127) {
    // bf16, tf32: F's exponent field is binary32's, so the binary32 encoding rounded in place,
    // sign and all, is F's: a carry moves up a binade, or from the largest finite value to
    // infinity. Only NaNs need their own pattern: the kept bits with the quiet bit set.
    const std::uint32_t kept = u >> kDrop;
    const std::uint32_t rounded = (u + ((1u << (kDrop - 1)) - 1u) + (kept & 1u)) >> kDrop;
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? kept | (1u << (kT - 1)) : rounded;
  }

  const std::uint32_t sign = (u >> 31) << (F.total_bits() - 1);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  std::uint32_t v = a - kRebias;
  int s = kDrop;
  if constexpr (F.emin > -126) {
    const bool normal = a >= kMinNormal;
    v = normal ? v : (a & 0x7FFFFFu) | 0x800000u;
    s = normal ? kDrop : kDrop + F.emin + 127 - static_cast<int>(a >> 23);
  }
  // s > 24 leaves nothing of v above the last half quantum: the result is 0 for s up to 31, and
  // v < 2^24 keeps v + half - 1 below 2^31 there.
  const int sc = s < 31 ? s : 31;

  std::uint32_t magnitude;
  if constexpr (!Stochastic) {
    const std::uint32_t half_minus_one = (1u << (sc - 1)) - 1u;
    magnitude = (v + half_minus_one + ((v >> sc) & 1u)) >> sc;
    // Past the largest finite value: the overflow pattern (infinity, or e4m3's NaN), or the
    // largest finite with saturation; infinite inputs land here as well.
    constexpr std::uint32_t kCeiling = Saturate ? kMaxMagnitude : kOverflowMagnitude;
    magnitude = magnitude < kCeiling ? magnitude : kCeiling;
  } else {
    // floor(2^32 * discarded part / quantum): the discarded bits moved to the top of the word;
    // beyond 32 bits everything is discarded (v < 2^24) and shifted down instead.
    const int sd = s - 32 < 31 ? s - 32 : 31;
    const std::uint32_t threshold = s < 32 ? v << (32 - sc) : v >> sd;
    const bool away = random < threshold;
    magnitude = (v >> sc) + (away ? 1u : 0u);
    if (magnitude > kMaxMagnitude) {
      magnitude = Saturate || !away ? kMaxMagnitude : kOverflowMagnitude;
    }
    if (a == 0x7F800000u) magnitude = Saturate ? kMaxMagnitude : kOverflowMagnitude;
  }
  if (a > 0x7F800000u) {
    magnitude = F.has_infinity() ? kSpecialField | (1u << (kT - 1)) | ((a & 0x7FFFFFu) >> kDrop)
                                 : static_cast<std::uint32_t>(detail::nan_bits(F, 0));
  }
  return sign | magnitude;
}

}  // namespace ampbench::numeric::detail

#undef AMPBENCH_ENCODE_INLINE
