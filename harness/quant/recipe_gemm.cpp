// A recipe's GEMM: operands quantized per role, element codes multiplied on a Tensor Core model in
// chunks along K, the chunks scaled and added in binary32 (recipe_gemm.hpp).
#include "harness/quant/recipe_gemm.hpp"

#include <fmt/format.h>
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness/numeric/clones.hpp"
#include "harness/numeric/mma_block_scale.hpp"
#include "harness/numeric/rounding_array.hpp"
#include "harness/quant/hadamard.hpp"

namespace ampbench::quant {

std::pair<Role, Role> gemm_roles(Gemm g) {
  switch (g) {
    case Gemm::fprop: return {Role::x, Role::w};
    case Gemm::dgrad: return {Role::dy, Role::w};
    case Gemm::wgrad: return {Role::dy, Role::x};
  }
  return {Role::x, Role::w};
}

Layout operand_layout(const OperandRecipe& o, std::size_t rows, std::size_t cols,
                      std::uint64_t seed) {
  Layout layout;
  layout.rows = rows;
  layout.cols = cols;
  switch (o.granularity) {
    case Granularity::tensor:
      layout.block_rows = rows;
      layout.block_cols = cols;
      break;
    case Granularity::tile:
      layout.block_rows = 1;
      layout.block_cols = o.block;
      break;
    case Granularity::block:
      layout.block_rows = o.block;
      layout.block_cols = o.block;
      break;
  }
  layout.mode = o.rounding;
  layout.seed = seed;
  return layout;
}

QuantizedOperand quantize_operand(const Recipe& recipe, Role role, Gemm gemm,
                                  std::span<const float> x, std::size_t rows, std::size_t cols,
                                  std::uint64_t seed, std::optional<float> delayed_scale) {
  const OperandRecipe& o = recipe.operand(role);
  QuantizedOperand out;
  out.role = role;
  out.transformed = applies_hadamard(recipe, role, gemm);
  out.input = out.transformed
                  ? hadamard_transform(x, rows, cols, hadamard_signs(recipe.hadamard_seed))
                  : std::vector<float>(x.begin(), x.end());
  const Layout layout = operand_layout(o, rows, cols, seed);
  switch (scale_rule_of(o.scale)) {
    case ScaleRule::fp32_given:
      if (!delayed_scale) {
        throw std::invalid_argument(fmt::format(
            "{}: the delayed-scaling operand {} needs its scale", recipe.name, role_name(role)));
      }
      out.q = quantize_with_scale(out.input, layout, o.element, *delayed_scale);
      break;
    case ScaleRule::fp32_amax:
      out.q = quantize_current(out.input, layout, o.element, o.scale == ScaleChoice::pow2);
      break;
    case ScaleRule::mx_e8m0:
      out.q = quantize_mx(out.input, layout, o.element,
                          o.scale == ScaleChoice::mx_ceil ? MxScale::round_up : MxScale::ocp);
      break;
    case ScaleRule::nvfp4: out.q = quantize_nvfp4(out.input, layout); break;
  }
  return out;
}

std::size_t instruction_k(const RecipeMma& mma) {
  switch (mma.product) {
    case ScaledProduct::promoted: return 1;
    case ScaledProduct::mxf8f6f4: return 32;
    case ScaledProduct::mxf4:
    case ScaledProduct::mxf4nvf4: return 64;
  }
  return 1;
}

namespace {

// The parameters a mixed-format MMA must share: all but the input format and the names.
bool same_arithmetic(const numeric::MmaModel& a, const numeric::MmaModel& b) {
  return a.instruction_k == b.instruction_k && a.fused_k == b.fused_k &&
         a.fraction_bits == b.fraction_bits && a.output == b.output &&
         a.subnormal_inputs == b.subnormal_inputs && a.subnormal_outputs == b.subnormal_outputs &&
         a.canonical_nan == b.canonical_nan;
}

// fl32(x * y), correctly rounded: the binary64 product rounded to odd (its error, from an FMA,
// sets the last bit when nonzero), then to binary32; rounding to odd in 53 bits and then to
// nearest in 24 is the correct rounding (Boldo and Melquiond, "Emulation of FMA and correctly
// rounded sums: proved algorithms using rounding to odd", IEEE TC 57(4), 2008).
float fl32_product(double x, double y) {
  double p = x * y;
  const double error = std::fma(x, y, -p);
  if (error != 0 && std::isfinite(p)) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &p, sizeof bits);
    if ((bits & 1) == 0) p = std::nextafter(p, error > 0 ? HUGE_VAL : -HUGE_VAL);
  }
  return static_cast<float>(p);
}

