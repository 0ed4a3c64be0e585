// Bit-exact arithmetic models of NVIDIA Tensor Core matrix multiply-accumulate (MMA): what one
// element d = c + sum_i a_i * b_i of an mma / wgmma / tcgen05.mma instruction gives, and how a long
// dot product is split into the hardware's fused steps.
//
// The model is MMA-Sim's (Xie, Wang, Yang, Yang, "MMA-Sim: Bit-Accurate Reference Model of Tensor
// Cores and Matrix Cores", arXiv 2511.10909; github.com/microsoft/MMA-Sim at commit c785138,
// mmasim/simulator/arithmetic.py `fused_sum`, `nv_fused_dot_add` and mmasim/simulator/nv_ptx.py),
// cross-checked with the feature tests of Fasi, Higham, Mikaitis & Pranesh, "Numerical behavior of
// NVIDIA tensor cores", PeerJ CS 7:e330 (2021) (github.com/north-numerical-computing/
// tensor-cores-numerical-behavior at commit 9dae3fc) and with Khattak & Mikaitis, "Accurate models
// of NVIDIA Tensor Cores", arXiv 2512.07004 (2025). docs/mma-models.md gives every parameter's
// source and what has and has not been checked.
//
// One fused step, for n products and the accumulator c:
//   1. Every operand is split into (significand, exponent) from its own format's fields: a normal
//      number has a significand in [1, 2) and its exponent; a subnormal has the format's emin and a
//      significand below 1; a zero has significand 0 and exponent -126 (MMA-Sim's constant, in
//      every format).
//   2. Product i is the term (sa * sb, ea + eb), exact: the exponent of a product's term is the sum
//      of its operands' exponents (not the exponent of its value: sa * sb lies in [0, 4)). c is one
//      more term, split in its own format (fp32, or fp16 for an fp16 accumulator).
//   3. emax is the largest term exponent. Each term's significand times 2^(F + e_i - emax) is
//      truncated toward zero to an integer: F fractional bits are kept during alignment.
//   4. The truncated terms are added exactly (integers here), the sum is normalised once, and the
//      result is produced in the output format: truncated (toward zero) to fp32's 23 fraction bits,
//      or to 13 (e8m13: FP8 on Ada and Hopper), with fp32's subnormals; or, for an fp16
//      accumulator, rounded to nearest even in fp16, with fp16's subnormals.
//   5. NaN in (or inf - inf, or inf * 0) gives the canonical NaN (fp32 0x7FFFFFFF, fp16 0x7FFF);
//      an infinity otherwise passes through; an exact zero sum, and a nonzero one that rounds to
//      zero, gives +0 (measured on an H200, as MMA-Sim has it); a finite result beyond the
//      accumulator's range gives +-inf (MMA-Sim converts the out-of-range value to the output
//      type).
//
// Everything is integer arithmetic on the binary64 encodings, so the result does not depend on the
// FPU, and the per-element functions are AMPBENCH_HD so that CUDA kernels can call them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/host_device.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric {

// The accumulator (C and D matrices) of an MMA instruction.
enum class MmaAccumulator : std::uint8_t { fp32, fp16 };

// How a fused step's exact, normalised sum becomes the value written to the accumulator.
enum class MmaOutput : std::uint8_t {
  fp32_truncate,      // fp32, truncated toward zero to 23 fraction bits (fp32 subnormals kept)
  e8m13_truncate,     // fp32 container, truncated toward zero to 13 fraction bits (FP8 on Ada and
                      // Hopper): an fp32 with its low 10 fraction bits zero
  fp16_nearest_even,  // fp16, round to nearest even (fp16 subnormals kept)
};

// One Tensor Core arithmetic, as a plain value. Presets: mma_presets(); a user model is checked
// with mma_model_error before use.
struct MmaModel {
  const char* name;         // "ampere-fp16", "hopper-e4m3-acc16", ...
  const char* arch;         // "volta", "turing", "ampere", "ada", "hopper", "blackwell"
  const char* instruction;  // the PTX instruction modelled, for messages and docs
  Format input;             // format of A and B (values held in doubles)
  // k of one instruction: how far one instruction advances through a long dot product.
  int instruction_k;
  // Products per fused step (block size). Equal to instruction_k when the whole instruction is one
  // fused step (Volta, Turing, Hopper wgmma, Blackwell tcgen05); instruction_k / 2 for the split-k
  // instructions of Ampere and Ada; 0 means "the whole k of an mma_dot call in one fused step" (an
  // idealised device for experiments, no preset).
  int fused_k;
  int fraction_bits;  // F: fractional bits of each term kept during alignment (0..kMaxFractionBits)
  MmaOutput output;
  bool subnormal_inputs;   // false: subnormal A and B values are read as (signed) zeros
  bool subnormal_outputs;  // false: subnormal results are written as (signed) zeros
  bool canonical_nan;      // NaN results are the canonical NaN (true on NVIDIA); else a quiet NaN
  const char* source;      // where the parameters come from (short; docs/mma-models.md has more)

