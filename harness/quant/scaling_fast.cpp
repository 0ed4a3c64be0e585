// The fast path of the MX and NVFP4 quantizers (scaling.hpp, BlockScaled): element codes and block
// scales only, computed in binary32 and 32-bit integer lanes so that the loops vectorise, bit for
// bit the reference quantizers' (scaling.cpp).
//
// Why binary32 gives the reference's results:
// - amax: the largest |x| of binary32 values is the largest of their magnitudes' bit patterns
//   read as unsigned integers (NaN patterns lie above infinity's and are masked where ignored).
// - MX: X = 2^shared with shared in [-127, 125] for binary32 inputs (ilogb(amax) <= 127 and
//   emax_elem >= 2), so 1/X is a binary32 normal and x * (1/X) is exact in binary32 unless it
//   falls below 2^-126; there it rounds, in binary32, to something still below 2^-126, which every
//   MX element format rounds to a signed zero (nearest) or keeps at zero (a stochastic threshold
//   floor(2^32 * |v| / quantum) is 0 for |v| < 2^-126 and quanta >= 2^-17), as the reference's
//   exact binary64 product does.
// - NVFP4: every step of the reference is one binary32 operation rounded once (f32 of an exact
//   binary64 product, or of a binary64 quotient, whose double rounding is innocuous as
//   53 >= 2 * 24 + 2), which binary32 arithmetic computes directly.
// - The element rounding is encode_one of rounding_array.cpp restricted to saturating formats:
//   the magnitude rounded as an integer shifted right, a carry moving up a binade, clamped to the
//   largest finite pattern; stochastic draws from the splitmix64 state advanced per element.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/numeric/clones.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;

constexpr std::uint32_t kInfBits = 0x7F800000u;
constexpr std::uint64_t kGolden = numeric::kSplitmixGamma;

// A binary32 value (bits) to the saturating encoding of F (round_to with Overflow::saturate):
// infinities give the largest finite magnitude; a NaN gives F's NaN rule only for formats without
// NaN (+max finite); callers never pass NaN for the others.
template <const Format& F, bool Stochastic>
[[gnu::always_inline]] inline std::uint32_t encode_sat(std::uint32_t u, std::uint32_t random) {
  constexpr int kT = F.fraction_bits();
  constexpr int kDrop = 23 - kT;
  constexpr auto kMax = static_cast<std::uint32_t>(numeric::detail::max_finite_bits(F));
  constexpr auto kMinNormal = static_cast<std::uint32_t>(F.emin + 127) << 23;
  constexpr auto kRebias = static_cast<std::uint32_t>(F.emin + 126) << 23;
  static_assert(kT >= 1 && kT <= 22 && F.emin > -126 && F.subnormals);
  // A binary32 subnormal, read as 2^-127 * 1.f, lies more than 2^32 quanta below F's quantum.
  static_assert(23 - kT + F.emin + 127 >= 24 + 32);

  const std::uint32_t sign = (u >> 31) << (F.total_bits() - 1);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const bool normal = a >= kMinNormal;
  const std::uint32_t v = normal ? a - kRebias : (a & 0x7FFFFFu) | 0x800000u;
  const int s = normal ? kDrop : kDrop + F.emin + 127 - static_cast<int>(a >> 23);
  const int sc = s < 31 ? s : 31;
  std::uint32_t magnitude;
  if constexpr (!Stochastic) {
    const std::uint32_t half_minus_one = (1u << (sc - 1)) - 1u;
    magnitude = (v + half_minus_one + ((v >> sc) & 1u)) >> sc;
  } else {
    const int sd = s - 32 < 31 ? s - 32 : 31;
    const std::uint32_t threshold = s < 32 ? v << (32 - sc) : v >> sd;
    magnitude = (v >> sc) + (random < threshold ? 1u : 0u);
  }
  magnitude = magnitude < kMax ? magnitude : kMax;  // infinities included
  if constexpr (!F.has_nan()) {
    if (a > kInfBits) return static_cast<std::uint32_t>(numeric::detail::nan_bits(F, 0));
  }
  return sign | magnitude;
}