// One row of the promotion: acc_j = fmaf(fl32(da * db_j), partial_j, acc_j), the partials being
// binary32 values. Compiled for each x86-64 level (numeric/clones.hpp) so that fma and fmaf are
// instructions, not calls into libm.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void promote_row(float* acc, const double* partial, const double* b_decode, double da,
                 std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    acc[j] = std::fmaf(fl32_product(da, b_decode[j]), static_cast<float>(partial[j]), acc[j]);
  }
}

bool block_scaled(const OperandRecipe& o) {
  return mx_scale(o.scale) || o.scale == ScaleChoice::nvfp4;
}

bool fp8(const numeric::Format& f) {
  return numeric::same_format(f, numeric::formats::e4m3) ||
         numeric::same_format(f, numeric::formats::e5m2);
}

// Blackwell's block-scaled instructions (numeric/mma_block_scale.hpp) for two block-scaled
// operands.
MmaChoice blackwell_block_scaled(const Recipe& recipe, const OperandRecipe& a,
                                 const OperandRecipe& b) {
  const auto refuse = [&](const std::string& why) {
    return MmaChoice{std::nullopt,
                     fmt::format("{}: {}; --arch exact multiplies exactly, --arch hopper applies "
                                 "FP8 elements' scales in fp32 after each block",
                                 recipe.name, why)};
  };
  if (scale_format_of(a.scale) != scale_format_of(b.scale) || a.block != b.block ||
      !block_scaled(a) || !block_scaled(b)) {
    return refuse(
        "Blackwell's block-scaled MMAs take two operands scaled alike (MX or NVFP4, the "
        "same block)");
  }
  const numeric::MmaModel output = *numeric::mma_model("blackwell", numeric::formats::e4m3);
  const bool e2m1 = numeric::same_format(a.element, numeric::formats::e2m1) &&
                    numeric::same_format(b.element, numeric::formats::e2m1);
  if (mx_scale(a.scale) && a.block == 32 && fp8(a.element) && fp8(b.element)) {
    RecipeMma mma{*numeric::mma_model("blackwell", a.element), a.element, b.element,
                  fmt::format("blackwell kind::mxf8f6f4 ({} x {})", a.element.name, b.element.name),
                  ScaledProduct::mxf8f6f4};
    return {std::move(mma), {}};
  }
  if (mx_scale(a.scale) && a.block == 32 && e2m1) {
    return {RecipeMma{output, a.element, b.element, "blackwell kind::mxf4 (e2m1, ue8m0 per 32)",
                      ScaledProduct::mxf4},
            {}};
  }
  if (a.scale == ScaleChoice::nvfp4 && a.block == 16 && e2m1) {
    return {RecipeMma{output, a.element, b.element, "blackwell kind::mxf4nvf4 (e2m1, ue4m3 per 16)",
                      ScaledProduct::mxf4nvf4},
            {}};
  }
  return refuse(fmt::format(
      "no block-scaled Blackwell MMA is modelled for {} x {} elements in blocks of {} (modelled: "
      "kind::mxf8f6f4 with e4m3/e5m2 per 32, kind::mxf4 with e2m1 per 32, kind::mxf4nvf4 with "
      "e2m1 and UE4M3 per 16; MMA-Sim leaves FP6 unmodelled)",
      a.element.name, b.element.name, a.block));
}

// The group sums of kind::mxf4* for one row of A against every row of B: sums[g * n + j] is the sum
// of the 16 products of group g of row a with row j of B, B given transposed (bt, k x n). The
// products and sums of e2m1 values are exact in binary32 (multiples of 1/4 below 2^10), so the
// order, and the FMAs a compiler may contract them into, do not matter. Compiled for each x86-64
// level (numeric/clones.hpp): the columns go through the vector lanes.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void mxf4_group_sums(const float* a, const float* bt, std::size_t n, std::size_t k, float* sums) {
  const std::size_t group = numeric::kMxf4Group;
  for (std::size_t g = 0; g < k / group; ++g) {
    float* out = sums + g * n;
    std::fill_n(out, n, 0.0f);
    for (std::size_t l = g * group; l < (g + 1) * group; ++l) {
      const float x = a[l];
      const float* row = bt + l * n;
      for (std::size_t j = 0; j < n; ++j) out[j] += x * row[j];
    }
  }
}