  AMPBENCH_HD constexpr MmaAccumulator accumulator() const {
    return output == MmaOutput::fp16_nearest_even ? MmaAccumulator::fp16 : MmaAccumulator::fp32;
  }
  AMPBENCH_HD constexpr Format accumulator_format() const {
    return output == MmaOutput::fp16_nearest_even ? formats::fp16 : formats::fp32;
  }
  // Each instruction is two (or more) fused steps, the first's result rounded to the accumulator
  // format before it becomes the next one's c.
  AMPBENCH_HD constexpr bool split_k() const { return fused_k > 0 && fused_k < instruction_k; }
};

// Limits that keep the exact sum of a fused step inside a signed 64-bit integer (see
// detail::mma_fused_sum for the proof).
inline constexpr int kMaxFractionBits = 40;
inline constexpr int kMaxFusedProducts = 1 << 20;

// The presets, in a fixed order (arch, then input format, then fp32 before fp16 accumulator).
std::span<const MmaModel> mma_presets();
// The preset of an architecture ("volta", "turing", "ampere", "ada", "hopper", "blackwell") for an
// input format (compared by its values: precision, range, subnormals, encoding), or nothing where
// the hardware has no such MMA (Volta and Turing: fp16 only; Ampere: no fp8; the fp16 accumulator:
// fp16 and fp8 inputs only).
std::optional<MmaModel> mma_model(std::string_view arch, const Format& input,
                                  MmaAccumulator accumulator = MmaAccumulator::fp32);
// The preset of that name (mma_presets()[i].name), as `--mma MODEL` takes it.
std::optional<MmaModel> mma_model_named(std::string_view name);
// Why a model cannot be evaluated (a user model), or nullptr when it can.
const char* mma_model_error(const MmaModel& model);
const char* to_string(MmaOutput output);

// --- Inputs -----------------------------------------------------------------------------------

// TF32 from fp32, as the Tensor Cores read an fp32 operand in a .tf32 MMA: the low 13 fraction bits
// of the fp32 encoding are cleared (truncation toward zero, not rounding; MMA-Sim
// arithmetic.py `truncate_to_tf32`). As bit patterns, exactly what the hardware does (an fp32 NaN
// whose payload lies only in the low 13 bits becomes an infinity).
AMPBENCH_HD constexpr std::uint32_t tf32_truncate_bits(std::uint32_t fp32_bits) {
  return fp32_bits & ~std::uint32_t{0x1FFF};
}
// The same on a value: x is first taken as an fp32 (rounded to nearest even: a no-op for fp32
// values), then truncated to tf32. NaN stays NaN here.
AMPBENCH_HD inline double tf32_truncate(double x) {
  const Rounded f = round_to(formats::fp32, Rounding::nearest_even, x);
  if (f.event == RoundingEvent::nan) return f.value;
  return decode(formats::fp32, tf32_truncate_bits(static_cast<std::uint32_t>(f.bits)));
}

// An A or B operand as the model's Tensor Core reads it: a value of the input format. TF32: the
// truncation above; the other formats: rounded to nearest even (a cast; a no-op for values of the
// format). mma_fused_step and mma_dot expect operands already in the input format (they do not
// call this: a GEMM converts its operands once, not once per output element).
AMPBENCH_HD inline double mma_quantize_input(const MmaModel& model, double x) {
  if (same_values(model.input, formats::tf32)) return tf32_truncate(x);
  return round_to(model.input, Rounding::nearest_even, x).value;
}

// --- The arithmetic ---------------------------------------------------------------------------

