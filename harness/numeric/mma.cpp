// The Tensor Core MMA presets and their lookup (the arithmetic is inline in mma.hpp).
//
// Sources of the parameters (docs/mma-models.md has the full table and discussion):
//   [MMA-Sim]  microsoft/MMA-Sim commit c785138 (arXiv 2511.10909): mmasim/simulator/nv_ptx.py
//              `arch_accum_fractional_bits` (F per architecture: Volta 23, Turing 24, Ampere 24,
//              Ada Lovelace 24, Hopper 25, Blackwell 25; FP8 on Ada 13 with "f32_e8m13" output;
//              wgmma FP8 13 with "f32_e8m13"), the split-k rule (`is_split_k`: Ampere and Ada,
//              m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 fp8 are two fused steps of k/2), wgmma and
//              tcgen05.mma as one fused step over the instruction's k; mmasim/isa/nv_ptx/*.py for
//              the instruction shapes per architecture; arithmetic.py for the term definition,
//              alignment, truncation, output rounding and NaN canonicalisation.
//   [Fasi21]   Fasi, Higham, Mikaitis, Pranesh, PeerJ CS 7:e330 (2021), and their test code
//              (north-numerical-computing/tensor-cores-numerical-behavior commit 9dae3fc): V100 no
//              extra alignment bit, T4/A100 one; subnormal inputs and outputs supported; fp32
//              result truncated, fp16 output rounded to nearest; 4 products per fused step on V100.
//   [KM25]     Khattak & Mikaitis, arXiv 2512.07004 (2025): products per fused step 4 (V100), 8
//              (A100/Ada fp16, bf16), 4 (tf32), 16 (H100/B200 fp16, bf16); F 23/24/25 = 0/1/2 extra
//              bits; Hopper/Ada FP8 13 bits, e8m13 output.
#include "harness/numeric/mma.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "harness/numeric/clones.hpp"

