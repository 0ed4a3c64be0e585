#include "harness/numeric/rounding_array.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "harness/numeric/encode_fast.hpp"

namespace ampbench::numeric {
namespace {

using detail::encode_one;

enum class Isa { baseline, avx2, avx512 };

// The best instruction set of this CPU, capped by AMPBENCH_ISA=baseline|avx2|avx512 so that one
// machine can run (and test) every path.
Isa cpu_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    Isa best = Isa::baseline;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      best = Isa::avx512;
    } else if (__builtin_cpu_supports("avx2")) {
      best = Isa::avx2;
    }
    if (const char* cap = std::getenv("AMPBENCH_ISA")) {
      const std::string_view name(cap);
      Isa limit = Isa::avx512;
      if (name == "baseline") {
        limit = Isa::baseline;
      } else if (name == "avx2") {
        limit = Isa::avx2;
      } else if (name != "avx512") {
        std::fprintf(stderr, "ampbench: AMPBENCH_ISA=%s ignored (baseline, avx2 or avx512)\n", cap);
      }
      best = std::min(best, limit);
    }
    return best;
  }();
  return isa;
}

// The formats with a vectorised path, and how their patterns are stored.
enum class FastFormat { none, fp16, bf16, tf32, e4m3, e5m2 };

FastFormat fast_format(const RoundingOptions& o) {
  if (o.mode != Rounding::nearest_even && o.mode != Rounding::stochastic_proportional) {
    return FastFormat::none;
  }
  if (same_values(o.format, formats::fp16)) return FastFormat::fp16;
  if (same_values(o.format, formats::bf16)) return FastFormat::bf16;
  if (same_values(o.format, formats::tf32)) return FastFormat::tf32;
  if (same_values(o.format, formats::e4m3)) return FastFormat::e4m3;
  if (same_values(o.format, formats::e5m2)) return FastFormat::e5m2;
  return FastFormat::none;
}

bool uses_f16c(const RoundingOptions& o) {
  return fast_format(o) == FastFormat::fp16 && o.mode == Rounding::nearest_even &&
         o.format.overflow == Overflow::infinity && cpu_has_f16c();
}

// stochastic_draw(seed, index) from its first step (rounding.hpp): the loops below advance the
// state by one addition per element instead of a 64-bit multiplication.
constexpr std::uint64_t kGolden = kSplitmixGamma;

[[gnu::always_inline]] constexpr std::uint32_t draw_from_state(std::uint64_t z) {
  return stochastic_draw_from_state(z);
}

constexpr bool draws_agree(std::uint64_t seed, std::uint64_t index) {
  return draw_from_state(seed + (index + 1) * kGolden) == stochastic_draw(seed, index);
}
static_assert(draws_agree(0, 0) && draws_agree(0x5EED, 12345) && draws_agree(~0ull, ~0ull - 7) &&
              draws_agree(0x0123456789ABCDEF, 0xFEDCBA9876543210));

template <const Format& F, bool Stochastic, bool Saturate, typename Out>
[[gnu::always_inline]] inline void encode_loop(const float* in, Out* out, std::size_t n,
                                               std::uint64_t seed, std::uint64_t first_index) {
  std::uint64_t state = seed + (first_index + 1) * kGolden;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, sizeof u);
    const std::uint32_t random = Stochastic ? draw_from_state(state) : 0u;
    state += kGolden;
    out[i] = static_cast<Out>(encode_one<F, Stochastic, Saturate>(u, random));
  }
}

template <const Format& F, typename Out>
[[gnu::always_inline]] inline void encode_variants(bool stochastic, bool saturate, const float* in,
                                                   void* out, std::size_t n, std::uint64_t seed,
                                                   std::uint64_t first_index) {
  auto* o = static_cast<Out*>(out);
  if (stochastic) {
    saturate ? encode_loop<F, true, true>(in, o, n, seed, first_index)
             : encode_loop<F, true, false>(in, o, n, seed, first_index);
  } else {
    saturate ? encode_loop<F, false, true>(in, o, n, seed, first_index)
             : encode_loop<F, false, false>(in, o, n, seed, first_index);
  }
}

// The same dispatch compiled for the baseline ISA and for AVX2; the loops above are inlined into
// each and vectorised for that ISA. AVX-512 has its own kernels below.
#define AMPBENCH_ENCODE_FAST(NAME, TARGET)                                                    \
  TARGET void NAME(FastFormat id, bool stochastic, bool saturate, const float* in, void* out, \
                   std::size_t n, std::uint64_t seed, std::uint64_t first_index) {            \
    switch (id) {                                                                             \
      case FastFormat::fp16:                                                                  \
        encode_variants<formats::fp16, std::uint16_t>(stochastic, saturate, in, out, n, seed, \
                                                      first_index);                           \
        break;                                                                                \
      case FastFormat::bf16:                                                                  \
        encode_variants<formats::bf16, std::uint16_t>(stochastic, saturate, in, out, n, seed, \
                                                      first_index);                           \
        break;                                                                                \
      case FastFormat::tf32:                                                                  \
        encode_variants<formats::tf32, std::uint32_t>(stochastic, saturate, in, out, n, seed, \
                                                      first_index);                           \
        break;                                                                                \
      case FastFormat::e4m3:                                                                  \
        encode_variants<formats::e4m3, std::uint8_t>(stochastic, saturate, in, out, n, seed,  \
                                                     first_index);                            \
        break;                                                                                \
      case FastFormat::e5m2:                                                                  \
        encode_variants<formats::e5m2, std::uint8_t>(stochastic, saturate, in, out, n, seed,  \
                                                     first_index);                            \
        break;                                                                                \
      case FastFormat::none: break;                                                           \
    }                                                                                         \
  }