namespace detail {

// The 13-fraction-bit output of FP8 MMAs on Ada and Hopper: fp32's range and subnormal spacing
// (2^-139 below 2^-126, since MMA-Sim clamps the exponent at -126 and keeps 13 fraction bits).
inline constexpr Format kE8m13{
    "e8m13", 14, -126, 127, true, Overflow::infinity, SpecialEncoding::ieee};

// A finite value of format f split as MMA-Sim's extract_significand_exponent does: significand
// sig * 2^-(p-1) and exponent e (e >= emin; a zero gets exponent -126). Every value of every
// format here is a normal binary64, so the binary64 fields give it directly; for a value of f the
// shift drops only zero bits (a value not in f is truncated toward zero, never undefined).
AMPBENCH_HD inline void mma_split(const Format& f, double x, std::uint64_t& sig, int& exponent) {
  const std::uint64_t magnitude = bits_of(x) & ~(std::uint64_t{1} << 63);
  if (magnitude == 0) {
    sig = 0;
    exponent = -126;
    return;
  }
  const int biased = static_cast<int>(magnitude >> 52);
  const std::uint64_t m53 =
      biased == 0 ? magnitude : (magnitude & kF64FractionMask) | (std::uint64_t{1} << 52);
  const int ex = biased == 0 ? -1022 : biased - 1023;  // binary64 subnormals: only if not in f
  const int e = ex < f.emin ? f.emin : ex;
  const int shift = 52 - f.fraction_bits() + (e - ex);
  sig = shift < 64 ? m53 >> shift : 0;
  exponent = e;
}

AMPBENCH_HD inline bool is_nan_bits(std::uint64_t u) {
  return (u & ~(std::uint64_t{1} << 63)) > kF64Infinity;
}
AMPBENCH_HD inline bool is_inf_bits(std::uint64_t u) {
  return (u & ~(std::uint64_t{1} << 63)) == kF64Infinity;
}
AMPBENCH_HD inline bool is_zero_bits(std::uint64_t u) {
  return (u & ~(std::uint64_t{1} << 63)) == 0;
}

// A subnormal operand of format f read as zero when the model flushes them.
AMPBENCH_HD inline double mma_operand(const MmaModel& m, const Format& f, double x) {
  if (m.subnormal_inputs) return x;
  const std::uint64_t u = bits_of(x);
  const std::uint64_t magnitude = u & ~(std::uint64_t{1} << 63);
  const int biased = static_cast<int>(magnitude >> 52);
  if (magnitude != 0 && biased - 1023 < f.emin) return double_of(u & (std::uint64_t{1} << 63));
  return x;
}
AMPBENCH_HD inline double mma_operand(const MmaModel& m, double x) {
  return mma_operand(m, m.input, x);
}

// The aligned, truncated term: trunc(sig * 2^-frac_bits * 2^(F + e - emax)) as an integer.
AMPBENCH_HD inline std::uint64_t mma_align(std::uint64_t sig, int frac_bits, int e, int emax,
                                           int fraction_bits) {
  const int shift = fraction_bits + e - emax - frac_bits;
  if (shift >= 0) return sig << shift;
  return -shift < 64 ? sig >> -shift : 0;
}

// The exact sum of the aligned, truncated terms (steps 1-3 above) for finite operands: returns the
// signed integer S and sets emax; the step's exact result is S * 2^(emax - F).
//
// Why a signed 64-bit integer suffices. A product's significand is sa * sb < 2 * 2 = 4, i.e.
// sig < 2^(frac_bits + 2) with frac_bits = 2(p-1); c's is < 2 (sig < 2^(frac_bits + 1)). Since
// e_i <= emax, an aligned term is at most sig * 2^(F - frac_bits) < 2^(F + 2) (and the left shift
// in mma_align never exceeds that, so it cannot overflow). With n products and c,
// |S| < (n + 1) * 2^(F + 2) <= (2^20 + 1) * 2^42 < 2^63 for n <= kMaxFusedProducts = 2^20 and
// F <= kMaxFractionBits = 40. (The presets have n <= 32 and F <= 25: |S| < 33 * 2^27 < 2^33.)
// In particular 128 bits are not needed for any F <= 40.
// A's operands are values of a_format and B's of b_format (both m.input but in a mixed-format MMA,
// Hopper's e4m3 x e5m2: each operand is split in its own format, the product's fraction bits are
// the sum of the two formats'). Every product's exponent is raised by product_exponent_offset
// (Blackwell's block scales, mma_block_scale.hpp; 0 otherwise), c's is not.
AMPBENCH_HD inline std::int64_t mma_fused_sum(const MmaModel& m, const Format& a_format,
                                              const Format& b_format, double c, const double* a,
                                              std::ptrdiff_t a_stride, const double* b,
                                              std::ptrdiff_t b_stride, int n, int& emax,
                                              int product_exponent_offset = 0) {
  const Format acc = m.accumulator_format();
  std::uint64_t sig = 0;
  int e = 0;
  mma_split(acc, c, sig, e);
  emax = e;
  for (int i = 0; i < n; ++i) {
    std::uint64_t sa = 0, sb = 0;
    int ea = 0, eb = 0;
    mma_split(a_format, mma_operand(m, a_format, a[i * a_stride]), sa, ea);
    mma_split(b_format, mma_operand(m, b_format, b[i * b_stride]), sb, eb);
    if (ea + eb + product_exponent_offset > emax) emax = ea + eb + product_exponent_offset;
  }
  const int f = m.fraction_bits;
  const int c_frac = acc.fraction_bits();
  const int p_frac = a_format.fraction_bits() + b_format.fraction_bits();
  std::int64_t sum = 0;
  const auto add = [&sum](bool negative, std::uint64_t t) {
    sum += negative ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  };
  add(bits_of(c) >> 63, mma_align(sig, c_frac, e, emax, f));
  for (int i = 0; i < n; ++i) {
    const double x = mma_operand(m, a_format, a[i * a_stride]);
    const double y = mma_operand(m, b_format, b[i * b_stride]);
    std::uint64_t sa = 0, sb = 0;
    int ea = 0, eb = 0;
    mma_split(a_format, x, sa, ea);
    mma_split(b_format, y, sb, eb);
    add(((bits_of(x) ^ bits_of(y)) >> 63) != 0,
        mma_align(sa * sb, p_frac, ea + eb + product_exponent_offset, emax, f));
  }
  return sum;
}
AMPBENCH_HD inline std::int64_t mma_fused_sum(const MmaModel& m, double c, const double* a,
                                              std::ptrdiff_t a_stride, const double* b,
                                              std::ptrdiff_t b_stride, int n, int& emax) {
  return mma_fused_sum(m, m.input, m.input, c, a, a_stride, b, b_stride, n, emax);
}

// The NaN a model writes.
AMPBENCH_HD inline double mma_nan(const MmaModel& m) {
  if (!m.canonical_nan) return double_of(kF64Infinity | kF64QuietBit);
  return m.output == MmaOutput::fp16_nearest_even ? decode(formats::fp16, 0x7FFF)
                                                  : decode(formats::fp32, 0x7FFFFFFF);
}

}  // namespace detail