namespace ampbench::numeric {
namespace {

constexpr MmaModel preset(const char* name, const char* arch, const char* instruction,
                          const Format& input, int instruction_k, int fused_k, int f,
                          MmaOutput output, const char* source) {
  return MmaModel{name, arch,   instruction, input, instruction_k, fused_k,
                  f,    output, true,        true,  true,          source};
}

constexpr auto T = MmaOutput::fp32_truncate;
constexpr auto E = MmaOutput::e8m13_truncate;
constexpr auto H = MmaOutput::fp16_nearest_even;

constexpr const char* kVolta =
    "MMA-Sim nv_ptx.py (F=23, m8n8k4 whole); Fasi21 (V100: 0 extra bits)";
constexpr const char* kTuring = "MMA-Sim nv_ptx.py (F=24, m16n8k8 whole); Fasi21 (T4: 1 extra bit)";
constexpr const char* kAmpere =
    "MMA-Sim nv_ptx.py (F=24, split-k k/2); Fasi21 (A100: 1 extra bit); KM25 (8 / tf32 4)";
constexpr const char* kAda = "MMA-Sim nv_ptx.py (Ada: as Ampere; split-k k/2)";
constexpr const char* kAdaFp8 = "MMA-Sim nv_ptx.py (Ada FP8: F=13, f32_e8m13, k32 split 16+16)";
constexpr const char* kHopper = "MMA-Sim nv_ptx.py wgmma (F=25, whole k); KM25 (H100: 16)";
constexpr const char* kHopperFp8 = "MMA-Sim nv_ptx.py wgmma (FP8: F=13, f32_e8m13, whole k=32)";
constexpr const char* kBlackwell = "MMA-Sim nv_ptx.py tcgen05mma (F=25, whole k); KM25 (B200)";

constexpr std::array kPresets = {
    // Volta sm_70: mma.m8n8k4 (the wmma 16x16x16 is built from it); fp16 inputs only.
    preset("volta-fp16", "volta", "mma.sync.m8n8k4.f32.f16.f16.f32", formats::fp16, 4, 4, 23, T,
           kVolta),
    preset("volta-fp16-acc16", "volta", "mma.sync.m8n8k4.f16.f16.f16.f16", formats::fp16, 4, 4, 23,
           H, kVolta),
    // Turing sm_75: mma.m16n8k8, one fused step; fp16 inputs only.
    preset("turing-fp16", "turing", "mma.sync.m16n8k8.f32.f16.f16.f32", formats::fp16, 8, 8, 24, T,
           kTuring),
    preset("turing-fp16-acc16", "turing", "mma.sync.m16n8k8.f16.f16.f16.f16", formats::fp16, 8, 8,
           24, H, kTuring),
    // Ampere sm_80: m16n8k16 (fp16, bf16) and m16n8k8 (tf32) are two fused steps of k/2.
    preset("ampere-fp16", "ampere", "mma.sync.m16n8k16.f32.f16.f16.f32", formats::fp16, 16, 8, 24,
           T, kAmpere),
    preset("ampere-fp16-acc16", "ampere", "mma.sync.m16n8k16.f16.f16.f16.f16", formats::fp16, 16, 8,
           24, H, kAmpere),
    preset("ampere-bf16", "ampere", "mma.sync.m16n8k16.f32.bf16.bf16.f32", formats::bf16, 16, 8, 24,
           T, kAmpere),
    preset("ampere-tf32", "ampere", "mma.sync.m16n8k8.f32.tf32.tf32.f32", formats::tf32, 8, 4, 24,
           T, kAmpere),
    // Ada sm_89: Ampere's MMAs, plus FP8 m16n8k32 (two fused steps of 16) with F = 13.
    preset("ada-fp16", "ada", "mma.sync.m16n8k16.f32.f16.f16.f32", formats::fp16, 16, 8, 24, T,
           kAda),
    preset("ada-fp16-acc16", "ada", "mma.sync.m16n8k16.f16.f16.f16.f16", formats::fp16, 16, 8, 24,
           H, kAda),
    preset("ada-bf16", "ada", "mma.sync.m16n8k16.f32.bf16.bf16.f32", formats::bf16, 16, 8, 24, T,
           kAda),
    preset("ada-tf32", "ada", "mma.sync.m16n8k8.f32.tf32.tf32.f32", formats::tf32, 8, 4, 24, T,
           kAda),
    preset("ada-e4m3", "ada", "mma.sync.m16n8k32.f32.e4m3.e4m3.f32", formats::e4m3, 32, 16, 13, E,
           kAdaFp8),
    preset("ada-e4m3-acc16", "ada", "mma.sync.m16n8k32.f16.e4m3.e4m3.f16", formats::e4m3, 32, 16,
           13, H, kAdaFp8),
    preset("ada-e5m2", "ada", "mma.sync.m16n8k32.f32.e5m2.e5m2.f32", formats::e5m2, 32, 16, 13, E,
           kAdaFp8),
    preset("ada-e5m2-acc16", "ada", "mma.sync.m16n8k32.f16.e5m2.e5m2.f16", formats::e5m2, 32, 16,
           13, H, kAdaFp8),
    // Hopper sm_90a: wgmma.m64nNk16 (fp16, bf16), k8 (tf32), k32 (fp8), each one fused step.
    preset("hopper-fp16", "hopper", "wgmma.mma_async.m64nNk16.f32.f16.f16", formats::fp16, 16, 16,
           25, T, kHopper),
    preset("hopper-fp16-acc16", "hopper", "wgmma.mma_async.m64nNk16.f16.f16.f16", formats::fp16, 16,
           16, 25, H, kHopper),
    preset("hopper-bf16", "hopper", "wgmma.mma_async.m64nNk16.f32.bf16.bf16", formats::bf16, 16, 16,
           25, T, kHopper),
    preset("hopper-tf32", "hopper", "wgmma.mma_async.m64nNk8.f32.tf32.tf32", formats::tf32, 8, 8,
           25, T, kHopper),
    preset("hopper-e4m3", "hopper", "wgmma.mma_async.m64nNk32.f32.e4m3.e4m3", formats::e4m3, 32, 32,
           13, E, kHopperFp8),
    preset("hopper-e4m3-acc16", "hopper", "wgmma.mma_async.m64nNk32.f16.e4m3.e4m3", formats::e4m3,
           32, 32, 13, H, kHopperFp8),
    preset("hopper-e5m2", "hopper", "wgmma.mma_async.m64nNk32.f32.e5m2.e5m2", formats::e5m2, 32, 32,
           13, E, kHopperFp8),
    preset("hopper-e5m2-acc16", "hopper", "wgmma.mma_async.m64nNk32.f16.e5m2.e5m2", formats::e5m2,
           32, 32, 13, H, kHopperFp8),
    // Blackwell sm_100a: tcgen05.mma kind::f16 (k16), kind::tf32 (k8), kind::f8f6f4 (k32), each one
    // fused step with F = 25 (FP8 included: no e8m13 output).
    preset("blackwell-fp16", "blackwell", "tcgen05.mma.kind::f16 k16 f32", formats::fp16, 16, 16,
           25, T, kBlackwell),
    preset("blackwell-fp16-acc16", "blackwell", "tcgen05.mma.kind::f16 k16 f16", formats::fp16, 16,
           16, 25, H, kBlackwell),
    preset("blackwell-bf16", "blackwell", "tcgen05.mma.kind::f16 k16 f32 (bf16)", formats::bf16, 16,
           16, 25, T, kBlackwell),
    preset("blackwell-tf32", "blackwell", "tcgen05.mma.kind::tf32 k8 f32", formats::tf32, 8, 8, 25,
           T, kBlackwell),
    preset("blackwell-e4m3", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f32 (e4m3)", formats::e4m3,
           32, 32, 25, T, kBlackwell),
    preset("blackwell-e4m3-acc16", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f16 (e4m3)",
           formats::e4m3, 32, 32, 25, H, kBlackwell),
    preset("blackwell-e5m2", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f32 (e5m2)", formats::e5m2,
           32, 32, 25, T, kBlackwell),
    preset("blackwell-e5m2-acc16", "blackwell", "tcgen05.mma.kind::f8f6f4 k32 f16 (e5m2)",
           formats::e5m2, 32, 32, 25, H, kBlackwell),
};

// The batched mma_dot of MmaMatrixProduct. An aligned term of mma_fused_sum is
// trunc(sig * 2^(F + e - emax - frac)), and sig * 2^(e - frac) is the operand's value (a product's
// is the product of the operands' values, c's is c), so a term is trunc(x * 2^(F - emax)) for the
// term's value x. Where the product of two operands and 2^(F - emax) are normal binary64 numbers,
// both exact (at most 2 * 24 significant bits), binary64 gives that term with two exact
// multiplications and a conversion that truncates toward zero; emax still comes from the split
// exponents (a subnormal's is emin, a zero's -126), which are kept as integers. Operands of
// format f lie in [2^(emin_f - frac_f), 2^(emax_f + 1)), so products of A's and B's formats in
// [2^(emin_a - frac_a + emin_b - frac_b), 2^(emax_a + emax_b + 2)), and emax of a step between -126
// (or the accumulator's emin) and emax_a + emax_b (or c's exponent, at most the accumulator's
// emax): true for every preset, and for every mix of e4m3 and e5m2.
bool binary64_terms(const Format& a, const Format& b) {
  return (a.emin - a.fraction_bits()) + (b.emin - b.fraction_bits()) >= -1022 &&
         a.emax + b.emax + 2 < 1000;
}

// Whether binary32 gives the products' terms as well (fused_rows_binary32), twice the lanes per
// vector. A product of an operand of a and one of b has at most a.precision + b.precision
// significant bits and lies in [2^(emin_a - frac_a + emin_b - frac_b), 2^(emax_a + emax_b + 2)):
// with at most 24 bits and that range inside binary32's normal one, the product is an exact
// normal binary32 value, and so is its product with 2^(F - emax) unless that is below 2^-126,
// where it is below 1 and truncates to 0 as the exact term does. 2^(F - emax) itself: emax is at
// most 127 (a product's exponent is below emax_a + emax_b + 2 <= 127, c's at most the
// accumulator's emax, 127), so F - emax >= -126 for F >= 1; where F - emax > 127, emax < F - 127
// <= -98 lies below every nonzero product's exponent, the products are zeros, and any finite
// scale (2^127 is used) gives their terms, 0. A term is below 2^(F + 2) <= 2^31 for F <= 29: a
// 32-bit integer, and 2^(29 - F) of them sum to less than 2^31 (fused_rows_binary32's groups).
bool binary32_terms(const Format& a, const Format& b, int fraction_bits) {
  return a.precision + b.precision <= 24 &&
         (a.emin - a.fraction_bits()) + (b.emin - b.fraction_bits()) >= -98 &&
         a.emax + b.emax + 2 <= 127 && fraction_bits >= 1 && fraction_bits <= 29;
}

// 2^e for the exponents that occur here (normal binary64 numbers), built from the bits so that the
// loops vectorise.
inline double pow2(std::int32_t e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// An operand as mma_fused_sum reads it (after mma_operand): its value after mma_split (the value
// itself for a value of the format) and its split exponent. Returns false, with a zero, for what
// the lanes leave to mma_dot: a NaN, an infinity, or a finite value beyond the format's range.
bool split_value(const Format& f, double x, double& value, std::int32_t& exponent) {
  std::uint64_t sig = 0;
  int e = 0;
  if (std::isfinite(x)) detail::mma_split(f, x, sig, e);
  if (!std::isfinite(x) || e > f.emax) {
    value = 0.0;
    exponent = -126;
    return false;
  }
  exponent = e;
  const double magnitude = static_cast<double>(sig) * pow2(e - f.fraction_bits());
  value = std::signbit(x) ? -magnitude : magnitude;
  return true;
}

// split_value(f, mma_operand(m, f, x[i])) for i < n, written on the binary64 encodings so that the
// loop vectorises: ok[i] = 0 where split_value returns false. A value keeps the bits of x above
// its quantum 2^(e - frac_f) (the significand truncated as mma_split truncates it), or becomes a
// zero of its sign where the quantum exceeds it (shift > 52); zeros keep their sign.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void split_values(const MmaModel& m, const Format& f, const double* __restrict x,
                  double* __restrict value, std::int32_t* __restrict exponent,
                  std::uint8_t* __restrict ok, std::size_t n) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  const std::int64_t emin = f.emin, emax = f.emax, frac = f.fraction_bits();
  const bool flush = !m.subnormal_inputs;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t u = std::bit_cast<std::uint64_t>(x[i]);
    const auto biased = static_cast<std::int64_t>((u & ~kSign) >> 52);
    const bool finite = biased != 0x7FF;
    const std::int64_t ex = biased == 0 ? -1022 : biased - 1023;
    // mma_operand: a nonzero value below 2^emin of f read as a zero when the model flushes.
    if (flush && (u & ~kSign) != 0 && ex < emin) u &= kSign;
    const bool zero = (u & ~kSign) == 0;
    const std::int64_t e = ex < emin ? emin : ex;
    const std::int64_t shift = 52 - frac + (e - ex);
    const std::uint64_t kept =
        shift > 52 ? u & kSign : u & ~((std::uint64_t{1} << (shift & 63)) - 1);
    const bool in_range = finite && (zero || e <= emax);
    value[i] = in_range ? std::bit_cast<double>(zero ? u : kept) : 0.0;
    exponent[i] = in_range && !zero ? static_cast<std::int32_t>(e) : -126;
    ok[i] = in_range;
  }
}

