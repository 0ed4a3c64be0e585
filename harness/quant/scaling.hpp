// The scaling math of the FP8 and microscaling training recipes, as plain values: the amax of a
// tensor, per-tensor scales (Transformer Engine's DelayedScaling and Float8CurrentScaling),
// blockwise fp32 scales (DeepSeek-V3 / TE Float8BlockScaling), OCP MX blocks with an E8M0 scale,
// and NVFP4's two-level scales (an fp32 tensor scale and E4M3 block scales). Every quantizer
// returns the scales exactly (values and encodings), every element's bits and value, the
// dequantized values and the events; nothing here runs a GEMM (docs/scaling.md).
//
// Sources, for the order of the roundings: Transformer Engine (github.com/NVIDIA/TransformerEngine)
// transformer_engine/common/recipe/{delayed_scaling.cu,current_scaling.cu,recipe_common.cuh},
// transformer_engine/common/cast/nvfp4/{core_nvfp4.cuh,quantize_transpose_nvfp4.cuh}; the OCP
// Microscaling Formats (MX) Specification v1.0, its conversion of a block (conversion of a block to
// MX).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::quant {

using numeric::Format;
using numeric::Rounding;

// The largest |x| of the values, NaN ignored as TE's amax kernel ignores it (fmaxf(|x|, max),
// current_scaling.cu); +inf when one is infinite; 0 for none.
double amax(std::span<const float> values);

// ---- per-tensor scales --------------------------------------------------------------------------

// TE's compute_scale_from_amax (recipe_common.cuh): fl32(fmt_max / amax) for a finite positive
// amax; fp32's largest finite value when that overflows; 1 for a zero, infinite or NaN amax. With
// pow2, the scale's fraction bits are cleared (rounded down to a power of two).
float current_scale(double amax, double fmt_max, bool pow2);

enum class AmaxAlgo : std::uint8_t { max, most_recent };

struct DelayedScalingConfig {
  int margin = 0;                       // scale = fmt_max / amax / 2^margin
  std::size_t amax_history_len = 1024;  // TE's default
  AmaxAlgo amax_compute_algo = AmaxAlgo::max;
  double fmt_max = 448;  // the element format's largest finite value
};

// Transformer Engine's DelayedScaling state, one tensor's: the scale used by this step's
// quantization, and the amax history whose slot 0 collects this step's amax. update() is TE's
// amax_and_scale_update (delayed_scaling.cu), run after the step: the amax for the next scale is
// the fmaxf over the whole window (max; NaN ignored) or slot 0 (most_recent); the history is
// rolled left by one, slot 0's amax moving to the end and slot 0 cleared for the next step; the
// scale becomes fl32(fl32(fmt_max * 2^-margin) / amax) when that amax is finite and positive,
// fp32's largest value when the quotient overflows, and stays as it was otherwise.
class DelayedScaling {
 public:
  // TE starts with scale 1 and an all-zero history. Throws std::invalid_argument for a zero
  // history length or a margin outside [-126, 126].
  explicit DelayedScaling(const DelayedScalingConfig& config, float initial_scale = 1.0f);
  float scale() const { return scale_; }
  // This step's amax of the tensor (max with what slot 0 holds; NaN ignored, as fmaxf does).
  void record(float amax);
  void update();
  const std::vector<float>& history() const { return history_; }
  const DelayedScalingConfig& config() const { return config_; }

 private:
  DelayedScalingConfig config_;
  std::vector<float> history_;
  float scale_;
};

// ---- quantized tensors --------------------------------------------------------------------------

// How a tile's scale was chosen and is stored.
enum class ScaleRule : std::uint8_t {
  fp32_given,  // one fp32 scale for the tensor, given (delayed scaling)
  fp32_amax,   // an fp32 scale from the tile's amax (current scaling, blockwise)
  mx_e8m0,     // OCP MX: X = 2^(floor(log2(amax)) - emax_elem) in E8M0
  nvfp4,       // NVFP4: fp32 tensor scale and an E4M3 block scale
};

// Counts over a quantized tensor.
struct QuantEvents {
  std::uint64_t elements = 0;
  std::uint64_t saturated = 0;  // beyond the element format's largest value after scaling: clamped
  std::uint64_t flushed = 0;    // nonzero inputs that became zero
  std::uint64_t subnormal = 0;  // nonzero results that are subnormal in the element format
  std::uint64_t nan = 0;        // NaN inputs, or elements of a block whose scale is NaN
  std::uint64_t blocks = 0;
  std::uint64_t blocks_lost = 0;  // blocks with a nonzero finite input that dequantize to all zeros
};