AMPBENCH_ENCODE_FAST(encode_fast_baseline, )
AMPBENCH_ENCODE_FAST(encode_fast_avx2, __attribute__((target("avx2,bmi2,fma"))))
#undef AMPBENCH_ENCODE_FAST

// ---- AVX2: e4m3 and e5m2 to nearest
// -------------------------------------------------------------- encode_one rounds every value by a
// shift that depends on its binade below F's normal range; AVX2's vectorisation of it (variable
// shifts, selects as blends) ran at 0.15x F16C on a 2-core AMD EPYC. Here the two ranges are
// rounded apart and one is selected per lane:
//   - F's normal range as encode_one rounds it: the binary32 encoding plus half a quantum less
//     one plus the kept bit's parity, shifted right, with the exponent field rebiased to F's;
//   - below it, one binary32 addition of M = 2^(emin - t + 23), F's subnormal quantum moved to the
//     last place of binary32's significand: |x| + M rounds |x| to a multiple of the quantum, to
//     nearest even as binary32 addition does, and the bits of the sum above M's are F's subnormal
//     code (a carry gives F's smallest normal, whose code follows). MXCSR must round to nearest:
//     encode_fp8_nearest_avx2 is taken only when it does (fp8_nearest_avx2_applies).
// Past the largest finite value, infinities included, the overflow pattern or, saturating, the
// largest finite; NaNs as encode_one makes them; the sign bit on top.
template <const Format& F, bool Saturate>
__attribute__((target("avx2"), always_inline)) inline __m256i encode_fp8_lanes(__m256i u) {
  constexpr int kT = F.fraction_bits();
  constexpr int kDrop = 23 - kT;
  constexpr auto kMaxMagnitude = static_cast<std::uint32_t>(detail::max_finite_bits(F));
  constexpr auto kOverflowMagnitude = static_cast<std::uint32_t>(
      F.has_infinity() ? detail::infinity_bits(F) : detail::nan_bits(F, 0));
  constexpr std::uint32_t kCeiling = Saturate ? kMaxMagnitude : kOverflowMagnitude;
  constexpr auto kMinNormal = static_cast<std::uint32_t>(F.emin + 127) << 23;
  constexpr auto kRebiasCode = static_cast<std::uint32_t>(F.emin + 126) << kT;
  constexpr auto kMagic = static_cast<std::uint32_t>(F.emin - kT + 23 + 127) << 23;
  static_assert(8 == F.total_bits() && F.subnormals && kOverflowMagnitude == kMaxMagnitude + 1);
  static_assert(F.emin - kT + 23 > 0, "M must exceed every value below F's normal range");

  const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
  // Normal: (a + 2^(kDrop-1) - 1 + kept bit) >> kDrop, rebiased (unsigned: a NaN's sum passes
  // 2^31).
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, kDrop), _mm256_set1_epi32(1));
  const __m256i sum = _mm256_add_epi32(
      _mm256_add_epi32(a, _mm256_set1_epi32(static_cast<int>((1u << (kDrop - 1)) - 1u))), lsb);
  const __m256i normal =
      _mm256_sub_epi32(_mm256_srli_epi32(sum, kDrop), _mm256_set1_epi32(kRebiasCode));
  // Subnormal: the bits of |x| + M above M's.
  const __m256i magic = _mm256_set1_epi32(static_cast<int>(kMagic));
  const __m256i subnormal = _mm256_sub_epi32(
      _mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(magic))),
      magic);
  const __m256i below = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(kMinNormal)), a);
  // An input above the normal range leaves `normal` far above the ceiling (below 2^(32-kDrop)):
  // the unsigned minimum clamps it.
  __m256i magnitude = _mm256_min_epu32(_mm256_blendv_epi8(normal, subnormal, below),
                                       _mm256_set1_epi32(static_cast<int>(kCeiling)));
  // Without infinities and saturation (e4m3's default), a NaN's code is the overflow pattern,
  // which the clamp gave it already.
  constexpr bool kNanIsCeiling = !F.has_infinity() && detail::nan_bits(F, 0) == kCeiling;
  if constexpr (kNanIsCeiling) {
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
    return _mm256_or_si256(magnitude, sign);
  }
  const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000));
  __m256i nan_code;
  if constexpr (F.has_infinity()) {
    constexpr auto kQuietNan =
        (static_cast<std::uint32_t>(F.special_field()) << kT) | (1u << (kT - 1));
    nan_code =
        _mm256_or_si256(_mm256_set1_epi32(static_cast<int>(kQuietNan)),
                        _mm256_srli_epi32(_mm256_and_si256(a, _mm256_set1_epi32(0x7FFFFF)), kDrop));
  } else {
    nan_code = _mm256_set1_epi32(static_cast<int>(detail::nan_bits(F, 0)));
  }
  magnitude = _mm256_blendv_epi8(magnitude, nan_code, nan);
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
  return _mm256_or_si256(magnitude, sign);
}

template <const Format& F, bool Saturate>
__attribute__((target("avx2"))) void encode_fp8_nearest_avx2(const float* in, std::uint8_t* out,
                                                             std::size_t n) {
  std::size_t i = 0;
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (; i + 32 <= n; i += 32) {
    const auto* v = reinterpret_cast<const __m256i*>(in + i);
    const __m256i words01 =
        _mm256_packus_epi32(encode_fp8_lanes<F, Saturate>(_mm256_loadu_si256(v)),
                            encode_fp8_lanes<F, Saturate>(_mm256_loadu_si256(v + 1)));
    const __m256i words23 =
        _mm256_packus_epi32(encode_fp8_lanes<F, Saturate>(_mm256_loadu_si256(v + 2)),
                            encode_fp8_lanes<F, Saturate>(_mm256_loadu_si256(v + 3)));
    const __m256i bytes = _mm256_packus_epi16(words01, words23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permutevar8x32_epi32(bytes, order));
  }
  for (; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, sizeof u);
    out[i] = static_cast<std::uint8_t>(encode_one<F, false, Saturate>(u, 0));
  }
}