// Runs work(first, end) over [0, count) in contiguous blocks of at least min_per_core (at least
// 1), on up to all cores.
constexpr std::size_t kValuesPerCore = std::size_t{1} << 16;
template <class Work>
void on_cores(std::size_t count, std::size_t min_per_core, const Work& work) {
  const std::size_t cores =
      std::clamp<std::size_t>(std::min<std::size_t>(std::thread::hardware_concurrency(),
                                                    count / std::max<std::size_t>(min_per_core, 1)),
                              1, std::max<std::size_t>(count, 1));
  std::vector<std::jthread> pool;
  for (std::size_t c = 1; c < cores; ++c) {
    pool.emplace_back([&, c] { work(count * c / cores, count * (c + 1) / cores); });
  }
  work(0, count / cores);
}

// Rows of A and columns of B per block of outputs: the block's B values come from L2 once for
// four rows, its lanes stay in L1.
constexpr std::size_t kRows = 4;
constexpr std::size_t kColumns = 128;

// The state of a block of outputs between fused steps, one lane per output (lane r kColumns + j
// for row r and column j of the block), structure of arrays:
// c (its value and split exponent), the step's emax, 2^(F - emax) and exact sum S, and whether the
// output must be computed by mma_dot instead (32 bits like the others, so that the loops
// vectorise). A lane marked for mma_dot carries c = 0 from then on, so that its values stay finite.
struct Lanes {
  static constexpr std::size_t kSize = kRows * kColumns;
  Lanes() : value(kSize), exponent(kSize), emax(kSize), scale(kSize), sum(kSize), scalar(kSize) {}
  std::vector<double> value;
  std::vector<std::int32_t> exponent;
  std::vector<std::int32_t> emax;
  std::vector<double> scale;
  std::vector<std::int64_t> sum;
  std::vector<std::uint32_t> scalar;
};