namespace detail {
// Steps 4-5 of a fused step (mma.hpp's top): the exact sum S * 2^(emax - F) produced in the
// model's output format (+0 for a zero sum; +-inf beyond the accumulator's range).
AMPBENCH_HD inline double mma_output_of_sum(const MmaModel& m, std::int64_t sum, int emax) {
  if (sum == 0) return 0.0;  // MMA-Sim: an exact zero sum is +0 whatever the signs

  // Normalise once: the value |sum| * 2^(emax - F) as a window whose top bit is set, then produce
  // the output with the library's reference rounding (integer arithmetic, no FPU rounding).
  const std::uint64_t magnitude = sum < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(sum)
                                          : static_cast<std::uint64_t>(sum);
  const std::uint64_t sign = sum < 0 ? std::uint64_t{1} << 63 : 0;
  if (m.output == MmaOutput::fp32_truncate) {
    // The common case without the general rounding: a value in binary32's normal range truncated
    // to 24 significant bits is a binary32 normal, exact in binary64 (binade e, the significand's
    // top 24 bits); past 2^128 it is an infinity, as below. The subnormal range goes on below.
    const int width = detail::bit_width(magnitude);
    const int e = width - 1 + emax - m.fraction_bits;
    if (e > 127) return detail::double_of(sign | detail::kF64Infinity);
    if (e >= -126) {
      const std::uint64_t top = width > 24 ? magnitude >> (width - 24) : magnitude << (24 - width);
      return detail::double_of(sign | static_cast<std::uint64_t>(e + 1023) << 52 |
                               (top & 0x7FFFFFu) << 29);
    }
  }
  const int lead = 64 - detail::bit_width(magnitude);
  const Window w{sum < 0, magnitude << lead, 0, false, emax - m.fraction_bits - lead};
  Rounded r{};
  switch (m.output) {
    case MmaOutput::fp32_truncate: r = round_window(formats::fp32, Rounding::toward_zero, w); break;
    case MmaOutput::e8m13_truncate:
      r = round_window(detail::kE8m13, Rounding::toward_zero, w);
      break;
    case MmaOutput::fp16_nearest_even:
      r = round_window(formats::fp16, Rounding::nearest_even, w);
      break;
  }
  // A nonzero sum that rounds to zero is +0 whatever its sign, as MMA-Sim's (which rounds a sum
  // accumulated from +0.0) is, and as an H200 gives it: the fingerprint's zero_sign_kept probes
  // through wgmma and mma.sync, fp16 into fp16 and bf16 and tf32 into fp32 (docs/mma-models.md).
  if (r.value == 0) return 0.0;
  // Beyond the range: truncation would clamp to the largest finite value; MMA-Sim (and the
  // conversion of an out-of-range value to fp32 / fp16) gives an infinity.
  if (r.event == RoundingEvent::saturation) {
    return detail::double_of(sign | detail::kF64Infinity);
  }
  if (!m.subnormal_outputs && r.event != RoundingEvent::overflow) {
    const std::uint64_t u = detail::bits_of(r.value);
    if (static_cast<int>((u >> 52) & 0x7FF) - 1023 < m.accumulator_format().emin) {
      return detail::double_of(u & (std::uint64_t{1} << 63));
    }
  }
  return r.value;
}
}  // namespace detail