// One kind::mxf4* instruction (k = 64: four groups of 16) for a row of A against the outputs
// [0, n), in lanes over the outputs:
// mma_mxf4_step_of_sums (numeric/mma_block_scale.hpp) with its integer alignment written as the
// truncation of exact binary64 products. acc[j] (a binary32 value) becomes the instruction's
// result; group g of the instruction has the sums sums[g * stride + j], A's scale (a_sig[g],
// a_exp[g]) and output j's (b_sig[g * stride + j], b_exp[g * stride + j]). Where the result
// would not be a binary32 normal or infinity (the subnormal range, where the model may flush),
// special[j] is set and acc[j] is left to the caller's scalar path; an infinite acc[j] stays.
// With F = 35 every term is below 2^48: an exact binary64 integer before the truncation.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void mxf4_instruction_lanes(const float* sums, std::size_t stride, const double* a_sig,
                            const std::int32_t* a_exp, const double* b_sig,
                            const std::int32_t* b_exp, int fraction_bits, double* acc,
                            std::uint8_t* special, std::size_t n) {
  // Integer selects and sign bits rather than floating-point comparisons, so that the loop has
  // no control flow and vectorises.
  const auto pow2 = [](std::int64_t e) {  // 2^e for -1022 <= e <= 1023
    return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
  };
  constexpr std::uint64_t kMagnitude = ~(std::uint64_t{1} << 63);
  constexpr std::uint64_t kInfinity = 0x7FF0000000000000ull;
  constexpr int kGroups = 4;
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint64_t c_bits = std::bit_cast<std::uint64_t>(acc[j]);
    const bool infinite_c = (c_bits & kMagnitude) == kInfinity;
    // c's exponent as an fp32 term: floor(log2 |c|), -126 for zeros and subnormals.
    std::int64_t emax = static_cast<std::int64_t>((c_bits >> 52) & 0x7FF) - 1023;
    emax = emax < -126 ? -126 : emax;
    double value[kGroups];
    std::int64_t exponent[kGroups];
#pragma GCC unroll 4
    for (int g = 0; g < kGroups; ++g) {
      const std::size_t at = static_cast<std::size_t>(g) * stride + j;
      value[g] = static_cast<double>(sums[at]) * a_sig[g] * b_sig[at];
      exponent[g] = a_exp[g] + b_exp[at];
      emax = exponent[g] > emax ? exponent[g] : emax;
    }
    // c's term: trunc(|c| 2^(F - emax)) (mma_align); an infinite c counts as 0 and is kept below.
    const std::int64_t c_shift = fraction_bits - emax;
    const double c_magnitude = std::bit_cast<double>(infinite_c ? 0 : c_bits & kMagnitude);
    const auto c_int =
        static_cast<std::int64_t>(c_magnitude * pow2(c_shift < -1000 ? -1000 : c_shift));
    std::int64_t total = (c_bits >> 63) != 0 ? -c_int : c_int;
#pragma GCC unroll 4
    for (int g = 0; g < kGroups; ++g) {
      // ldexp_exact's rule: below 2^-88 a term is 0, as its truncation is.
      const std::uint64_t v_bits = std::bit_cast<std::uint64_t>(value[g]);
      const std::int64_t shift = fraction_bits + exponent[g] - emax;
      const double term =
          std::bit_cast<double>(v_bits & kMagnitude) * pow2(shift < -100 ? -1000 : shift);
      std::int64_t t = static_cast<std::int64_t>(term);
      t = shift < -100 ? 0 : t;
      total += (v_bits >> 63) != 0 ? -t : t;
    }
    // The output: |total| 2^(emax - F) truncated to 24 bits, exact in binary64 (|total| < 2^48).
    const double d = static_cast<double>(total) * pow2(emax - fraction_bits);
    const std::uint64_t d_bits = std::bit_cast<std::uint64_t>(d);
    const std::int64_t e = static_cast<std::int64_t>((d_bits >> 52) & 0x7FF) - 1023;
    std::uint64_t r = d_bits & ~((std::uint64_t{1} << 29) - 1);
    r = e > 127 ? (d_bits & ~kMagnitude) | kInfinity : r;
    r = total == 0 ? 0 : r;
    r = infinite_c ? c_bits : r;
    const bool subnormal = (total != 0) & (e < -126) & !infinite_c;
    special[j] = static_cast<std::uint8_t>(special[j] | static_cast<std::uint8_t>(subnormal));
    acc[j] = std::bit_cast<double>(r);
  }
}