// The operands of A in a fused step: values and split exponents of a_rl, l < n, r < rows, at
// offsets r * stride + l.
struct RowsStep {
  const double* value;
  const float* value32;  // the same values in binary32, where binary32_terms holds; else null
  const std::int32_t* exponent;
  std::size_t stride;
  std::size_t rows;
  int n;
};

// The fixed parameters of the model's fused step.
struct StepShape {
  int fraction_bits;  // F
  MmaOutput output;
  int acc_emin, acc_emax;  // the accumulator format's normal range
};

// The result of a fused step for w lanes, from emax and the exact sum S: |S| 2^(emax - F) has its
// leading bit at 2^e; truncated (or rounded to nearest even) to the accumulator's significand as
// round_window does in the accumulator's normal range, it becomes the next step's c. A result
// outside that range marks its lane for mma_dot.
template <MmaOutput Output>
[[gnu::always_inline]] inline void normalise_lanes(const StepShape& shape, std::size_t first,
                                                   std::size_t w, Lanes& lanes) {
  double* __restrict c_value = lanes.value.data() + first;
  std::int32_t* __restrict c_exp = lanes.exponent.data() + first;
  const std::int32_t* __restrict emax = lanes.emax.data() + first;
  const std::int64_t* __restrict sum = lanes.sum.data() + first;
  std::uint32_t* __restrict scalar = lanes.scalar.data() + first;
  constexpr int kKept = Output == MmaOutput::e8m13_truncate  ? 13
                        : Output == MmaOutput::fp32_truncate ? 23
                                                             : 10;
  const std::int32_t f = shape.fraction_bits, emin = shape.acc_emin, emax_acc = shape.acc_emax;
  for (std::size_t j = 0; j < w; ++j) {
    const std::int64_t s = sum[j];
    const auto magnitude = static_cast<std::uint64_t>(s < 0 ? -s : s);
    // The bit width, as a count of leading zeros that vectorises (a zero sum is handled apart).
    const auto width = static_cast<std::int32_t>(64 - std::countl_zero(magnitude | 1));
    std::int32_t e = emax[j] - f + width - 1;
    const std::int32_t drop = width - kKept - 1;  // bits below the kept significand
    std::uint64_t sig = drop > 0 ? magnitude >> (drop & 63) : magnitude << (-drop & 63);
    if constexpr (Output == MmaOutput::fp16_nearest_even) {
      // Round half to even on the dropped bits; a carry out moves up a binade.
      const std::uint64_t half = drop > 0 ? std::uint64_t{1} << ((drop - 1) & 63) : 0;
      const std::uint64_t rest = drop > 0 ? magnitude & ((half << 1) - 1) : 0;
      sig += static_cast<std::uint64_t>((rest > half) | ((rest == half) & (half != 0) & (sig & 1)));
      const auto carry = static_cast<std::int32_t>(sig >> (kKept + 1));
      sig >>= carry;
      e += carry;
    }
    const bool out = (e < emin) | (e > emax_acc);
    const bool zero = (magnitude == 0) | out;
    scalar[j] |= (magnitude != 0) & out;
    // MMA-Sim: an exact zero sum is +0, split with exponent -126.
    // sig < 2^25 is converted as a signed integer, selected by a mask, and the sign is set in the
    // bits: written so, the loop vectorises.
    const auto kept = static_cast<std::int64_t>(sig & (std::uint64_t{0} - !zero));
    const std::uint64_t sign = zero ? 0 : static_cast<std::uint64_t>(s) & (std::uint64_t{1} << 63);
    const double value = static_cast<double>(kept) * pow2(zero ? 0 : e - kKept);
    c_value[j] = std::bit_cast<double>(std::bit_cast<std::uint64_t>(value) | sign);
    c_exp[j] = zero ? -126 : e;
  }
}

// Eight lanes of binary64 values, of 64-bit and of 32-bit integers, and sixteen of 32-bit ones:
// GCC's generic vectors, lowered to each clone's registers (one zmm, two ymm or four xmm). No
// function takes or returns one (the calling convention of such a vector depends on the ISA).
using Doubles8 = double __attribute__((vector_size(64)));
using Int64s8 = std::int64_t __attribute__((vector_size(64)));
using Int32s8 = std::int32_t __attribute__((vector_size(32)));
using Int32s16 = std::int32_t __attribute__((vector_size(64)));
using Floats16 = float __attribute__((vector_size(64)));

// Lanes per register block of fused_step_lanes: two Doubles8 of scales and two Int64s8 of sums
// stay in registers while the step's products stream past them (8 zmm, or 16 ymm with AVX2).
constexpr std::size_t kBlockLanes = 16;