// ---- AVX2 with F16C: e5m2 to nearest
// ------------------------------------------------------------------------------------- e5m2 is
// binary16 with two fraction bits: the same exponent field, bias and subnormal range. F16C's
// conversion to binary16 toward zero, with the lowest bit set where it was inexact (rounding to
// odd: binary16's bits below e5m2's keep whether anything was dropped), then binary16's top byte
// rounded to nearest even in the integer encoding, is e5m2's round to nearest even of the binary32
// value: rounding to odd with at least two more bits than the target's cannot round a second
// time (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
// using rounding to odd", IEEE TC 2008). A carry moves up a binade, or from the largest finite
// value to infinity; past binary16's range the conversion gives its largest finite value,
// inexact, which rounds to infinity as e5m2 does; infinities convert exactly. A NaN keeps
// binary16's top byte: the quiet bit set and the top fraction bits, as encode_one makes it. Sixteen
// values per vector of 16-bit lanes. The lane order of the 128-bit halves is restored with one
// permutation per pack.
template <bool Saturate>
__attribute__((target("avx2,f16c"), always_inline)) inline __m256i encode_e5m2_lanes16(__m256 lo,
                                                                                       __m256 hi) {
  constexpr int kTowardZero = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
  constexpr int kUpward = _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256i half =
      _mm256_set_m128i(_mm256_cvtps_ph(hi, kTowardZero), _mm256_cvtps_ph(lo, kTowardZero));
  // Inexact lanes: |x| converted upward differs from |x| toward zero (a NaN's lane is replaced
  // below).
  const __m256i up = _mm256_set_m128i(_mm256_cvtps_ph(_mm256_and_ps(hi, abs_mask), kUpward),
                                      _mm256_cvtps_ph(_mm256_and_ps(lo, abs_mask), kUpward));
  const __m256i magnitude16 = _mm256_and_si256(half, _mm256_set1_epi16(0x7FFF));
  const __m256i exact = _mm256_cmpeq_epi16(magnitude16, up);
  const __m256i odd = _mm256_or_si256(half, _mm256_andnot_si256(exact, _mm256_set1_epi16(1)));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi16(odd, 8), _mm256_set1_epi16(1));
  __m256i code =
      _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(odd, _mm256_set1_epi16(0x7F)), lsb), 8);
  if constexpr (Saturate) {
    // Past the largest finite value (0x7B), infinities included: the largest finite.
    const __m256i sign = _mm256_and_si256(code, _mm256_set1_epi16(0x80));
    code = _mm256_or_si256(sign, _mm256_min_epu16(_mm256_and_si256(code, _mm256_set1_epi16(0x7F)),
                                                  _mm256_set1_epi16(0x7B)));
  }
  const __m256i nan = _mm256_cmpgt_epi16(magnitude16, _mm256_set1_epi16(0x7C00));
  return _mm256_blendv_epi8(code, _mm256_srli_epi16(half, 8), nan);
}

template <bool Saturate>
__attribute__((target("avx2,f16c"))) void encode_e5m2_nearest_f16c(const float* in,
                                                                   std::uint8_t* out,
                                                                   std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i low =
        encode_e5m2_lanes16<Saturate>(_mm256_loadu_ps(in + i), _mm256_loadu_ps(in + i + 8));
    const __m256i high =
        encode_e5m2_lanes16<Saturate>(_mm256_loadu_ps(in + i + 16), _mm256_loadu_ps(in + i + 24));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi16(low, high), 0xD8));
  }
  for (; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, sizeof u);
    out[i] = static_cast<std::uint8_t>(encode_one<formats::e5m2, false, Saturate>(u, 0));
  }
}

// The AVX2 kernels above apply: e4m3 or e5m2 to nearest on an AVX2 CPU (not AVX-512, which has
// its own), with MXCSR rounding to nearest. The integer kernel's subnormal addition needs that;
// the F16C one (e5m2) does not, but takes the same condition: under another rounding direction
// both formats go to the compiler's kernel.
bool fp8_nearest_avx2_applies(FastFormat id, bool stochastic) {
  return !stochastic && (id == FastFormat::e4m3 || id == FastFormat::e5m2) &&
         (_mm_getcsr() & 0x6000u) == 0;  // MXCSR.RC: 00 is round to nearest
}

void encode_fp8_nearest_avx2(FastFormat id, bool saturate, const float* in, void* out,
                             std::size_t n) {
  auto* o = static_cast<std::uint8_t*>(out);
  if (id == FastFormat::e4m3) {
    saturate ? encode_fp8_nearest_avx2<formats::e4m3, true>(in, o, n)
             : encode_fp8_nearest_avx2<formats::e4m3, false>(in, o, n);
  } else if (cpu_has_f16c()) {
    saturate ? encode_e5m2_nearest_f16c<true>(in, o, n) : encode_e5m2_nearest_f16c<false>(in, o, n);
  } else {
    saturate ? encode_fp8_nearest_avx2<formats::e5m2, true>(in, o, n)
             : encode_fp8_nearest_avx2<formats::e5m2, false>(in, o, n);
  }
}

// ---- AVX-512 -----------------------------------------------------------------------------------
// encode_one for 16 values at a time, written with intrinsics. GCC 12's vectorisation of the loops
// above, for AVX-512, takes about 1.5x the instructions (selects as blends and mask juggling,
// constants rebuilt inside the loop), and 512-bit code has only two vector ports (0 and 5, shifts
// on port 0 alone): stochastic rounding, with two 64-bit multiplications per draw, came out below
// a quarter of F16C's speed that way.