// out[j] = the code of x[j] * scale[j], element j using the draw of state + j * kGolden. (A flat
// loop over a row with the scales spread per element: GCC vectorises it on full-width vectors,
// where a loop over blocks with one scale each took 128-bit ones and ran at half the speed.)
template <const Format& F, bool Stochastic>
[[gnu::always_inline]] inline void encode_loop(const float* x, const float* scale,
                                               std::uint8_t* out, std::size_t n,
                                               std::uint64_t state) {
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint32_t random = Stochastic ? numeric::stochastic_draw_from_state(state) : 0u;
    state += kGolden;
    out[j] = static_cast<std::uint8_t>(
        encode_sat<F, Stochastic>(std::bit_cast<std::uint32_t>(x[j] * scale[j]), random));
  }
}

enum class Elem : std::uint8_t { none, e4m3, e5m2, e3m2, e2m3, e2m1 };

Elem elem_of(const Format& f) {
  if (numeric::same_values(f, formats::e4m3)) return Elem::e4m3;
  if (numeric::same_values(f, formats::e5m2)) return Elem::e5m2;
  if (numeric::same_values(f, formats::e3m2)) return Elem::e3m2;
  if (numeric::same_values(f, formats::e2m3)) return Elem::e2m3;
  if (numeric::same_values(f, formats::e2m1)) return Elem::e2m1;
  return Elem::none;
}

template <const Format& F>
[[gnu::always_inline]] inline void encode_modes(bool stochastic, const float* x, const float* scale,
                                                std::uint8_t* out, std::size_t n,
                                                std::uint64_t state) {
  stochastic ? encode_loop<F, true>(x, scale, out, n, state)
             : encode_loop<F, false>(x, scale, out, n, state);
}

AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void encode_row(Elem id, bool stochastic, const float* x, const float* scale, std::uint8_t* out,
                std::size_t n, std::uint64_t state) {
  switch (id) {
    case Elem::e4m3: encode_modes<formats::e4m3>(stochastic, x, scale, out, n, state); break;
    case Elem::e5m2: encode_modes<formats::e5m2>(stochastic, x, scale, out, n, state); break;
    case Elem::e3m2: encode_modes<formats::e3m2>(stochastic, x, scale, out, n, state); break;
    case Elem::e2m3: encode_modes<formats::e2m3>(stochastic, x, scale, out, n, state); break;
    case Elem::e2m1: encode_modes<formats::e2m1>(stochastic, x, scale, out, n, state); break;
    case Elem::none: break;
  }
}

// |x|'s bit pattern, 0 for a NaN; a mask rather than a select, which GCC 12 would turn into a
// conditional reduction that it does not vectorise.
[[gnu::always_inline]] inline std::uint32_t magnitude_or_zero(float x) {
  const std::uint32_t a = std::bit_cast<std::uint32_t>(x) & 0x7FFFFFFFu;
  return a & (0u - static_cast<std::uint32_t>(a <= kInfBits));
}

// tile_max[t] = max(tile_max[t], the largest magnitude pattern of x[t * bc .. t * bc + bc)), NaN
// patterns included (MX: above infinity's, they mark the block) or counted as 0 (NVFP4's amax).
template <std::size_t BC, bool IgnoreNan>
[[gnu::always_inline]] inline void tile_max_loop(const float* x, std::uint32_t* tile_max,
                                                 std::size_t tiles, std::size_t bc) {
  const std::size_t width = BC == 0 ? bc : BC;  // the common block widths known at compile time
  for (std::size_t t = 0; t < tiles; ++t) {
    const float* b = x + t * width;
    std::uint32_t m = tile_max[t];
    for (std::size_t j = 0; j < width; ++j) {
      m = std::max(m, IgnoreNan ? magnitude_or_zero(b[j])
                                : std::bit_cast<std::uint32_t>(b[j]) & 0x7FFFFFFFu);
    }
    tile_max[t] = m;
  }
}