// Steps 1-3 of a fused step for the kBlockLanes lanes of row r from lane `first` on, in registers:
// emax over c and the products, 2^(F - emax), and the exact sum of the truncated terms (the same
// integers as the loops of fused_step_lanes, added in another order: exactly).
[[gnu::always_inline]] inline void fused_block(const StepShape& shape, bool narrow_terms,
                                               const RowsStep& a, std::size_t r,
                                               const double* __restrict b_value,
                                               const std::int32_t* __restrict b_exponent,
                                               std::size_t first, Lanes& lanes) {
  const std::size_t lane = r * kColumns + first;
  const double* __restrict xa = a.value + r * a.stride;
  const std::int32_t* __restrict ea = a.exponent + r * a.stride;
  Int32s16 emax, eb;
  __builtin_memcpy(&emax, lanes.exponent.data() + lane, sizeof emax);
  for (int l = 0; l < a.n; ++l) {
    __builtin_memcpy(&eb, b_exponent + static_cast<std::size_t>(l) * kBlockLanes, sizeof eb);
    const Int32s16 e = eb + ea[l];
    emax = emax > e ? emax : e;
  }
  __builtin_memcpy(lanes.emax.data() + lane, &emax, sizeof emax);
  // 2^(F - emax) from its bits, as pow2.
  const Int32s16 shift = shape.fraction_bits - emax;
  const Int32s8 shift0 = __builtin_shufflevector(shift, shift, 0, 1, 2, 3, 4, 5, 6, 7);
  const Int32s8 shift1 = __builtin_shufflevector(shift, shift, 8, 9, 10, 11, 12, 13, 14, 15);
  const Int64s8 bits0 = (__builtin_convertvector(shift0, Int64s8) + 1023) << 52;
  const Int64s8 bits1 = (__builtin_convertvector(shift1, Int64s8) + 1023) << 52;
  Doubles8 scale0, scale1, c0, c1, b0, b1;
  __builtin_memcpy(&scale0, &bits0, sizeof scale0);
  __builtin_memcpy(&scale1, &bits1, sizeof scale1);
  __builtin_memcpy(&c0, lanes.value.data() + lane, sizeof c0);
  __builtin_memcpy(&c1, lanes.value.data() + lane + 8, sizeof c1);
  Int64s8 sum0 = __builtin_convertvector(c0 * scale0, Int64s8);
  Int64s8 sum1 = __builtin_convertvector(c1 * scale1, Int64s8);
  for (int l = 0; l < a.n; ++l) {
    const double* __restrict xb = b_value + static_cast<std::size_t>(l) * kBlockLanes;
    __builtin_memcpy(&b0, xb, sizeof b0);
    __builtin_memcpy(&b1, xb + 8, sizeof b1);
    const double x = xa[l];
    if (narrow_terms) {
      sum0 += __builtin_convertvector(__builtin_convertvector(x * b0 * scale0, Int32s8), Int64s8);
      sum1 += __builtin_convertvector(__builtin_convertvector(x * b1 * scale1, Int32s8), Int64s8);
    } else {
      sum0 += __builtin_convertvector(x * b0 * scale0, Int64s8);
      sum1 += __builtin_convertvector(x * b1 * scale1, Int64s8);
    }
  }
  __builtin_memcpy(lanes.sum.data() + lane, &sum0, sizeof sum0);
  __builtin_memcpy(lanes.sum.data() + lane + 8, &sum1, sizeof sum1);
}

// fused_block for formats where binary32_terms holds, for Rows rows of A at once (each B vector
// loaded once for all of them): the same emax and c's term, then the products' terms from binary32
// values, sixteen lanes per vector, summed in 32-bit integers over groups of 2^(29 - F) products
// (below 2^31) and each group's sums added to the 64-bit ones. The same integers as fused_block,
// added in another order: exactly.
template <std::size_t Rows>
[[gnu::always_inline]] inline void fused_rows_binary32(const StepShape& shape, const RowsStep& a,
                                                       std::size_t r0,
                                                       const float* __restrict b_value,
                                                       const std::int32_t* __restrict b_exponent,
                                                       std::size_t first, Lanes& lanes) {
  const auto lane = [&](std::size_t r) { return (r0 + r) * kColumns + first; };
  const auto row = [&](std::size_t r) { return (r0 + r) * a.stride; };
  Int32s16 emax[Rows], eb;
#pragma GCC unroll 4
  for (std::size_t r = 0; r < Rows; ++r) {
    __builtin_memcpy(&emax[r], lanes.exponent.data() + lane(r), sizeof eb);
  }
  for (int l = 0; l < a.n; ++l) {
    __builtin_memcpy(&eb, b_exponent + static_cast<std::size_t>(l) * kBlockLanes, sizeof eb);
#pragma GCC unroll 4
    for (std::size_t r = 0; r < Rows; ++r) {
      const Int32s16 e = eb + a.exponent[row(r) + static_cast<std::size_t>(l)];
      emax[r] = emax[r] > e ? emax[r] : e;
    }
  }
  Floats16 scale[Rows], b;
#pragma GCC unroll 4
  for (std::size_t r = 0; r < Rows; ++r) {
    __builtin_memcpy(lanes.emax.data() + lane(r), &emax[r], sizeof eb);
    const Int32s16 shift = shape.fraction_bits - emax[r];
    // c's term in binary64, as fused_block, into the lanes' sums.
    const Int32s8 shift0 = __builtin_shufflevector(shift, shift, 0, 1, 2, 3, 4, 5, 6, 7);
    const Int32s8 shift1 = __builtin_shufflevector(shift, shift, 8, 9, 10, 11, 12, 13, 14, 15);
    const Int64s8 bits0 = (__builtin_convertvector(shift0, Int64s8) + 1023) << 52;
    const Int64s8 bits1 = (__builtin_convertvector(shift1, Int64s8) + 1023) << 52;
    Doubles8 scale0, scale1, c0, c1;
    __builtin_memcpy(&scale0, &bits0, sizeof scale0);
    __builtin_memcpy(&scale1, &bits1, sizeof scale1);
    __builtin_memcpy(&c0, lanes.value.data() + lane(r), sizeof c0);
    __builtin_memcpy(&c1, lanes.value.data() + lane(r) + 8, sizeof c1);
    const Int64s8 sum0 = __builtin_convertvector(c0 * scale0, Int64s8);
    const Int64s8 sum1 = __builtin_convertvector(c1 * scale1, Int64s8);
    __builtin_memcpy(lanes.sum.data() + lane(r), &sum0, sizeof sum0);
    __builtin_memcpy(lanes.sum.data() + lane(r) + 8, &sum1, sizeof sum1);
    // The products' scale 2^min(F - emax, 127) in binary32 (see binary32_terms).
    const Int32s16 bits32 = ((shift < 127 ? shift : 127) + 127) << 23;
    __builtin_memcpy(&scale[r], &bits32, sizeof b);
  }
  const int group = 1 << (29 - shape.fraction_bits);
  for (int l0 = 0; l0 < a.n; l0 += group) {
    const int l1 = a.n - l0 < group ? a.n : l0 + group;
    Int32s16 s[Rows] = {};
    for (int l = l0; l < l1; ++l) {
      __builtin_memcpy(&b, b_value + static_cast<std::size_t>(l) * kBlockLanes, sizeof b);
#pragma GCC unroll 4
      for (std::size_t r = 0; r < Rows; ++r) {
        const float xa = a.value32[row(r) + static_cast<std::size_t>(l)];
        s[r] += __builtin_convertvector(xa * b * scale[r], Int32s16);
      }
    }
#pragma GCC unroll 4
    for (std::size_t r = 0; r < Rows; ++r) {
      Int64s8 sum0, sum1;
      __builtin_memcpy(&sum0, lanes.sum.data() + lane(r), sizeof sum0);
      __builtin_memcpy(&sum1, lanes.sum.data() + lane(r) + 8, sizeof sum1);
      sum0 += __builtin_convertvector(__builtin_shufflevector(s[r], s[r], 0, 1, 2, 3, 4, 5, 6, 7),
                                      Int64s8);
      sum1 += __builtin_convertvector(
          __builtin_shufflevector(s[r], s[r], 8, 9, 10, 11, 12, 13, 14, 15), Int64s8);
      __builtin_memcpy(lanes.sum.data() + lane(r), &sum0, sizeof sum0);
      __builtin_memcpy(lanes.sum.data() + lane(r) + 8, &sum1, sizeof sum1);
    }
  }
}