// GCC 12 before 12.3 warns about the undefined pass-through operand inside many AVX-512
// intrinsics (GCC bug 105593), as in rounding_array.cpp.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define AMPBENCH_RECIPE_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

// 2^e in binary64 lanes, e clamped to >= -1000 (terms that small truncate to 0 anyway).
[[gnu::always_inline]] AMPBENCH_RECIPE_AVX512 inline __m512d avx512_pow2(__m512i e) {
  e = _mm512_max_epi64(e, _mm512_set1_epi64(-1000));
  return _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e, _mm512_set1_epi64(1023)), 52));
}
// The unbiased exponent field of binary64 bits.
[[gnu::always_inline]] AMPBENCH_RECIPE_AVX512 inline __m512i avx512_exponent(__m512i bits) {
  return _mm512_sub_epi64(_mm512_and_si512(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(0x7FF)),
                          _mm512_set1_epi64(1023));
}

// mxf4_instruction_lanes in AVX-512, eight outputs per vector: the same binary64 operations (the
// truncations as roundings toward zero, the integer sums in binary64, exact below 2^53), the
// bits selected by masks; the last n % 8 outputs through mxf4_instruction_lanes.
AMPBENCH_RECIPE_AVX512 void mxf4_instruction_avx512(const float* sums, std::size_t stride,
                                                    const double* a_sig, const std::int32_t* a_exp,
                                                    const double* b_sig, const std::int32_t* b_exp,
                                                    int fraction_bits, double* acc,
                                                    std::uint8_t* special, std::size_t n) {
  constexpr int kGroups = 4;
  const __m512i magnitude_mask = _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll);
  const __m512i sign_mask = _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull));
  const __m512i infinity = _mm512_set1_epi64(0x7FF0000000000000ll);
  const __m512i f = _mm512_set1_epi64(fraction_bits);
  const __m512i kept = _mm512_set1_epi64(static_cast<long long>(~((1ull << 29) - 1)));
  constexpr int kToZero = _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC;
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m512i c_bits = _mm512_castpd_si512(_mm512_loadu_pd(acc + j));
    const __m512i c_magnitude_bits = _mm512_and_si512(c_bits, magnitude_mask);
    const __mmask8 infinite_c = _mm512_cmpeq_epi64_mask(c_magnitude_bits, infinity);
    __m512i emax = _mm512_max_epi64(avx512_exponent(c_bits), _mm512_set1_epi64(-126));
    __m512d value[kGroups];
    __m512i exponent[kGroups];
    for (int g = 0; g < kGroups; ++g) {
      const std::size_t at = static_cast<std::size_t>(g) * stride + j;
      const __m512d sum = _mm512_cvtps_pd(_mm256_loadu_ps(sums + at));
      value[g] =
          _mm512_mul_pd(_mm512_mul_pd(sum, _mm512_set1_pd(a_sig[g])), _mm512_loadu_pd(b_sig + at));
      exponent[g] = _mm512_add_epi64(
          _mm512_cvtepi32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_exp + at))),
          _mm512_set1_epi64(a_exp[g]));
      emax = _mm512_max_epi64(emax, exponent[g]);
    }
    // c's term (an infinite c counts as 0), then each group's, with their signs.
    const __m512d c_magnitude = _mm512_castsi512_pd(
        _mm512_mask_blend_epi64(infinite_c, c_magnitude_bits, _mm512_setzero_si512()));
    const __m512d c_int = _mm512_roundscale_pd(
        _mm512_mul_pd(c_magnitude, avx512_pow2(_mm512_sub_epi64(f, emax))), kToZero);
    __m512d total = _mm512_castsi512_pd(
        _mm512_xor_si512(_mm512_castpd_si512(c_int), _mm512_and_si512(c_bits, sign_mask)));
    for (int g = 0; g < kGroups; ++g) {
      const __m512i v_bits = _mm512_castpd_si512(value[g]);
      const __m512i shift = _mm512_sub_epi64(_mm512_add_epi64(f, exponent[g]), emax);
      const __mmask8 kept_term = _mm512_cmpge_epi64_mask(shift, _mm512_set1_epi64(-100));
      const __m512d t = _mm512_maskz_roundscale_pd(
          kept_term,
          _mm512_mul_pd(_mm512_castsi512_pd(_mm512_and_si512(v_bits, magnitude_mask)),
                        avx512_pow2(shift)),
          kToZero);
      total =
          _mm512_add_pd(total, _mm512_castsi512_pd(_mm512_xor_si512(
                                   _mm512_castpd_si512(t), _mm512_and_si512(v_bits, sign_mask))));
    }
    // The output: total 2^(emax - F) truncated to 24 bits; past 2^128 an infinity.
    const __m512d d = _mm512_mul_pd(total, avx512_pow2(_mm512_sub_epi64(emax, f)));
    const __m512i d_bits = _mm512_castpd_si512(d);
    const __m512i e = avx512_exponent(d_bits);
    __m512i r = _mm512_and_si512(d_bits, kept);
    r = _mm512_mask_blend_epi64(_mm512_cmpgt_epi64_mask(e, _mm512_set1_epi64(127)), r,
                                _mm512_or_si512(_mm512_and_si512(d_bits, sign_mask), infinity));
    const __mmask8 zero = _mm512_cmp_pd_mask(total, _mm512_setzero_pd(), _CMP_EQ_OQ);
    r = _mm512_mask_blend_epi64(zero, r, _mm512_setzero_si512());
    r = _mm512_mask_blend_epi64(infinite_c, r, c_bits);
    const __mmask8 subnormal = static_cast<__mmask8>(
        _mm512_cmplt_epi64_mask(e, _mm512_set1_epi64(-126)) & ~zero & ~infinite_c);
    for (int l = 0; l < 8; ++l) {
      if ((subnormal >> l) & 1) special[j + static_cast<std::size_t>(l)] = 1;
    }
    _mm512_storeu_pd(acc + j, _mm512_castsi512_pd(r));
  }
  if (j < n) {
    mxf4_instruction_lanes(sums + j, stride, a_sig, a_exp, b_sig + j, b_exp + j, fraction_bits,
                           acc + j, special + j, n - j);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The block-scaled product of recipe_product (see recipe_gemm.hpp).
std::vector<double> block_scaled_product(const Quantized& a, const Quantized& b,
                                         const RecipeMma& mma, std::size_t promote_interval) {
  const std::size_t m = a.rows, n = b.rows, k = a.cols;
  const std::size_t instruction = instruction_k(mma);
  if (k % instruction != 0) {
    throw std::invalid_argument(
        fmt::format("recipe GEMM: {} takes K in steps of {}: K = {} is not a multiple", mma.name,
                    instruction, k));
  }
  const std::size_t block = a.block_cols;
  const numeric::ScaleEncoding encoding = mma.product == ScaledProduct::mxf4nvf4
                                              ? numeric::ScaleEncoding::ue4m3
                                              : numeric::ScaleEncoding::ue8m0;
  const float alpha = mma.product == ScaledProduct::mxf4nvf4
                          ? fl32_product(a.global_decode, b.global_decode)
                          : 1.0f;
  // Every row's decoded block scales, block by block along K (a 2-D tile's scale in each of its
  // rows).
  const std::size_t blocks = k / block;
  const auto decoded = [&](const Quantized& q) {
    std::vector<numeric::BlockScale> scales(q.rows * blocks);
    const std::size_t tiles_per_row = k / q.block_cols;
    for (std::size_t row = 0; row < q.rows; ++row) {
      for (std::size_t s = 0; s < blocks; ++s) {
        const Tile& t = q.tiles[(row / q.block_rows) * tiles_per_row + s * block / q.block_cols];
        scales[row * blocks + s] =
            numeric::decode_block_scale(encoding, static_cast<std::uint8_t>(t.scale_bits));
      }
    }
    return scales;
  };
  const std::vector<numeric::BlockScale> a_scales = decoded(a), b_scales = decoded(b);
  // kind::mxf4*: B's e2m1 values transposed in binary32, for the group sums.
  const bool fp4 = mma.product != ScaledProduct::mxf8f6f4;
  std::vector<float> bt(fp4 ? k * n : 0);
  if (fp4) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t l = 0; l < k; ++l) bt[l * n + j] = static_cast<float>(b.values[j * k + l]);
    }
  }
  const std::size_t groups = k / numeric::kMxf4Group;
  const std::size_t per_instruction = instruction / numeric::kMxf4Group;
  // kind::mxf4* in lanes over the outputs where the model's output stage is the one the lanes
  // write (fp32 truncation, F = 35); B's scales per group of 16, group by group (k / 16 x n).
  const bool lanes = fp4 && instruction == 64 &&
                     numeric::mxf4_model(mma.model).output == numeric::MmaOutput::fp32_truncate &&
                     numeric::mxf4_model(mma.model).fraction_bits == 35;
  const bool avx512 = numeric::cpu_has_avx512();
  std::vector<double> b_sig(lanes ? groups * n : 0);
  std::vector<std::int32_t> b_exp(lanes ? groups * n : 0);
  std::vector<std::uint8_t> b_nan(lanes ? n : 0);
  if (lanes) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t g = 0; g < groups; ++g) {
        const numeric::BlockScale& x = b_scales[j * blocks + g * numeric::kMxf4Group / block];
        b_sig[g * n + j] = x.significand;
        b_exp[g * n + j] = x.exponent;
        b_nan[j] = static_cast<std::uint8_t>(b_nan[j] | (x.nan ? 1 : 0));
      }
    }
  }
  std::vector<double> c(m * n);
  const auto rows = [&](std::size_t first, std::size_t end) {
    std::vector<float> a_row(fp4 ? k : 0);
    std::vector<float> sums(fp4 ? groups * n : 0);
    std::vector<double> acc(lanes ? n : 0);
    std::vector<float> totals(lanes ? n : 0);
    std::vector<std::uint8_t> special(lanes ? n : 0);
    std::array<double, 4> group_sum{}, a_sig{};
    std::array<std::int32_t, 4> a_exp{};
    // Output (i, j) instruction by instruction, as the model defines it.
    const auto output = [&](std::size_t i, std::size_t j) {
      const double* ar = a.values.data() + i * k;
      const double* br = b.values.data() + j * k;
      const numeric::BlockScale* sa = a_scales.data() + i * blocks;
      const numeric::BlockScale* sb = b_scales.data() + j * blocks;
      float total = 0.0f;
      double r = 0.0;
      for (std::size_t k0 = 0; k0 < k; k0 += instruction) {
        if (!std::isinf(r)) {
          const std::size_t s0 = k0 / block;
          if (fp4) {
            const std::size_t g0 = k0 / numeric::kMxf4Group;
            for (std::size_t g = 0; g < per_instruction; ++g) {
              group_sum[g] = sums[(g0 + g) * n + j];
            }
            r = numeric::mma_mxf4_step_of_sums(mma.model, r, group_sum.data(),
                                               static_cast<int>(instruction), sa + s0, sb + s0,
                                               static_cast<int>(block));
          } else {
            r = numeric::mma_mxf8f6f4_step(mma.model, mma.a_format, mma.b_format, r, ar + k0,
                                           br + k0, static_cast<int>(instruction), sa[s0], sb[s0]);
          }
        }
        const std::size_t done = k0 + instruction;
        if (promote_interval != 0 && done % promote_interval == 0 && done < k) {
          total += static_cast<float>(r);  // binary32 addition, rounded once
          r = 0.0;
        }
      }
      total += static_cast<float>(r);
      c[i * n + j] = alpha == 1.0f ? total : alpha * total;
    };
    for (std::size_t i = first; i < end; ++i) {
      if (fp4) {
        std::copy_n(a.values.data() + i * k, k, a_row.begin());
        mxf4_group_sums(a_row.data(), bt.data(), n, k, sums.data());
      }
      if (!lanes) {
        for (std::size_t j = 0; j < n; ++j) output(i, j);
        continue;
      }
      const numeric::BlockScale* sa = a_scales.data() + i * blocks;
      bool a_nan = false;
      for (std::size_t s = 0; s < blocks; ++s) a_nan = a_nan || sa[s].nan;
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(totals.begin(), totals.end(), 0.0f);
      for (std::size_t j = 0; j < n; ++j) special[j] = a_nan || b_nan[j] ? 1 : 0;
      for (std::size_t k0 = 0; k0 < k; k0 += instruction) {
        const std::size_t g0 = k0 / numeric::kMxf4Group;
        for (std::size_t g = 0; g < per_instruction; ++g) {
          const numeric::BlockScale& x = sa[(g0 + g) * numeric::kMxf4Group / block];
          a_sig[g] = x.significand;
          a_exp[g] = x.exponent;
        }
        (avx512 ? mxf4_instruction_avx512 : mxf4_instruction_lanes)(
            sums.data() + g0 * n, n, a_sig.data(), a_exp.data(), b_sig.data() + g0 * n,
            b_exp.data() + g0 * n, 35, acc.data(), special.data(), n);
        const std::size_t done = k0 + instruction;
        if (promote_interval != 0 && done % promote_interval == 0 && done < k) {
          for (std::size_t j = 0; j < n; ++j) {
            totals[j] += static_cast<float>(acc[j]);  // binary32 addition, rounded once
            acc[j] = 0.0;
          }
        }
      }
      for (std::size_t j = 0; j < n; ++j) {
        const float total = totals[j] + static_cast<float>(acc[j]);
        c[i * n + j] = alpha == 1.0f ? total : alpha * total;
      }
      // NaN scales and results in the subnormal range: the whole output as the model defines it.
      for (std::size_t j = 0; j < n; ++j) {
        if (special[j] != 0) output(i, j);
      }
    }
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts = std::min<std::size_t>(cores, std::max<std::size_t>(m, 1));
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < parts; ++t) {
      pool.emplace_back(rows, m * t / parts, m * (t + 1) / parts);
    }
    rows(0, m / parts);
  }
  return c;
}

}  // namespace

