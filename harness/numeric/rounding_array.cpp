#include "harness/numeric/rounding_array.hpp"

#include <immintrin.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ampbench::numeric {
namespace {

enum class Isa { baseline, avx2, avx512 };

Isa cpu_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      return Isa::avx512;
    }
    return __builtin_cpu_supports("avx2") ? Isa::avx2 : Isa::baseline;
  }();
  return isa;
}

// The formats with a vectorised path, and how their patterns are stored.
enum class FastFormat { none, fp16, bf16, tf32, e4m3, e5m2 };

bool same_values(const Format& a, const Format& b) {
  return a.precision == b.precision && a.emin == b.emin && a.emax == b.emax &&
         a.subnormals == b.subnormals && a.specials == b.specials;
}

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

// One binary32 value (as bits) to the encoding of F, branch-free so that loops vectorise. The same
// arithmetic as round_to, specialised: F has subnormals and 1 <= fraction bits <= 22, and
// binary32's exponent range lies within [F.emin - 126, ...] so the shift below stays under 64.
template <const Format& F, bool Stochastic, bool Saturate>
[[gnu::always_inline]] inline std::uint32_t encode_one(std::uint32_t u, std::uint32_t random) {
  constexpr int kT = F.fraction_bits();
  constexpr int kEmin = F.emin;
  constexpr auto kMaxMagnitude = static_cast<std::uint32_t>(detail::max_finite_bits(F));
  constexpr auto kOverflowMagnitude = static_cast<std::uint32_t>(
      F.has_infinity() ? detail::infinity_bits(F) : detail::nan_bits(F, 0));
  constexpr auto kSpecialField = static_cast<std::uint32_t>(F.special_field()) << kT;
  static_assert(kT >= 1 && kT <= 22);

  const std::uint32_t sign = (u >> 31) << (F.total_bits() - 1);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const int biased = static_cast<int>(a >> 23);
  const std::uint32_t significand = (a & 0x7FFFFFu) | (biased != 0 ? 0x800000u : 0u);
  const int e = (biased != 0 ? biased : 1) - 127;
  const int below_emin = kEmin - e > 0 ? kEmin - e : 0;
  // Encoding of the binade's first value minus its implicit bit: adding the kept significand
  // (implicit bit included) yields exponent field and fraction, and a carry moves up a binade.
  const std::uint32_t base = static_cast<std::uint32_t>(e > kEmin ? e - kEmin : 0) << kT;
  const int drop = 23 - kT + below_emin;

  std::uint32_t magnitude;
  bool away;
  if constexpr (!Stochastic) {
    const int d = drop < 31 ? drop : 31;  // beyond 24 everything is below half a quantum anyway
    const std::uint32_t kept = significand >> d;
    const std::uint32_t rest = significand & ((1u << d) - 1);
    const std::uint32_t half = 1u << (d - 1);
    away = rest > half || (rest == half && (kept & 1u) != 0);
    magnitude = base + kept + (away ? 1u : 0u);
  } else {
    const int d = drop < 63 ? drop : 63;  // exact: significand < 2^24, so rest >> 31+ is 0
    const std::uint64_t s = significand;
    const std::uint64_t kept = s >> d;
    const std::uint64_t rest = s & ((std::uint64_t{1} << d) - 1);
    const std::uint64_t threshold = d <= 32 ? rest << (32 - d) : rest >> (d - 32);
    away = random < threshold;
    magnitude = base + static_cast<std::uint32_t>(kept) + (away ? 1u : 0u);
  }

  std::uint32_t overflow_magnitude = kOverflowMagnitude;
  if constexpr (Saturate) {
    overflow_magnitude = kMaxMagnitude;
  } else if constexpr (Stochastic) {
    overflow_magnitude = away ? kOverflowMagnitude : kMaxMagnitude;
  }
  if (magnitude > kMaxMagnitude) magnitude = overflow_magnitude;
  if (a == 0x7F800000u) magnitude = Saturate ? kMaxMagnitude : kOverflowMagnitude;
  if (a > 0x7F800000u) {
    magnitude = F.has_infinity()
                    ? kSpecialField | (1u << (kT - 1)) | ((a & 0x7FFFFFu) >> (23 - kT))
                    : static_cast<std::uint32_t>(detail::nan_bits(F, 0));
  }
  return sign | magnitude;
}