// One scaling tile (a block, or the whole tensor) and its scale.
struct Tile {
  std::size_t row = 0, col = 0;    // its first element
  std::size_t rows = 0, cols = 0;  // its extent
  double amax = 0;
  // What the inputs are multiplied by before rounding (fp32 rules, NVFP4: a binary32 value, the
  // product rounded to binary32 as TE's cast kernels do; MX: 1/X, the division exact).
  double scale = 1;
  // The stored scale: the binary32 bits of `scale` (fp32 rules), the E8M0 pattern of X (MX), the
  // E4M3 pattern of the block decode scale (NVFP4); NaN scales have the format's NaN pattern.
  std::uint64_t scale_bits = 0;
  double decode_scale = 1;  // dequantized = element value * decode_scale, exact in binary64
  bool lost = false;
};

struct Quantized {
  Format element;
  Rounding mode = Rounding::nearest_even;
  ScaleRule rule = ScaleRule::fp32_amax;
  std::size_t rows = 0, cols = 0;
  std::size_t block_rows = 0, block_cols = 0;
  // NVFP4: the fp32 tensor encode scale S_enc = fl32(448 * 6 / amax) and its decode scale
  // fl32(1 / S_enc); 1 for the other rules.
  double global_scale = 1;
  double global_decode = 1;
  double tensor_amax = 0;
  std::vector<Tile> tiles;  // row-major over the tiles
  std::vector<std::uint64_t> bits;
  std::vector<double> values;       // element values
  std::vector<double> dequantized;  // values * their tile's decode_scale
  std::vector<numeric::RoundingEvent> element_events;
  QuantEvents events;
};

// A row-major rows x cols tensor cut into block_rows x block_cols tiles: both must divide their
// dimension (std::invalid_argument naming the dimension otherwise). Elements are rounded with
// mode, stochastic draw i for element i of stream seed. The element format saturates (every
// recipe's conversion does: cvt .satfinite; OCP MX clamps to the largest normal).
struct Layout {
  std::size_t rows = 1, cols = 1;
  std::size_t block_rows = 1, block_cols = 1;
  Rounding mode = Rounding::nearest_even;
  std::uint64_t seed = 0;
};

// One fp32 scale for the whole tensor (delayed scaling): the block must be the tensor.
Quantized quantize_with_scale(std::span<const float> x, const Layout& layout, const Format& element,
                              float scale);
// Each tile's own fp32 scale, current_scale of its amax (fp8-current with one tile, fp8-block
// with 1x128 and 128x128 tiles).
Quantized quantize_current(std::span<const float> x, const Layout& layout, const Format& element,
                           bool pow2);
// OCP MX v1.0 (its conversion of a block): per block, shared_exp = floor(log2(amax)) - emax_elem
// clamped to E8M0's
// [-127, 127], X = 2^shared_exp, P_i = the element rounding of V_i / X, saturating. A block with a
// NaN or infinite input gets the NaN scale 0xFF and NaN elements; an all-zero block 2^-127.
//
// MxScale::round_up chooses the scale as Transformer Engine's MXFP8BlockScaling does instead
// (transformer_engine/common/util/ptx.cuh float_to_e8m0, cvt.rp.satfinite.ue8m0x2.f32): X = the
// E8M0 value at or above v = fl32(amax * fl32(1 / max_elem)), 2^-127 for v <= 2^-127 and 2^127 at
// most, so that the block's largest element fits and nothing saturates. (TE then multiplies by 1,
// not 2^127, where X = 2^-127, which loses blocks with amax below about 2^-118; here such a block
// is scaled by 2^127 as X says.)
enum class MxScale : std::uint8_t { ocp, round_up };
Quantized quantize_mx(std::span<const float> x, const Layout& layout, const Format& element,
                      MxScale scale = MxScale::ocp);
// NVIDIA's NVFP4 (TE NVFP4BlockScaling): S_enc = fl32(2688 / tensor amax) (fp32's largest when
// that overflows, 1 for a zero amax or a zero quotient); per block the E4M3 decode scale
// s_b = e4m3_satfinite(fl32(amax_b * fl32(S_enc * fl32(1/6)))), the encode scale
// min(fl32(1 / fl32(s_b * fl32(1 / S_enc))), fp32 max), elements e2m1(fl32(x * encode)).
// Dequantized = q * s_b * fl32(1 / S_enc).
Quantized quantize_nvfp4(std::span<const float> x, const Layout& layout);