MmaChoice recipe_mma(std::string_view arch, const Recipe& recipe, Gemm gemm) {
  const auto [ra, rb] = gemm_roles(gemm);
  const OperandRecipe& a = recipe.operand(ra);
  const OperandRecipe& b = recipe.operand(rb);
  if (arch == "blackwell" && (block_scaled(a) || block_scaled(b)))
    return blackwell_block_scaled(recipe, a, b);
  const auto ma = numeric::mma_model(arch, a.element);
  const auto mb = numeric::mma_model(arch, b.element);
  if (!ma || !mb) {
    const numeric::Format& missing = !ma ? a.element : b.element;
    return {std::nullopt,
            fmt::format("{}: {} has no Tensor Core MMA with {} inputs (e4m3 and e5m2 have one on "
                        "ada, hopper and blackwell; the FP6 and FP4 formats have no model); --arch "
                        "exact multiplies exactly",
                        recipe.name, arch, missing.name)};
  }
  if (!same_arithmetic(*ma, *mb)) {
    return {std::nullopt, fmt::format("{}: {}'s {} and {} MMAs differ in more than their inputs: "
                                      "no mixed-format model",
                                      recipe.name, arch, a.element.name, b.element.name)};
  }
  RecipeMma mma{*ma, a.element, b.element,
                numeric::same_format(a.element, b.element)
                    ? std::string(ma->name)
                    : fmt::format("{} x {}", ma->name, mb->name)};
  return {std::move(mma), {}};
}