// B's whole blocks of kBlockLanes columns for a fused step, packed so that a block's rows follow
// one another (MmaMatrixProduct's b_packed_*): row l of the block of lanes j..j + kBlockLanes - 1
// at ((j / kBlockLanes) * block_stride + l) * kBlockLanes. value or value32 (binary32_terms) is
// null.
struct PackedStep {
  const double* value;
  const float* value32;
  const std::int32_t* exponent;
  std::size_t block_stride;
};

// Steps 1-4 of one fused step (see mma.hpp) for a.rows x w lanes: the lanes' c and the products
// a_rl b_lj with b_lj = b_value/b_exponent[l * stride + j], then normalise_lanes. The same integer
// terms as mma_fused_sum (see binary64_terms), added in another order (exactly). Whole blocks of
// kBlockLanes lanes run in registers (fused_block, fused_rows_binary32) from `packed`; the lanes
// after the last whole block run through L1, one pass per step of the sum.
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
void fused_step_lanes(const StepShape& shape, const RowsStep& a, const PackedStep& packed,
                      const double* __restrict b_value, const std::int32_t* __restrict b_exponent,
                      std::size_t stride, std::size_t w, Lanes& lanes) {
  // A term is below 2^(F + 2) in magnitude (mma_fused_sum's proof): for F <= 29 it fits a 32-bit
  // integer, and the truncating conversion to 32 bits vectorises on AVX2 (the one to 64 bits needs
  // AVX-512DQ); the sum stays 64-bit.
  const bool narrow_terms = shape.fraction_bits <= 29;
  const std::size_t blocked = w - w % kBlockLanes;
  for (std::size_t j = 0; j < blocked; j += kBlockLanes) {
    const std::size_t offset = j / kBlockLanes * packed.block_stride * kBlockLanes;
    if (packed.value32 != nullptr) {
      const float* b = packed.value32 + offset;
      const std::int32_t* e = packed.exponent + offset;
      // The block's rows in fours, then the rest one at a time.
      std::size_t r = 0;
      for (; r + 4 <= a.rows; r += 4) fused_rows_binary32<4>(shape, a, r, b, e, j, lanes);
      for (; r < a.rows; ++r) fused_rows_binary32<1>(shape, a, r, b, e, j, lanes);
    } else {
      for (std::size_t r = 0; r < a.rows; ++r) {
        fused_block(shape, narrow_terms, a, r, packed.value + offset, packed.exponent + offset, j,
                    lanes);
      }
    }
  }
  if (blocked < w) {
    for (std::size_t r = 0; r < a.rows; ++r) {
      const std::int32_t* __restrict c_exp = lanes.exponent.data() + r * kColumns;
      std::int32_t* __restrict emax = lanes.emax.data() + r * kColumns;
      for (std::size_t j = blocked; j < w; ++j) emax[j] = c_exp[j];
    }
    for (int l = 0; l < a.n; ++l) {
      const std::int32_t* __restrict eb = b_exponent + static_cast<std::size_t>(l) * stride;
      for (std::size_t r = 0; r < a.rows; ++r) {
        const std::int32_t ea = a.exponent[r * a.stride + static_cast<std::size_t>(l)];
        std::int32_t* __restrict emax = lanes.emax.data() + r * kColumns;
        for (std::size_t j = blocked; j < w; ++j) emax[j] = std::max(emax[j], ea + eb[j]);
      }
    }
    for (std::size_t r = 0; r < a.rows; ++r) {
      const double* __restrict c_value = lanes.value.data() + r * kColumns;
      const std::int32_t* __restrict emax = lanes.emax.data() + r * kColumns;
      double* __restrict scale = lanes.scale.data() + r * kColumns;
      std::int64_t* __restrict sum = lanes.sum.data() + r * kColumns;
      for (std::size_t j = blocked; j < w; ++j) {
        scale[j] = pow2(shape.fraction_bits - emax[j]);
        sum[j] = static_cast<std::int64_t>(c_value[j] * scale[j]);
      }
    }
    for (int l = 0; l < a.n; ++l) {
      const double* __restrict xb = b_value + static_cast<std::size_t>(l) * stride;
      for (std::size_t r = 0; r < a.rows; ++r) {
        const double xa = a.value[r * a.stride + static_cast<std::size_t>(l)];
        const double* __restrict scale = lanes.scale.data() + r * kColumns;
        std::int64_t* __restrict sum = lanes.sum.data() + r * kColumns;
        for (std::size_t j = blocked; j < w; ++j) {
          sum[j] += static_cast<std::int64_t>(xa * xb[j] * scale[j]);
        }
      }
    }
  }
  for (std::size_t r = 0; r < a.rows; ++r) {
    switch (shape.output) {
      case MmaOutput::fp32_truncate:
        normalise_lanes<MmaOutput::fp32_truncate>(shape, r * kColumns, w, lanes);
        break;
      case MmaOutput::e8m13_truncate:
        normalise_lanes<MmaOutput::e8m13_truncate>(shape, r * kColumns, w, lanes);
        break;
      case MmaOutput::fp16_nearest_even:
        normalise_lanes<MmaOutput::fp16_nearest_even>(shape, r * kColumns, w, lanes);
        break;
    }
  }
}

}  // namespace