// Rows [first, first + count) of a quantized tensor, for a product of a batch's matrices stacked
// into one tensor (quantized once, so that per-tensor scales span the batch): their element codes,
// values, dequantized values and events, their tiles (rows counted from the slice's first), the
// tensor's global scales and amax. Its `events` are not recounted: they stay the whole tensor's.
// std::invalid_argument unless first and count are multiples of the block rows within the rows
// (any rows of a tensor with one row of tiles, a per-tensor scale's).
Quantized row_slice(const Quantized& q, std::size_t first, std::size_t count);

// ---- the fast path: element codes and block scales only
// ------------------------------------------

// A block-scaled tensor as a block-scaled GEMM reads it: one element code per byte (e4m3/e5m2 in 8
// bits, e3m2/e2m3 in the low 6, e2m1 in the low 4; not packed), row-major, and one scale pattern
// per tile, row-major over the tiles (E8M0 for MX, UE4M3 for NVFP4). No values, dequantized values
// or events: `bits` and `scale_bits` are, bit for bit, Quantized::bits and the tiles' scale_bits of
// the reference quantizer given the same arguments (quant_scaling_fast_test checks it).
struct BlockScaled {
  Format element;
  ScaleRule rule = ScaleRule::mx_e8m0;
  std::size_t rows = 0, cols = 0;
  std::size_t block_rows = 0, block_cols = 0;
  std::vector<std::uint8_t> bits;
  std::vector<std::uint8_t> scale_bits;
  // NVFP4: S_enc and S_dec, as Quantized::global_scale and global_decode; 1 for MX.
  float global_scale = 1, global_decode = 1;
};

// quantize_mx and quantize_nvfp4 without the per-element record: the same layout checks and errors,
// and the same codes and scales. The fast path covers the MX elements e4m3, e5m2, e3m2, e2m3 and
// e2m1 with nearest-even or stochastic_proportional rounding (vectorised, x86-64-v3/v4 clones); a
// block holding a NaN or an infinity (NaN scale) has its elements rounded by the reference
// round_to; any other element format or mode runs the reference quantizer and keeps its codes.
// `out` is resized and overwritten (its storage is reused when the sizes already match).
void quantize_mx_fast(std::span<const float> x, const Layout& layout, const Format& element,
                      BlockScaled& out);
void quantize_nvfp4_fast(std::span<const float> x, const Layout& layout, BlockScaled& out);
BlockScaled quantize_mx_fast(std::span<const float> x, const Layout& layout, const Format& element);
BlockScaled quantize_nvfp4_fast(std::span<const float> x, const Layout& layout);

namespace detail {
// Throws std::invalid_argument unless x has rows x cols values and the blocks divide the shape.
void check_layout(std::span<const float> x, const Layout& layout);
// x rounded to binary32, nearest even, as a binary64 (round_to's result), whatever the
// floating-point environment's rounding mode; quick (inline) where the result is a normal binary32
// value, round_to_binary32_by_round_to elsewhere.
double round_to_binary32_by_round_to(double x);
inline double round_to_binary32(double x) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (const double magnitude = std::fabs(x); magnitude >= 0x1p-126 && magnitude <= kMax) {
    // The binary64 encoding rounded to 23 fraction bits in place; a carry moves up a binade.
    const auto u = std::bit_cast<std::uint64_t>(x);
    const std::uint64_t rounded =
        (u + ((std::uint64_t{1} << 28) - 1) + ((u >> 29) & 1)) & ~((std::uint64_t{1} << 29) - 1);
    const double r = std::bit_cast<double>(rounded);
    if (std::fabs(r) <= kMax) return r;
  }
  return round_to_binary32_by_round_to(x);
}
// The saturating codes (round_to with Overflow::saturate) of the binary32 values x in an MX
// element format (e4m3, e5m2, e3m2, e2m3, e2m1), nearest even or, with `stochastic`, with element i
// drawing stochastic_draw(seed, first_index + i); the fast path's vectorised loops
// (scaling_fast.cpp). False, with nothing written, for another format. x holds no NaN.
bool encode_saturating(const Format& element, bool stochastic, std::span<const float> x,
                       std::uint8_t* out, std::uint64_t seed, std::uint64_t first_index);
}  // namespace detail

// The largest finite value of a format.
double max_finite(const Format& f);

}  // namespace ampbench::quant