template <bool IgnoreNan>
[[gnu::always_inline]] inline void tile_max_widths(const float* x, std::uint32_t* tile_max,
                                                   std::size_t tiles, std::size_t bc) {
  switch (bc) {
    case 16: return tile_max_loop<16, IgnoreNan>(x, tile_max, tiles, bc);
    case 32: return tile_max_loop<32, IgnoreNan>(x, tile_max, tiles, bc);
    default: return tile_max_loop<0, IgnoreNan>(x, tile_max, tiles, bc);
  }
}

AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void tile_max_row(const float* x, std::uint32_t* tile_max, std::size_t tiles, std::size_t bc,
                  bool ignore_nan) {
  ignore_nan ? tile_max_widths<true>(x, tile_max, tiles, bc)
             : tile_max_widths<false>(x, tile_max, tiles, bc);
}

// scale_row[t * bc + j] = scale[t]. BC is the block width where it is known at compile time (16,
// 32), 0 where it is not: with it a block is one or two vector stores.
template <std::size_t BC>
[[gnu::always_inline]] inline void spread_loop(const float* scale, float* scale_row,
                                               std::size_t tiles, std::size_t bc) {
  const std::size_t width = BC == 0 ? bc : BC;
  for (std::size_t t = 0; t < tiles; ++t) {
    for (std::size_t j = 0; j < width; ++j) scale_row[t * width + j] = scale[t];
  }
}

AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void spread_row(const float* scale, float* scale_row, std::size_t tiles, std::size_t bc) {
  switch (bc) {
    case 16: return spread_loop<16>(scale, scale_row, tiles, bc);
    case 32: return spread_loop<32>(scale, scale_row, tiles, bc);
    default: return spread_loop<0>(scale, scale_row, tiles, bc);
  }
}

// The value of a non-negative finite e4m3 code b (0..0x7E), computed rather than looked up so that
// the scale loop vectorises: binary32 with e4m3's exponent rebiased (120 = 127 - 7) and its three
// fraction bits on top of binary32's; a subnormal b (below 8) as 2^-6 (1 + b / 8) - 2^-6 = b 2^-9,
// exact. The subtraction is done for every b (of +0 for the normal ones) and its operand chosen
// in integers: a floating-point operation under a condition would be control flow to GCC, which
// keeps such a loop scalar.
[[gnu::always_inline]] inline float e4m3_value(std::uint32_t b) {
  const std::uint32_t subnormal = b < 8 ? 1u : 0u;
  const std::uint32_t offset = (0u - subnormal) & 0x3C800000u;  // 2^-6 or +0
  return std::bit_cast<float>((b << 20) + ((120u + subnormal) << 23)) -
         std::bit_cast<float>(offset);
}

// NVFP4 block scales: sb = e4m3_satfinite(amax_b * se6), encode = min(1 / (sb * s_dec), max).
// (A zero sb gives 1 / 0 = infinity, so max, as the reference.)
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void nvfp4_scales(const std::uint32_t* tile_max, std::size_t tiles, float se6, float s_dec,
                  std::uint8_t* scale_bits, float* encode) {
  constexpr float kMax = std::numeric_limits<float>::max();
  for (std::size_t t = 0; t < tiles; ++t) {
    // round_scale gives e4m3 of a non-negative value, 0 for NaN (never: amax ignores NaN; masked
    // in integers for the reason above).
    const std::uint32_t wanted = magnitude_or_zero(std::bit_cast<float>(tile_max[t]) * se6);
    const std::uint32_t sb = encode_sat<formats::e4m3, false>(wanted, 0);
    const float inverse = 1.0f / (e4m3_value(sb) * s_dec);
    scale_bits[t] = static_cast<std::uint8_t>(sb);
    encode[t] = inverse < kMax ? inverse : kMax;
  }
}

// The largest of n patterns.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
std::uint32_t largest(const std::uint32_t* a, std::size_t n) {
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, a[i]);
  return m;
}

// floor(log2) of a nonzero finite binary32 magnitude pattern. (For a subnormal amax, at most -127,
// shared_exp = that - emax_elem is always clamped to -127: the second line cannot change a scale.)
int ilogb_bits(std::uint32_t a) {
  if (a >= 0x800000u) return static_cast<int>(a >> 23) - 127;
  return 31 - std::countl_zero(a) - 149;
}