MmaMatrixProduct::MmaMatrixProduct(const MmaModel& model, std::size_t k, std::size_t cols,
                                   std::span<const double> b)
    : MmaMatrixProduct(model, model.input, model.input, k, cols, b) {}

MmaMatrixProduct::MmaMatrixProduct(const MmaModel& model, const Format& a_format,
                                   const Format& b_format, std::size_t k, std::size_t cols,
                                   std::span<const double> b)
    : model_(model),
      a_format_(a_format),
      b_format_(b_format),
      k_(k),
      cols_(cols),
      b_(b),
      b_value_(b.size()),
      b_exponent_(b.size()),
      b_special_(cols) {
  if (b.size() != k * cols) {
    throw std::invalid_argument("MmaMatrixProduct: B does not hold k x cols values");
  }
  // The whole blocks of kBlockLanes columns, packed for fused_step_lanes (PackedStep): in binary32
  // (exact: values of b_format) where binary32_terms holds, else in binary64.
  const bool binary32 = binary32_terms(a_format, b_format, model.fraction_bits);
  const std::size_t packed = cols / kBlockLanes * kBlockLanes * k;
  b_packed_exponent_.resize(packed);
  if (binary32) {
    b_packed_value32_.resize(packed);
  } else {
    b_packed_value_.resize(packed);
  }
  // B's rows split and packed on all cores where it is large.
  std::vector<std::uint8_t> ok(b.size());
  on_cores(k, kValuesPerCore / std::max<std::size_t>(cols, 1), [&](std::size_t l0, std::size_t l1) {
    const std::size_t first = l0 * cols, count = (l1 - l0) * cols;
    split_values(model, b_format, b.data() + first, b_value_.data() + first,
                 b_exponent_.data() + first, ok.data() + first, count);
    for (std::size_t q = 0; q < cols / kBlockLanes; ++q) {
      for (std::size_t l = l0; l < l1; ++l) {
        for (std::size_t j = 0; j < kBlockLanes; ++j) {
          const std::size_t from = l * cols + q * kBlockLanes + j;
          const std::size_t to = (q * k + l) * kBlockLanes + j;
          b_packed_exponent_[to] = b_exponent_[from];
          if (binary32) {
            b_packed_value32_[to] = static_cast<float>(b_value_[from]);
          } else {
            b_packed_value_[to] = b_value_[from];
          }
        }
      }
    }
  });
  for (std::size_t l = 0; l < k; ++l) {
    for (std::size_t j = 0; j < cols; ++j) {
      b_special_[j] = static_cast<std::uint8_t>(b_special_[j] | (ok[l * cols + j] == 0 ? 1 : 0));
    }
  }
}