// One fused step: d = c + sum_{i<n} a[i * a_stride] * b[i * b_stride], as the model's hardware
// computes it (steps 1-5 at the top of this file). a and b hold values of the model's input format
// (tf32: already truncated, see mma_quantize_input); c a value of its accumulator format (fp32, or
// fp16 for an fp16 accumulator). n >= 0 and n <= kMaxFusedProducts. The result is a value of the
// accumulator format (for e8m13 outputs, an fp32 with its low 10 fraction bits zero).
//
// The overload with a_format and b_format is a mixed-format MMA (Hopper's and Blackwell's
// e4m3 x e5m2): a holds values of a_format, b of b_format, each split in its own format, with the
// model's other parameters unchanged. That is MMA-Sim's arithmetic with the operand types taken
// separately; no mixed-format preset has been checked against hardware (docs/mma-models.md).
AMPBENCH_HD inline double mma_fused_step(const MmaModel& m, const Format& a_format,
                                         const Format& b_format, double c, const double* a,
                                         std::ptrdiff_t a_stride, const double* b,
                                         std::ptrdiff_t b_stride, int n,
                                         int product_exponent_offset = 0) {
  // Specials first, as IEEE arithmetic on the exact products would give them (MMA-Sim evaluates
  // sum(products) + c in binary64; with these formats that sum cannot overflow).
  bool nan = detail::is_nan_bits(detail::bits_of(c));
  bool plus_inf = false, minus_inf = false;
  if (detail::is_inf_bits(detail::bits_of(c)))
    (detail::bits_of(c) >> 63 ? minus_inf : plus_inf) = true;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t x = detail::bits_of(a[i * a_stride]);
    const std::uint64_t y = detail::bits_of(b[i * b_stride]);
    if (detail::is_nan_bits(x) || detail::is_nan_bits(y)) {
      nan = true;
    } else if (detail::is_inf_bits(x) || detail::is_inf_bits(y)) {
      if (detail::is_zero_bits(x) || detail::is_zero_bits(y)) {
        nan = true;
      } else {
        (((x ^ y) >> 63) ? minus_inf : plus_inf) = true;
      }
    }
  }
  if (nan || (plus_inf && minus_inf)) return detail::mma_nan(m);
  if (plus_inf || minus_inf) {
    return detail::double_of((minus_inf ? std::uint64_t{1} << 63 : 0) | detail::kF64Infinity);
  }

  int emax = 0;
  const std::int64_t sum = detail::mma_fused_sum(m, a_format, b_format, c, a, a_stride, b, b_stride,
                                                 n, emax, product_exponent_offset);
  return detail::mma_output_of_sum(m, sum, emax);
}