// GCC 12 before 12.3 warns about the undefined pass-through operand inside many AVX-512
// intrinsics (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define AMPBENCH_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,bmi2,fma")))

// The truth table of (a & b) | c for _mm512_ternarylogic_epi32(a, b, c, table), whose bit
// 4a + 2b + c is the result.
constexpr int kAndOr = 0xEA;

// A broadcast constant. The empty asm makes it opaque, so GCC keeps it in a register across the
// loop instead of rebuilding it there each time (mov + vpbroadcastd: a port-5 uop per constant
// per iteration).
[[gnu::always_inline]] AMPBENCH_AVX512 inline __m512i set32(std::uint32_t v) {
  __m512i x = _mm512_set1_epi32(static_cast<int>(v));
  asm("" : "+v"(x));
  return x;
}

// encode16's last step: NaN lanes (|x| = a above infinity's) get F's NaN, with the top kT bits
// of x's fraction (bits kDrop.. of a, which encode16's `kept` also holds there) and the quiet bit
// where F has infinities and NaN payloads, and every lane gets x's sign.
template <const Format& F>
[[gnu::always_inline]] AMPBENCH_AVX512 inline __m512i with_nans_and_sign(__m512i u, __m512i a,
                                                                         __m512i magnitude) {
  constexpr int kT = F.fraction_bits();
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, set32(0x7F800000u));
  if constexpr (F.has_infinity()) {
    constexpr auto kQuietNan =
        (static_cast<std::uint32_t>(F.special_field()) << kT) | (1u << (kT - 1));
    const __m512i payload = _mm512_ternarylogic_epi32(
        _mm512_srli_epi32(a, 23 - kT), set32(static_cast<std::uint32_t>(detail::fraction_mask(F))),
        set32(kQuietNan), kAndOr);
    magnitude = _mm512_mask_mov_epi32(magnitude, nan, payload);
  } else {
    magnitude = _mm512_mask_mov_epi32(magnitude, nan,
                                      set32(static_cast<std::uint32_t>(detail::nan_bits(F, 0))));
  }
  constexpr auto kSign = static_cast<std::uint32_t>(F.sign_mask());
  return _mm512_ternarylogic_epi32(_mm512_srli_epi32(u, 32 - F.total_bits()), set32(kSign),
                                   magnitude, kAndOr);
}