std::vector<std::size_t> chunk_ends(const Quantized& a, const Quantized& b,
                                    std::size_t promote_interval) {
  const std::size_t k = a.cols;
  std::vector<std::size_t> ends;
  for (std::size_t at = 1; at <= k; ++at) {
    const bool edge = at == k || at % a.block_cols == 0 || at % b.block_cols == 0 ||
                      (promote_interval != 0 && at % promote_interval == 0);
    if (edge) ends.push_back(at);
  }
  return ends;
}

std::vector<double> recipe_product(const Quantized& a, const Quantized& b, const RecipeMma& mma,
                                   std::size_t promote_interval) {
  if (a.cols != b.cols) {
    throw std::invalid_argument(
        fmt::format("recipe GEMM: A has k = {}, B has k = {}", a.cols, b.cols));
  }
  if (mma.product != ScaledProduct::promoted) {
    return block_scaled_product(a, b, mma, promote_interval);
  }
  const std::size_t m = a.rows, n = b.rows, k = a.cols;
  const std::size_t a_tiles_per_row = k / a.block_cols;
  const std::size_t b_tiles_per_row = k / b.block_cols;
  const std::vector<std::size_t> ends = chunk_ends(a, b, promote_interval);
  const std::size_t chunks = ends.size();
  const auto chunk_start = [&](std::size_t c) { return c == 0 ? 0 : ends[c - 1]; };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Runs work(first, end) over [0, count) on up to all cores, in contiguous blocks.
  const auto on_cores = [&](std::size_t count, const auto& work) {
    const std::size_t blocks = std::min<std::size_t>(cores, std::max<std::size_t>(count, 1));
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < blocks; ++t) {
      pool.emplace_back([&, t] { work(count * t / blocks, count * (t + 1) / blocks); });
    }
    work(0, count / blocks);
  };
  // The chunks in groups of one per core, so that only a group's B operands are held at once.
  // For each group, each chunk's B (its element values as len x n columns, MmaMatrixProduct's B,
  // which it reads from b_chunks, and its tiles' decode scales) on a core of its own; then each
  // core's rows through the group's chunks in turn: the chunk's partial product on the Tensor
  // Core model from an accumulator of zero, then promoted into acc, chunk after chunk.
  std::vector<float> acc(m * n, 0.0f);
  for (std::size_t g0 = 0; g0 < chunks; g0 += cores) {
    const std::size_t group = std::min<std::size_t>(cores, chunks - g0);
    std::vector<std::vector<double>> b_chunks(group);
    std::vector<std::vector<double>> b_decodes(group, std::vector<double>(n));
    std::vector<std::optional<numeric::MmaMatrixProduct>> products(group);
    on_cores(group, [&](std::size_t first, std::size_t end) {
      for (std::size_t g = first; g < end; ++g) {
        const std::size_t k0 = chunk_start(g0 + g), len = ends[g0 + g] - k0;
        std::vector<double>& b_chunk = b_chunks[g];
        b_chunk.resize(len * n);
        for (std::size_t j = 0; j < n; ++j) {
          for (std::size_t l = 0; l < len; ++l) b_chunk[l * n + j] = b.values[j * k + k0 + l];
          b_decodes[g][j] =
              b.tiles[(j / b.block_rows) * b_tiles_per_row + k0 / b.block_cols].decode_scale;
        }
        products[g].emplace(mma.model, mma.a_format, mma.b_format, len, n, b_chunk);
      }
    });
    on_cores(m, [&](std::size_t first, std::size_t end) {
      const std::size_t rows = end - first;
      std::vector<double> a_chunk, partial(rows * n);
      for (std::size_t g = 0; g < group; ++g) {
        const std::size_t k0 = chunk_start(g0 + g), len = ends[g0 + g] - k0;
        a_chunk.resize(rows * len);
        for (std::size_t i = 0; i < rows; ++i) {
          std::copy_n(a.values.begin() + static_cast<std::ptrdiff_t>((first + i) * k + k0), len,
                      a_chunk.begin() + static_cast<std::ptrdiff_t>(i * len));
        }
        products[g]->multiply(a_chunk, {}, partial);
        for (std::size_t i = 0; i < rows; ++i) {
          const double da =
              a.tiles[((first + i) / a.block_rows) * a_tiles_per_row + k0 / a.block_cols]
                  .decode_scale;
          // The partial is a value of the accumulator format (binary32): exact as a float.
          promote_row(acc.data() + (first + i) * n, partial.data() + i * n, b_decodes[g].data(), da,
                      n);
        }
      }
    });
  }
  return {acc.begin(), acc.end()};
}