AMPBENCH_HD inline double mma_fused_step(const MmaModel& m, double c, const double* a,
                                         std::ptrdiff_t a_stride, const double* b,
                                         std::ptrdiff_t b_stride, int n) {
  return mma_fused_step(m, m.input, m.input, c, a, a_stride, b, b_stride, n);
}

AMPBENCH_HD inline double mma_fused_step(const MmaModel& m, double c, const double* a,
                                         const double* b, int n) {
  return mma_fused_step(m, c, a, 1, b, 1, n);
}

// A dot product of length k through the model's Tensor Core: fused steps of fused_k products in
// order, each step's result (a value of the accumulator format) being the next step's c; this is
// both the split-k inside one instruction (Ampere, Ada) and the chaining of instructions along a
// GEMM's k. A last, shorter step is the same as one padded with zero products (their terms have
// exponent -252 and never set emax). k == 0 returns c unchanged (no instruction is issued).
// With a_format and b_format: the mixed-format MMA of mma_fused_step.
AMPBENCH_HD inline double mma_dot(const MmaModel& m, const Format& a_format, const Format& b_format,
                                  double c, const double* a, std::ptrdiff_t a_stride,
                                  const double* b, std::ptrdiff_t b_stride, int k) {
  const int step = m.fused_k > 0 && m.fused_k < kMaxFusedProducts ? m.fused_k : kMaxFusedProducts;
  double acc = c;
  for (int i = 0; i < k; i += step) {
    const int n = k - i < step ? k - i : step;
    acc = mma_fused_step(m, a_format, b_format, acc, a + i * a_stride, a_stride, b + i * b_stride,
                         b_stride, n);
  }
  return acc;
}

AMPBENCH_HD inline double mma_dot(const MmaModel& m, double c, const double* a,
                                  std::ptrdiff_t a_stride, const double* b, std::ptrdiff_t b_stride,
                                  int k) {
  return mma_dot(m, m.input, m.input, c, a, a_stride, b, b_stride, k);
}

AMPBENCH_HD inline double mma_dot(const MmaModel& m, double c, const double* a, const double* b,
                                  int k) {
  return mma_dot(m, c, a, 1, b, 1, k);
}

// mma_dot for every element of a matrix product on the host: D = C + A B (row-major; A rows x k,
// B k x cols, C and D rows x cols), d_ij = mma_dot(model, c_ij, a_i., 1, b_.j, cols, k), bit for
// bit. Every operand is split once (not once per output), and the fused steps of a block of 4 x 128
// outputs run side by side, vectorised, with each aligned term formed exactly in binary64 (see
// mma.cpp). Outputs whose row, column or c holds a NaN, an infinity or a value beyond its format,
// or whose fused steps leave the accumulator's normal range (overflow, subnormal results), are
// computed by mma_dot itself, and so are all outputs of a model whose input products can leave
// binary64's normal range (no preset).
class MmaMatrixProduct {
 public:
  // b: k x cols values of the model's input format (see mma_quantize_input). It must outlive this
  // object. The model must pass mma_model_error.
  MmaMatrixProduct(const MmaModel& model, std::size_t k, std::size_t cols,
                   std::span<const double> b);
  // A mixed-format product (mma_dot with a_format and b_format): a holds values of a_format, b of
  // b_format.
  MmaMatrixProduct(const MmaModel& model, const Format& a_format, const Format& b_format,
                   std::size_t k, std::size_t cols, std::span<const double> b);
  // d = c + a b for a (rows x k, values of the input format) and c (rows x cols, values of the
  // accumulator format; empty for zeros), into d (rows x cols). Safe to call from several threads.
  void multiply(std::span<const double> a, std::span<const double> c, std::span<double> d) const;

 private:
  MmaModel model_;
  Format a_format_, b_format_;
  std::size_t k_, cols_;
  std::span<const double> b_;
  std::vector<double> b_value_;  // k x cols: as mma_fused_sum reads it (see mma.cpp)
  // Its whole blocks of 16 columns packed for the fused steps (mma.cpp, PackedStep): the split
  // exponents, and the values in binary32 where the formats allow, else in binary64.
  std::vector<std::int32_t> b_packed_exponent_;
  std::vector<float> b_packed_value32_;
  std::vector<double> b_packed_value_;
  std::vector<std::int32_t> b_exponent_;  // k x cols: its split exponent
  std::vector<std::uint8_t> b_special_;   // per column: a NaN or an infinity
};

}  // namespace ampbench::numeric