void start(BlockScaled& out, const Layout& l, const Format& element, ScaleRule rule) {
  Format saturating = element;
  saturating.overflow = numeric::Overflow::saturate;
  out.element = saturating;
  out.rule = rule;
  out.rows = l.rows;
  out.cols = l.cols;
  out.block_rows = l.block_rows;
  out.block_cols = l.block_cols;
  out.bits.resize(l.rows * l.cols);
  out.scale_bits.resize((l.rows / l.block_rows) * (l.cols / l.block_cols));
  out.global_scale = 1;
  out.global_decode = 1;
}

void from_reference(const Quantized& q, BlockScaled& out) {
  for (std::size_t k = 0; k < q.bits.size(); ++k)
    out.bits[k] = static_cast<std::uint8_t>(q.bits[k]);
  for (std::size_t t = 0; t < q.tiles.size(); ++t) {
    out.scale_bits[t] = static_cast<std::uint8_t>(q.tiles[t].scale_bits);
  }
  out.global_scale = static_cast<float>(q.global_scale);
  out.global_decode = static_cast<float>(q.global_decode);
}

// The element pass shared by MX and NVFP4: the band of block_rows rows `band`, tile t of it
// multiplied by encode[t] (spread per element into scale_row, cols long); where nan_tile is given,
// a tile flagged there (a NaN scale) takes the reference's NaN elements.
void encode_band(std::span<const float> x, const Layout& l, Elem id, const Format& element,
                 std::size_t band, const float* encode, const std::uint8_t* nan_tile,
                 float* scale_row, BlockScaled& out) {
  const std::size_t tiles = l.cols / l.block_cols;
  const bool stochastic = l.mode == Rounding::stochastic_proportional;
  spread_row(encode, scale_row, tiles, l.block_cols);
  for (std::size_t r = band * l.block_rows; r < (band + 1) * l.block_rows; ++r) {
    const std::size_t k0 = r * l.cols;
    encode_row(id, stochastic, x.data() + k0, scale_row, out.bits.data() + k0, l.cols,
               l.seed + (k0 + 1) * kGolden);
  }
  if (nan_tile == nullptr) return;
  for (std::size_t t = 0; t < tiles; ++t) {
    if (nan_tile[t] == 0) continue;
    // The reference's elements of a NaN-scale block: round_to of the default quiet NaN.
    const auto nan_code = static_cast<std::uint8_t>(
        numeric::round_to(element, l.mode, std::numeric_limits<double>::quiet_NaN()).bits);
    for (std::size_t r = band * l.block_rows; r < (band + 1) * l.block_rows; ++r) {
      std::fill_n(out.bits.data() + r * l.cols + t * l.block_cols, l.block_cols, nan_code);
    }
  }
}

bool fast_mode(Rounding mode) {
  return mode == Rounding::nearest_even || mode == Rounding::stochastic_proportional;
}

}  // namespace

void quantize_mx_fast(std::span<const float> x, const Layout& layout, const Format& element,
                      BlockScaled& out) {
  detail::check_layout(x, layout);
  start(out, layout, element, ScaleRule::mx_e8m0);
  const Elem id = elem_of(element);
  if (id == Elem::none || !fast_mode(layout.mode)) {
    return from_reference(quantize_mx(x, layout, element), out);
  }
  // One pass, band by band: a band's tile maxima, its scales, then its elements from the cache.
  const std::size_t tiles = layout.cols / layout.block_cols;
  std::vector<std::uint32_t> tile_max(tiles);
  std::vector<float> encode(tiles);
  std::vector<std::uint8_t> nan_tile(tiles);
  std::vector<float> scale_row(layout.cols);
  for (std::size_t band = 0; band < layout.rows / layout.block_rows; ++band) {
    std::fill(tile_max.begin(), tile_max.end(), 0u);
    for (std::size_t r = band * layout.block_rows; r < (band + 1) * layout.block_rows; ++r) {
      tile_max_row(x.data() + r * layout.cols, tile_max.data(), tiles, layout.block_cols, false);
    }
    std::uint8_t* scale_bits = out.scale_bits.data() + band * tiles;
    for (std::size_t t = 0; t < tiles; ++t) {
      const std::uint32_t m = tile_max[t];
      nan_tile[t] = m >= kInfBits ? 1 : 0;
      if (m >= kInfBits) {
        scale_bits[t] = 0xFF;
        encode[t] = 1;  // overwritten by the reference's NaN elements
        continue;
      }
      int shared = m == 0 ? -127 : ilogb_bits(m) - out.element.emax;
      shared = std::clamp(shared, -127, 127);
      scale_bits[t] = static_cast<std::uint8_t>(shared + 127);
      encode[t] = std::bit_cast<float>(static_cast<std::uint32_t>(127 - shared) << 23);
    }
    encode_band(x, layout, id, out.element, band, encode.data(), nan_tile.data(), scale_row.data(),
                out);
  }
}