DefaultArch default_arch(const Recipe& recipe, const std::vector<Gemm>& gemms) {
  // Block-scaled recipes (MX, NVFP4) on Blackwell's block-scaled MMAs where they are modelled.
  const auto block_scaled = [&](Role role) {
    const ScaleChoice s = recipe.operand(role).scale;
    return mx_scale(s) || s == ScaleChoice::nvfp4;
  };
  if (block_scaled(Role::x) || block_scaled(Role::w) || block_scaled(Role::dy)) {
    bool on_blackwell = true;
    for (const Gemm g : gemms)
      on_blackwell = on_blackwell && recipe_mma("blackwell", recipe, g).mma;
    if (on_blackwell) return {"blackwell", {}};
  }
  for (const Gemm g : gemms) {
    if (!recipe_mma("hopper", recipe, g).mma) {
      const auto [ra, rb] = gemm_roles(g);
      const numeric::Format& a = recipe.operand(ra).element;
      const numeric::Format& b = recipe.operand(rb).element;
      const bool a_missing = !numeric::mma_model("hopper", a).has_value();
      return {"exact",
              fmt::format("{}: multiplied exactly (no Tensor Core takes {} operands; --arch "
                          "chooses a model)",
                          recipe.name, (a_missing ? a : b).name)};
    }
  }
  return {"hopper", {}};
}

}  // namespace ampbench::quant