template <const Format& F, bool Stochastic, bool Saturate>
[[gnu::always_inline]] AMPBENCH_AVX512 inline __m512i encode16(__m512i u, __m512i random) {
  constexpr int kT = F.fraction_bits();
  constexpr int kDrop = 23 - kT;
  constexpr auto kMaxMagnitude = static_cast<std::uint32_t>(detail::max_finite_bits(F));
  constexpr auto kMinNormal = static_cast<std::uint32_t>(F.emin + 127) << 23;
  constexpr auto kRebias = static_cast<std::uint32_t>(F.emin + 126) << 23;
  // As encode_one.
  static_assert(kT >= 1 && kT <= 22 && F.emin >= -126 && F.emax <= 127 && F.subnormals);
  static_assert(detail::nan_bits(F, 0) == kMaxMagnitude + 1 ||
                detail::infinity_bits(F) == kMaxMagnitude + 1);
  static_assert(F.emin == -126 || 23 - kT + F.emin + 127 >= 24 + 32);

  if constexpr (!Stochastic && !Saturate && F.emin == -126 && F.emax == 127) {
    // bf16, tf32: F's exponent field is binary32's, so the binary32 encoding rounded in place,
    // sign and all, is F's: a carry moves up a binade, or from the largest finite value to
    // infinity. Only NaNs need their own pattern: the kept bits with the quiet bit set.
    const __m512i kept = _mm512_srli_epi32(u, kDrop);
    const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(u, set32((1u << (kDrop - 1)) - 1u)),
                                         _mm512_and_si512(kept, set32(1)));
    const __mmask16 nan = _mm512_fpclass_ps_mask(_mm512_castsi512_ps(u), 0x81);  // qNaN, sNaN
    return _mm512_mask_or_epi32(_mm512_srli_epi32(sum, kDrop), nan, kept, set32(1u << (kT - 1)));
  }

  if constexpr (!Stochastic && F.emin > -126) {
    // Nearest even with no variable shift. In F's normal range the binary32 encoding, rebiased,
    // is rounded in place (as for bf16 above; the rebias is a multiple of 2^23, so the kept bits'
    // last one is bit kDrop of |x|'s encoding). Below 2^emin, |x| + 2^(emin - t + 23) in binary32,
    // rounded to nearest even by the instruction itself (not by MXCSR), lies on a lattice of F's
    // subnormal quantum 2^(emin - t) and counts them in its fraction field: F's subnormal
    // encoding, or 2^emin's where it rounds up. Lanes of the other range are replaced.
    const __m512i a = _mm512_and_si512(u, set32(0x7FFFFFFFu));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, kDrop), set32(1));
    __m512i magnitude = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(a, set32((1u << (kDrop - 1)) - 1u - kRebias)), lsb),
        kDrop);
    const __m512i lattice = set32(static_cast<std::uint32_t>(F.emin - kT + 23 + 127) << 23);
    const __m512i subnormal =
        _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_round_ps(
                             _mm512_castsi512_ps(a), _mm512_castsi512_ps(lattice),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
                         lattice);
    magnitude =
        _mm512_mask_mov_epi32(magnitude, _mm512_cmplt_epu32_mask(a, set32(kMinNormal)), subnormal);
    magnitude = _mm512_min_epu32(magnitude, set32(kMaxMagnitude + (Saturate ? 0u : 1u)));
    return with_nans_and_sign<F>(u, a, magnitude);
  }

  const __m512i a = _mm512_and_si512(u, set32(0x7FFFFFFFu));
  if constexpr (Stochastic) {
    // Where every lane is zero or lies in F's normal range up to its largest finite value (scaled
    // operands nearly always do), the shift is the constant kDrop and nothing overflows. Rounding
    // away when random < floor(2^32 d / 2^kDrop), d the kDrop discarded bits, is rounding away
    // when d exceeds random's top kDrop bits r: then d + (2^kDrop - 1 - r), the complement of r
    // added to v, carries into the kept bits, and otherwise it does not.
    constexpr std::uint32_t kMaxFinite = (kMaxMagnitude << kDrop) + kRebias;  // as binary32
    const __mmask16 nonzero = _mm512_test_epi32_mask(a, a);
    const __mmask16 normal = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a, set32(kMinNormal)),
                                                     set32(kMaxFinite - kMinNormal));
    if (static_cast<__mmask16>(normal | static_cast<__mmask16>(~nonzero)) == 0xFFFF) {
      const __m512i complement =
          _mm512_xor_si512(_mm512_srli_epi32(random, 32 - kDrop), set32((1u << kDrop) - 1u));
      const __m512i sum = _mm512_add_epi32(_mm512_sub_epi32(a, set32(kRebias)), complement);
      constexpr auto kSign = static_cast<std::uint32_t>(F.sign_mask());
      return _mm512_ternarylogic_epi32(_mm512_srli_epi32(u, 32 - F.total_bits()), set32(kSign),
                                       _mm512_maskz_srli_epi32(nonzero, sum, kDrop), kAndOr);
    }
  }
  // v >> s, as in encode_one. Vector shifts by 32 or more give 0, which is what the clamps in
  // encode_one obtain (counts below 0 wrap to large ones: shifts that must give 0 do).
  __m512i v = _mm512_sub_epi32(a, set32(kRebias));
  __m512i s = set32(kDrop);
  if constexpr (F.emin > -126) {
    const __mmask16 normal = _mm512_cmpge_epu32_mask(a, set32(kMinNormal));
    v = _mm512_mask_sub_epi32(
        _mm512_ternarylogic_epi32(a, set32(0x7FFFFFu), set32(0x800000u), kAndOr), normal, a,
        set32(kRebias));
    s = _mm512_max_epi32(_mm512_sub_epi32(set32(kDrop + F.emin + 127), _mm512_srli_epi32(a, 23)),
                         s);
  }
  const __m512i kept = _mm512_srlv_epi32(v, s);

  __m512i magnitude;
  if constexpr (!Stochastic) {
    // (v + half - 1 + last kept bit) >> s; half - 1 = 0x7FFFFFFF >> (32 - s).
    const __m512i half_minus_one =
        _mm512_srlv_epi32(set32(0x7FFFFFFFu), _mm512_sub_epi32(set32(32), s));
    const __m512i lsb = _mm512_and_si512(kept, set32(1));
    magnitude = _mm512_srlv_epi32(_mm512_add_epi32(_mm512_add_epi32(v, half_minus_one), lsb), s);
    magnitude = _mm512_min_epu32(magnitude, set32(kMaxMagnitude + (Saturate ? 0u : 1u)));
  } else {
    // Threshold: the discarded bits at the top of the word, or (s > 32) shifted down; exactly one
    // of the two shifts has a count below 32, except s = 32 where both give v.
    const __m512i threshold = _mm512_or_si512(_mm512_sllv_epi32(v, _mm512_sub_epi32(set32(32), s)),
                                              _mm512_srlv_epi32(v, _mm512_sub_epi32(s, set32(32))));
    __mmask16 away = _mm512_cmplt_epu32_mask(random, threshold);
    magnitude = _mm512_mask_add_epi32(kept, away, kept, set32(1));
    if constexpr (Saturate) {
      magnitude = _mm512_min_epu32(magnitude, set32(kMaxMagnitude));  // infinities included
    } else {
      // Overflow goes to the overflow pattern when rounding away, else to the largest finite;
      // an infinite input (and a NaN, replaced below) counts as rounding away.
      away |= _mm512_cmpge_epu32_mask(a, set32(0x7F800000u));
      const __m512i ceiling =
          _mm512_mask_add_epi32(set32(kMaxMagnitude), away, set32(kMaxMagnitude), set32(1));
      magnitude = _mm512_min_epu32(magnitude, ceiling);
    }
  }

  return with_nans_and_sign<F>(u, a, magnitude);
}

// The top halves of 8 splitmix64 outputs before their last xor-shift, from the states
// seed + (index + 1) * kGolden (see draw_from_state).
[[gnu::always_inline]] AMPBENCH_AVX512 inline __m512i splitmix_mixed(__m512i z) {
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
  z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ull)));
  z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
  return _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBull)));
}

// 16 draws, elements 0-7 from `low`, 8-15 from `high`: (z ^ (z >> 31)) >> 32 is h ^ (h >> 31)
// for h the top half of z.
[[gnu::always_inline]] AMPBENCH_AVX512 inline __m512i draws16(__m512i low, __m512i high) {
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i h = _mm512_permutex2var_epi32(splitmix_mixed(low), odd, splitmix_mixed(high));
  return _mm512_xor_si512(h, _mm512_srli_epi32(h, 31));
}