void quantize_nvfp4_fast(std::span<const float> x, const Layout& layout, BlockScaled& out) {
  detail::check_layout(x, layout);
  start(out, layout, formats::e2m1, ScaleRule::nvfp4);
  if (!fast_mode(layout.mode)) return from_reference(quantize_nvfp4(x, layout), out);
  // Two passes. The first takes every tile's amax (NaN ignored) and from them the tensor's, which
  // fixes every block scale; the second encodes the elements.
  constexpr float kMax = std::numeric_limits<float>::max();
  const std::size_t tiles = layout.cols / layout.block_cols;
  const std::size_t bands = layout.rows / layout.block_rows;
  std::vector<std::uint32_t> tile_max(bands * tiles);
  for (std::size_t band = 0; band < bands; ++band) {
    for (std::size_t r = band * layout.block_rows; r < (band + 1) * layout.block_rows; ++r) {
      tile_max_row(x.data() + r * layout.cols, tile_max.data() + band * tiles, tiles,
                   layout.block_cols, true);
    }
  }
  const float tensor_amax = std::bit_cast<float>(largest(tile_max.data(), tile_max.size()));
  const float quotient = 2688.0f / tensor_amax;
  float s_enc = quotient < kMax ? quotient : kMax;
  if (tensor_amax == 0 || s_enc == 0) s_enc = 1;
  const float s_dec = 1.0f / s_enc;
  const float se6 = s_enc * (1.0f / 6.0f);
  out.global_scale = s_enc;
  out.global_decode = s_dec;

  std::vector<float> encode(bands * tiles);
  nvfp4_scales(tile_max.data(), tile_max.size(), se6, s_dec, out.scale_bits.data(), encode.data());
  std::vector<float> scale_row(layout.cols);
  for (std::size_t band = 0; band < bands; ++band) {
    encode_band(x, layout, Elem::e2m1, out.element, band, encode.data() + band * tiles, nullptr,
                scale_row.data(), out);
  }
}

BlockScaled quantize_mx_fast(std::span<const float> x, const Layout& layout,
                             const Format& element) {
  BlockScaled out;
  quantize_mx_fast(x, layout, element, out);
  return out;
}

BlockScaled quantize_nvfp4_fast(std::span<const float> x, const Layout& layout) {
  BlockScaled out;
  quantize_nvfp4_fast(x, layout, out);
  return out;
}

namespace detail {

bool encode_saturating(const Format& element, bool stochastic, std::span<const float> x,
                       std::uint8_t* out, std::uint64_t seed, std::uint64_t first_index) {
  const Elem id = elem_of(element);
  if (id == Elem::none) return false;
  // x * 1 in binary32 is x: the row's own values, unscaled.
  static constexpr std::size_t kChunk = 256;
  static const std::vector<float> ones(kChunk, 1.0f);
  for (std::size_t at = 0; at < x.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, x.size() - at);
    encode_row(id, stochastic, x.data() + at, ones.data(), out + at, n,
               seed + (first_index + at + 1) * kGolden);
  }
  return true;
}

}  // namespace detail
}  // namespace ampbench::quant