void MmaMatrixProduct::multiply(std::span<const double> a, std::span<const double> c,
                                std::span<double> d) const {
  if (cols_ == 0) return;
  const std::size_t rows = d.size() / cols_;
  if (d.size() != rows * cols_ || a.size() != rows * k_ || (!c.empty() && c.size() != d.size())) {
    throw std::invalid_argument("MmaMatrixProduct::multiply: A, C and D do not match B");
  }
  const Format acc = model_.accumulator_format();
  const int step =
      model_.fused_k > 0 && model_.fused_k < kMaxFusedProducts ? model_.fused_k : kMaxFusedProducts;
  const StepShape shape{model_.fraction_bits, model_.output, acc.emin, acc.emax};
  const auto c_of = [&](std::size_t i, std::size_t j) {
    return c.empty() ? 0.0 : c[i * cols_ + j];
  };
  const auto by_mma_dot = [&](std::size_t i, std::size_t j) {
    d[i * cols_ + j] =
        mma_dot(model_, a_format_, b_format_, c_of(i, j), a.data() + i * k_, 1, b_.data() + j,
                static_cast<std::ptrdiff_t>(cols_), static_cast<int>(k_));
  };
  if (k_ == 0 || !binary64_terms(a_format_, b_format_)) {
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols_; ++j) by_mma_dot(i, j);
    }
    return;
  }
  std::vector<double> a_value(a.size());
  std::vector<std::int32_t> a_exponent(a.size());
  std::vector<std::uint8_t> a_special(rows);
  std::vector<std::uint8_t> ok(a.size());
  split_values(model_, a_format_, a.data(), a_value.data(), a_exponent.data(), ok.data(), a.size());
  for (std::size_t i = 0; i < rows; ++i) {
    const auto row = ok.begin() + static_cast<std::ptrdiff_t>(i * k_);
    a_special[i] = std::find(row, row + static_cast<std::ptrdiff_t>(k_), 0) !=
                           row + static_cast<std::ptrdiff_t>(k_)
                       ? 1
                       : 0;
  }
  // A in binary32 where B is (binary32_terms).
  const bool binary32 = binary32_terms(a_format_, b_format_, model_.fraction_bits);
  const std::vector<float> a_value32 =
      binary32 ? std::vector<float>(a_value.begin(), a_value.end()) : std::vector<float>{};
  Lanes lanes;
  for (std::size_t j0 = 0; j0 < cols_; j0 += kColumns) {
    const std::size_t w = std::min(kColumns, cols_ - j0);
    for (std::size_t i0 = 0; i0 < rows; i0 += kRows) {
      const std::size_t block_rows = std::min(kRows, rows - i0);
      for (std::size_t r = 0; r < block_rows; ++r) {
        const std::size_t lane = r * kColumns;
        const std::uint32_t a_sp = a_special[i0 + r];
        for (std::size_t j = 0; j < w; ++j) {
          lanes.scalar[lane + j] = a_sp | b_special_[j0 + j];
        }
        if (c.empty()) {  // split_value of +0
          std::fill_n(lanes.value.begin() + static_cast<std::ptrdiff_t>(lane), w, 0.0);
          std::fill_n(lanes.exponent.begin() + static_cast<std::ptrdiff_t>(lane), w, -126);
          continue;
        }
        for (std::size_t j = 0; j < w; ++j) {
          if (!split_value(acc, c[(i0 + r) * cols_ + j0 + j], lanes.value[lane + j],
                           lanes.exponent[lane + j])) {
            lanes.scalar[lane + j] = 1;
          }
        }
      }
      for (std::size_t l0 = 0; l0 < k_; l0 += static_cast<std::size_t>(step)) {
        const RowsStep block{
            a_value.data() + i0 * k_ + l0,
            binary32 ? a_value32.data() + i0 * k_ + l0 : nullptr,
            a_exponent.data() + i0 * k_ + l0,
            k_,
            block_rows,
            static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(step), k_ - l0))};
        // The column block's whole blocks of lanes (none where w < kBlockLanes).
        const std::size_t first = (j0 / kBlockLanes * k_ + l0) * kBlockLanes;
        const bool whole = w >= kBlockLanes;
        const PackedStep packed{whole && !binary32 ? b_packed_value_.data() + first : nullptr,
                                whole && binary32 ? b_packed_value32_.data() + first : nullptr,
                                whole ? b_packed_exponent_.data() + first : nullptr, k_};
        fused_step_lanes(shape, block, packed, b_value_.data() + l0 * cols_ + j0,
                         b_exponent_.data() + l0 * cols_ + j0, cols_, w, lanes);
      }
      for (std::size_t r = 0; r < block_rows; ++r) {
        const std::uint32_t* scalar = lanes.scalar.data() + r * kColumns;
        double* out = d.data() + (i0 + r) * cols_ + j0;
        std::copy_n(lanes.value.data() + r * kColumns, w, out);
        if (std::find_if(scalar, scalar + w, [](std::uint32_t s) { return s != 0; }) ==
            scalar + w) {
          continue;
        }
        for (std::size_t j = 0; j < w; ++j) {
          if (scalar[j] != 0) by_mma_dot(i0 + r, j0 + j);
        }
      }
    }
  }
}

std::span<const MmaModel> mma_presets() {
  return kPresets;
}

std::optional<MmaModel> mma_model(std::string_view arch, const Format& input,
                                  MmaAccumulator accumulator) {
  for (const MmaModel& m : kPresets) {
    if (arch == m.arch && same_values(input, m.input) && m.accumulator() == accumulator) return m;
  }
  return std::nullopt;
}

std::optional<MmaModel> mma_model_named(std::string_view name) {
  for (const MmaModel& m : kPresets) {
    if (name == m.name) return m;
  }
  return std::nullopt;
}

const char* mma_model_error(const MmaModel& m) {
  if (m.fraction_bits < 0 || m.fraction_bits > kMaxFractionBits) {
    return "fraction_bits must lie in [0, 40]";
  }
  if (m.fused_k < 0 || m.fused_k > kMaxFusedProducts) {
    return "fused_k must lie in [0, 2^20] (0: the whole k in one fused step)";
  }
  if (m.instruction_k < 1) return "instruction_k must be at least 1";
  // Products of two significands must fit in 64 bits, and every value must be a normal binary64
  // (mma_split reads the binary64 fields).
  if (m.input.precision < 2 || m.input.precision > 24) return "input precision must lie in [2, 24]";
  if (m.input.emin - m.input.fraction_bits() < -1022 || m.input.emax > 1023) {
    return "input format's values must be normal binary64 numbers";
  }
  return nullptr;
}

const char* to_string(MmaOutput output) {
  switch (output) {
    case MmaOutput::fp32_truncate: return "fp32, truncated to 23 fraction bits";
    case MmaOutput::e8m13_truncate: return "fp32, truncated to 13 fraction bits (e8m13)";
    case MmaOutput::fp16_nearest_even: return "fp16, round to nearest even";
  }
  return "?";
}

}  // namespace ampbench::numeric