// Stores 16 encodings as Out, or (Out = float) as their values.
template <const Format& F, typename Out>
[[gnu::always_inline]] AMPBENCH_AVX512 inline void store16(Out* out, __mmask16 mask, bool full,
                                                           __m512i bits) {
  if constexpr (std::is_same_v<Out, float>) {
    __m512 values;
    if constexpr (same_values(F, formats::bf16)) {
      values = _mm512_castsi512_ps(_mm512_slli_epi32(bits, 16));
    } else if constexpr (same_values(F, formats::tf32)) {
      values = _mm512_castsi512_ps(_mm512_slli_epi32(bits, 13));
    } else {
      // fp16, or e5m2 whose pattern followed by 8 zero bits is the fp16 one of the same value;
      // the conversion is exact and keeps NaN payloads, as decode.
      static_assert(same_values(F, formats::fp16) || same_values(F, formats::e5m2));
      if constexpr (same_values(F, formats::e5m2)) bits = _mm512_slli_epi32(bits, 8);
      values = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(bits));
    }
    full ? _mm512_storeu_ps(out, values) : _mm512_mask_storeu_ps(out, mask, values);
  } else if constexpr (sizeof(Out) == 4) {
    full ? _mm512_storeu_si512(out, bits) : _mm512_mask_storeu_epi32(out, mask, bits);
  } else if constexpr (sizeof(Out) == 2) {
    full ? _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi32_epi16(bits))
         : _mm512_mask_cvtepi32_storeu_epi16(out, mask, bits);
  } else {
    full ? _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(bits))
         : _mm512_mask_cvtepi32_storeu_epi8(out, mask, bits);
  }
}

template <const Format& F, bool Stochastic, bool Saturate, typename Out>
AMPBENCH_AVX512 void encode_avx512(const float* in, Out* out, std::size_t n, std::uint64_t seed,
                                   std::uint64_t first_index) {
  constexpr auto kStep = [](std::uint64_t k) { return static_cast<long long>(k * kGolden); };
  const __m512i offsets = _mm512_setr_epi64(kStep(0), kStep(1), kStep(2), kStep(3), kStep(4),
                                            kStep(5), kStep(6), kStep(7));
  __m512i low = _mm512_add_epi64(
      _mm512_set1_epi64(static_cast<long long>(seed + (first_index + 1) * kGolden)), offsets);
  __m512i high = _mm512_add_epi64(low, _mm512_set1_epi64(kStep(8)));
  const __m512i step = _mm512_set1_epi64(kStep(16));
  const auto block = [&](std::size_t i, __mmask16 mask, bool full) AMPBENCH_AVX512 {
    const __m512i u = full ? _mm512_loadu_si512(in + i) : _mm512_maskz_loadu_epi32(mask, in + i);
    __m512i random = _mm512_setzero_si512();
    if constexpr (Stochastic) {
      random = draws16(low, high);
      low = _mm512_add_epi64(low, step);
      high = _mm512_add_epi64(high, step);
    }
    store16<F>(out + i, mask, full, encode16<F, Stochastic, Saturate>(u, random));
  };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) block(i, 0xFFFF, true);
  if (i < n) block(i, static_cast<__mmask16>((1u << (n - i)) - 1u), false);
}

template <const Format& F, typename Out>
AMPBENCH_AVX512 void encode_avx512_variants(bool stochastic, bool saturate, const float* in,
                                            Out* out, std::size_t n, std::uint64_t seed,
                                            std::uint64_t first_index) {
  if (stochastic) {
    saturate ? encode_avx512<F, true, true>(in, out, n, seed, first_index)
             : encode_avx512<F, true, false>(in, out, n, seed, first_index);
  } else {
    saturate ? encode_avx512<F, false, true>(in, out, n, seed, first_index)
             : encode_avx512<F, false, false>(in, out, n, seed, first_index);
  }
}

void encode_fast_avx512(FastFormat id, bool stochastic, bool saturate, const float* in, void* out,
                        std::size_t n, std::uint64_t seed, std::uint64_t first_index) {
  switch (id) {
    case FastFormat::fp16:
      encode_avx512_variants<formats::fp16>(stochastic, saturate, in,
                                            static_cast<std::uint16_t*>(out), n, seed, first_index);
      break;
    case FastFormat::bf16:
      encode_avx512_variants<formats::bf16>(stochastic, saturate, in,
                                            static_cast<std::uint16_t*>(out), n, seed, first_index);
      break;
    case FastFormat::tf32:
      encode_avx512_variants<formats::tf32>(stochastic, saturate, in,
                                            static_cast<std::uint32_t*>(out), n, seed, first_index);
      break;
    case FastFormat::e4m3:
      encode_avx512_variants<formats::e4m3>(stochastic, saturate, in,
                                            static_cast<std::uint8_t*>(out), n, seed, first_index);
      break;
    case FastFormat::e5m2:
      encode_avx512_variants<formats::e5m2>(stochastic, saturate, in,
                                            static_cast<std::uint8_t*>(out), n, seed, first_index);
      break;
    case FastFormat::none: break;
  }
}

// round_array's values straight from the registers, for the formats whose patterns convert to
// binary32 in a few instructions; false for the others.
bool round_fast_avx512(FastFormat id, bool stochastic, bool saturate, const float* in, float* out,
                       std::size_t n, std::uint64_t seed, std::uint64_t first_index) {
  switch (id) {
    case FastFormat::fp16:
      encode_avx512_variants<formats::fp16>(stochastic, saturate, in, out, n, seed, first_index);
      return true;
    case FastFormat::bf16:
      encode_avx512_variants<formats::bf16>(stochastic, saturate, in, out, n, seed, first_index);
      return true;
    case FastFormat::tf32:
      encode_avx512_variants<formats::tf32>(stochastic, saturate, in, out, n, seed, first_index);
      return true;
    case FastFormat::e5m2:
      encode_avx512_variants<formats::e5m2>(stochastic, saturate, in, out, n, seed, first_index);
      return true;
    case FastFormat::e4m3:
    case FastFormat::none: return false;
  }
  return false;
}