template <const Format& F, bool Stochastic, bool Saturate, typename Out>
[[gnu::always_inline]] inline void encode_loop(const float* in, Out* out, std::size_t n,
                                               std::uint64_t seed, std::uint64_t first_index) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, sizeof u);
    const std::uint32_t random = Stochastic ? stochastic_draw(seed, first_index + i) : 0u;
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

// The same dispatch compiled three times, for the baseline ISA, AVX2 and AVX-512; the loops above
// are inlined into each and vectorised for that ISA.
#define AMPBENCH_ENCODE_FAST(NAME, TARGET)                                                      \
  TARGET void NAME(FastFormat id, bool stochastic, bool saturate, const float* in, void* out,   \
                   std::size_t n, std::uint64_t seed, std::uint64_t first_index) {              \
    switch (id) {                                                                               \
      case FastFormat::fp16:                                                                    \
        encode_variants<formats::fp16, std::uint16_t>(stochastic, saturate, in, out, n, seed,   \
                                                      first_index);                             \
        break;                                                                                  \
      case FastFormat::bf16:                                                                    \
        encode_variants<formats::bf16, std::uint16_t>(stochastic, saturate, in, out, n, seed,   \
                                                      first_index);                             \
        break;                                                                                  \
      case FastFormat::tf32:                                                                    \
        encode_variants<formats::tf32, std::uint32_t>(stochastic, saturate, in, out, n, seed,   \
                                                      first_index);                             \
        break;                                                                                  \
      case FastFormat::e4m3:                                                                    \
        encode_variants<formats::e4m3, std::uint8_t>(stochastic, saturate, in, out, n, seed,    \
                                                     first_index);                              \
        break;                                                                                  \
      case FastFormat::e5m2:                                                                    \
        encode_variants<formats::e5m2, std::uint8_t>(stochastic, saturate, in, out, n, seed,    \
                                                     first_index);                              \
        break;                                                                                  \
      case FastFormat::none: break;                                                             \
    }                                                                                           \
  }

AMPBENCH_ENCODE_FAST(encode_fast_baseline, )
AMPBENCH_ENCODE_FAST(encode_fast_avx2, __attribute__((target("avx2,bmi2,fma"))))
AMPBENCH_ENCODE_FAST(encode_fast_avx512,
                     __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,bmi2,fma"))))
#undef AMPBENCH_ENCODE_FAST

void encode_fast(FastFormat id, const RoundingOptions& o, const float* in, void* out,
                 std::size_t n, std::uint64_t first_index) {
  const bool stochastic = o.mode == Rounding::stochastic_proportional;
  const bool saturate = o.format.overflow == Overflow::saturate;
  switch (cpu_isa()) {
    case Isa::avx512:
      encode_fast_avx512(id, stochastic, saturate, in, out, n, o.seed, first_index);
      break;
    case Isa::avx2: encode_fast_avx2(id, stochastic, saturate, in, out, n, o.seed, first_index); break;
    case Isa::baseline:
      encode_fast_baseline(id, stochastic, saturate, in, out, n, o.seed, first_index);
      break;
  }
}

__attribute__((target("avx2,f16c"))) void encode_fp16_f16c(const float* in, std::uint16_t* out,
                                                           std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = _cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT);
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
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

template <typename Bits>
void decode_any(const Format& f, const Bits* in, float* out, std::size_t n) {
  if (same_values(f, formats::bf16)) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bits(std::uint32_t{in[i]} << 16);
  } else if (same_values(f, formats::tf32)) {
    for (std::size_t i = 0; i < n; ++i) out[i] = float_of_bits(std::uint32_t{in[i]} << 13);
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
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
  }();
  return has;
}

const char* rounding_path(const RoundingOptions& options) {
  if (uses_f16c(options)) return "f16c";
  if (fast_format(options) == FastFormat::none) return "scalar";
  switch (cpu_isa()) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
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
        if (uses_f16c(o)) {
          encode_fp16_f16c(src, buffer16, n);
          decode_fp16_f16c(buffer16, dst, n);
        } else {
          encode_fast(id, o, src, buffer16, n, first_index + start);
          cpu_has_f16c() ? decode_fp16_f16c(buffer16, dst, n)
                         : decode_any(o.format, buffer16, dst, n);
        }
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

void encode_array(const RoundingOptions& o, std::span<const float> in,
                  std::span<std::uint16_t> out, std::uint64_t first_index) {
  encode_array_impl(o, in, out, first_index);
}

void encode_array(const RoundingOptions& o, std::span<const float> in,
                  std::span<std::uint8_t> out, std::uint64_t first_index) {
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