void encode_fast(FastFormat id, const RoundingOptions& o, const float* in, void* out, std::size_t n,
                 std::uint64_t first_index) {
  const bool stochastic = o.mode == Rounding::stochastic_proportional;
  const bool saturate = o.format.overflow == Overflow::saturate;
  switch (cpu_isa()) {
    case Isa::avx512:
      encode_fast_avx512(id, stochastic, saturate, in, out, n, o.seed, first_index);
      break;
    case Isa::avx2:
      if (fp8_nearest_avx2_applies(id, stochastic)) {
        encode_fp8_nearest_avx2(id, saturate, in, out, n);
      } else {
        encode_fast_avx2(id, stochastic, saturate, in, out, n, o.seed, first_index);
      }
      break;
    case Isa::baseline:
      encode_fast_baseline(id, stochastic, saturate, in, out, n, o.seed, first_index);
      break;
  }
}

// F16C: fp32 -> fp16 with round-to-nearest-even from the instruction's immediate (MXCSR's mode is
// not used), 16 at a time where the CPU has AVX-512.
AMPBENCH_AVX512 void encode_fp16_f16c_avx512(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // The zero-masking form with every lane on is plain vcvtps2ph; _mm512_cvtps_ph itself trips
    // GCC 12's -Wmaybe-uninitialized on its undefined pass-through operand.
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  if (i < n) {
    const auto mask = static_cast<__mmask16>((1u << (n - i)) - 1u);
    const __m256i h = _mm512_maskz_cvtps_ph(0xFFFF, _mm512_maskz_loadu_ps(mask, in + i),
                                            _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(out + i, mask, h);
  }
}

AMPBENCH_AVX512 void round_fp16_f16c_avx512(const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; i += 16) {
    const bool full = n - i >= 16;
    const auto mask = static_cast<__mmask16>(full ? 0xFFFFu : (1u << (n - i)) - 1u);
    const __m512 x = full ? _mm512_loadu_ps(in + i) : _mm512_maskz_loadu_ps(mask, in + i);
    const __m512 y = _mm512_cvtph_ps(_mm512_maskz_cvtps_ph(0xFFFF, x, _MM_FROUND_TO_NEAREST_INT));
    full ? _mm512_storeu_ps(out + i, y) : _mm512_mask_storeu_ps(out + i, mask, y);
  }
}

#undef AMPBENCH_AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// One value through F16C (_cvtss_sh is a macro that clang's -Wpedantic rejects).
__attribute__((target("avx2,f16c"))) inline std::uint16_t f16c_one(float x) {
  return static_cast<std::uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT), 0));
}

__attribute__((target("avx2,f16c"))) void encode_fp16_f16c_avx2(const float* in, std::uint16_t* out,
                                                                std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = f16c_one(in[i]);
}

__attribute__((target("avx2,f16c"))) void round_fp16_f16c_avx2(const float* in, float* out,
                                                               std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = _cvtsh_ss(f16c_one(in[i]));
}

void encode_fp16_f16c(const float* in, std::uint16_t* out, std::size_t n) {
  cpu_isa() == Isa::avx512 ? encode_fp16_f16c_avx512(in, out, n)
                           : encode_fp16_f16c_avx2(in, out, n);
}

void round_fp16_f16c(const float* in, float* out, std::size_t n) {
  cpu_isa() == Isa::avx512 ? round_fp16_f16c_avx512(in, out, n) : round_fp16_f16c_avx2(in, out, n);
}

__attribute__((target("avx2,f16c"))) void decode_fp16_f16c(const std::uint16_t* in, float* out,
                                                           std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = _cvtsh_ss(in[i]);
}

// Values of every pattern of a format of at most 16 bits, from the reference decode.
template <std::size_t N>
std::array<float, N> decode_table(const Format& f) {
  std::array<float, N> table{};
  for (std::size_t bits = 0; bits < N; ++bits) {
    table[bits] = static_cast<float>(decode(f, bits));
  }
  return table;
}

const float* table_for(const Format& f) {
  static const auto fp16 = decode_table<65536>(formats::fp16);
  static const auto e4m3 = decode_table<256>(formats::e4m3);
  static const auto e5m2 = decode_table<256>(formats::e5m2);
  if (same_values(f, formats::fp16)) return fp16.data();
  if (same_values(f, formats::e4m3)) return e4m3.data();
  if (same_values(f, formats::e5m2)) return e5m2.data();
  return nullptr;
}

float float_of_bits(std::uint32_t u) {
  return std::bit_cast<float>(u);
}

// A binary32 pattern with the quiet bit set when it is a NaN: decode's rule for NaN patterns.
std::uint32_t quieted(std::uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? u | 0x400000u : u;
}

template <typename Bits>
void decode_any(const Format& f, const Bits* in, float* out, std::size_t n) {
  if (same_values(f, formats::bf16)) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bits(quieted(std::uint32_t{in[i]} << 16));
  } else if (same_values(f, formats::tf32)) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bits(quieted(std::uint32_t{in[i]} << 13));
  } else if (const float* table = table_for(f)) {
    for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(decode(f, in[i]));
  }
}

void require_same_size(std::size_t in, std::size_t out, const char* what) {
  if (in != out) {
    throw std::invalid_argument(std::string(what) + ": input has " + std::to_string(in) +
                                " elements but output has " + std::to_string(out));
  }
}

void require_valid(const RoundingOptions& o, Container container, const char* what) {
  RoundingOptions checked = o;
  checked.container = container;
  const Validation v = validate(checked);
  if (!v.ok()) throw std::invalid_argument(std::string(what) + ": " + v.errors.front());
}

template <typename Bits>
void encode_array_impl(const RoundingOptions& o, std::span<const float> in, std::span<Bits> out,
                       std::uint64_t first_index) {
  require_same_size(in.size(), out.size(), "encode_array");
  require_valid(o, Container::binary32, "encode_array");
  if (o.format.total_bits() > static_cast<int>(8 * sizeof(Bits))) {
    throw std::invalid_argument(std::string("encode_array: format ") + o.format.name + " has " +
                                std::to_string(o.format.total_bits()) + " bits, more than " +
                                std::to_string(8 * sizeof(Bits)));
  }
  if constexpr (sizeof(Bits) == 2) {
    if (uses_f16c(o)) return encode_fp16_f16c(in.data(), out.data(), in.size());
  }
  const FastFormat id = fast_format(o);
  if (id != FastFormat::none && id != FastFormat::tf32) {
    return encode_fast(id, o, in.data(), out.data(), in.size(), first_index);
  }
  const bool stochastic = is_stochastic(o.mode);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t random = stochastic ? stochastic_draw(o.seed, first_index + i) : 0u;
    out[i] = static_cast<Bits>(round_to(o.format, o.mode, in[i], random).bits);
  }
}

}  // namespace

bool cpu_has_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
#if defined(__clang__)  // clang 14 knows no "f16c" here; every AVX2 CPU has F16C
    return __builtin_cpu_supports("avx2") && cpu_isa() != Isa::baseline;
#else
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2") &&
           cpu_isa() != Isa::baseline;
#endif
  }();
  return has;
}

bool cpu_has_avx512() {
  return cpu_isa() == Isa::avx512;
}

const char* rounding_path(const RoundingOptions& options) {
  if (uses_f16c(options)) return "f16c";
  if (fast_format(options) == FastFormat::none) return "scalar";
  switch (cpu_isa()) {
    case Isa::avx512: return "avx512";
    case Isa::avx2:
      return fp8_nearest_avx2_applies(fast_format(options),
                                      options.mode == Rounding::stochastic_proportional)
                 ? "avx2 fp8"
                 : "avx2";
    case Isa::baseline: return "generic";
  }
  return "generic";
}

void round_array(const RoundingOptions& o, std::span<const float> in, std::span<float> out,
                 std::uint64_t first_index, EventCounts* events) {
  require_same_size(in.size(), out.size(), "round_array");
  require_valid(o, Container::binary32, "round_array");
  const FastFormat id = fast_format(o);
  if (events != nullptr || id == FastFormat::none) {
    const bool stochastic = is_stochastic(o.mode);
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::uint32_t random = stochastic ? stochastic_draw(o.seed, first_index + i) : 0u;
      const Rounded r = round_to(o.format, o.mode, in[i], random);
      out[i] = static_cast<float>(r.value);
      if (events != nullptr) events->add(r.event);
    }
    return;
  }
  if (uses_f16c(o)) return round_fp16_f16c(in.data(), out.data(), in.size());
  if (cpu_isa() == Isa::avx512 &&
      round_fast_avx512(id, o.mode == Rounding::stochastic_proportional,
                        o.format.overflow == Overflow::saturate, in.data(), out.data(), in.size(),
                        o.seed, first_index)) {
    return;
  }
  // Encode a chunk into a small buffer, then decode it: the buffer stays in L1.
  constexpr std::size_t kChunk = 1024;
  std::uint32_t buffer32[kChunk];
  std::uint16_t buffer16[kChunk];
  std::uint8_t buffer8[kChunk];
  for (std::size_t start = 0; start < in.size(); start += kChunk) {
    const std::size_t n = std::min(kChunk, in.size() - start);
    const float* src = in.data() + start;
    float* dst = out.data() + start;
    switch (id) {
      case FastFormat::fp16:
        encode_fast(id, o, src, buffer16, n, first_index + start);
        cpu_has_f16c() ? decode_fp16_f16c(buffer16, dst, n)
                       : decode_any(o.format, buffer16, dst, n);
        break;
      case FastFormat::bf16:
        encode_fast(id, o, src, buffer16, n, first_index + start);
        decode_any(o.format, buffer16, dst, n);
        break;
      case FastFormat::tf32:
        encode_fast(id, o, src, buffer32, n, first_index + start);
        decode_any(o.format, buffer32, dst, n);
        break;
      case FastFormat::e4m3:
      case FastFormat::e5m2:
        encode_fast(id, o, src, buffer8, n, first_index + start);
        decode_any(o.format, buffer8, dst, n);
        break;
      case FastFormat::none: break;
    }
  }
}

void encode_array(const RoundingOptions& o, std::span<const float> in, std::span<std::uint16_t> out,
                  std::uint64_t first_index) {
  encode_array_impl(o, in, out, first_index);
}

void encode_array(const RoundingOptions& o, std::span<const float> in, std::span<std::uint8_t> out,
                  std::uint64_t first_index) {
  encode_array_impl(o, in, out, first_index);
}

void decode_array(const Format& format, std::span<const std::uint16_t> in, std::span<float> out) {
  require_same_size(in.size(), out.size(), "decode_array");
  if (same_values(format, formats::fp16) && cpu_has_f16c()) {
    return decode_fp16_f16c(in.data(), out.data(), in.size());
  }
  decode_any(format, in.data(), out.data(), in.size());
}

void decode_array(const Format& format, std::span<const std::uint8_t> in, std::span<float> out) {
  require_same_size(in.size(), out.size(), "decode_array");
  decode_any(format, in.data(), out.data(), in.size());
}

}  // namespace ampbench::numeric
