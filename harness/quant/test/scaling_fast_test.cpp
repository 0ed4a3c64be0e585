// The fast MX and NVFP4 quantizers (quantize_mx_fast, quantize_nvfp4_fast), and the GPU
// quantizers' math (harness/numeric/scale_math.hpp run on the host in the order
// kernels/quant_kernels.cu runs it: every rule, fp32 per-tensor and per-tile scales and MX's
// round-up scale included), against the reference quantizers, bit for bit: every element code,
// every block scale pattern, NVFP4's global scales.
// (a) every block shape and role on tensors of every distribution of harness/inputs, with NaN,
// infinity and zero blocks planted; (b) RapidCheck: arbitrary blocks of arbitrary binary32 patterns
// and special values, random shapes, both modes; (c) edge blocks: all zeros, amax a power of two,
// amax at the element format's largest value, scales that saturate or underflow E8M0, NaN blocks.
// Run under AMPBENCH_ISA is not needed: the clones are picked by the CPU; the x86-64-v3 and default
// clones are the same C++ and are exercised on the machines that lack v4.
//
// On failure RapidCheck prints a replay string: RC_PARAMS="reproduce=..." reruns that case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/numeric/scale_math.hpp"
#include "harness/quant/scaling.hpp"
#include "harness/quant/test/reference_difference.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const Format* const kMxElements[] = {&formats::e4m3, &formats::e5m2, &formats::e3m2, &formats::e2m3,
                                     &formats::e2m1};

// The first difference between the fast result and the reference, or "" when they agree.
std::string difference(const BlockScaled& fast, const Quantized& ref) {
  std::string d = test::reference_difference(fast, ref);
  if (d.empty() &&
      (fast.element.overflow != ref.element.overflow || !same_values(fast.element, ref.element))) {
    d = "element formats differ";
  }
  return d;
}

namespace sm = numeric::scale_math;

// What the GPU quantizers compute, by the functions they run, in their order: each tile's amax and
// NaN flag (the first kernel), the tensor's amax from the tiles' and each tile's scale (the
// second), each element's code with draw k of the layout's stream for element k (the third).
struct DeviceMath {
  std::vector<std::uint64_t> bits, scale_bits;
  float global_scale = 1, global_decode = 1;
};

DeviceMath device_math(const std::vector<float>& x, const Layout& l, const Format& element,
                       sm::TileRule rule, float given = 1) {
  Format saturating = element;
  saturating.overflow = numeric::Overflow::saturate;
  const std::size_t tiles_c = l.cols / l.block_cols;
  const std::size_t tiles = (l.rows / l.block_rows) * tiles_c;
  const auto tile_of = [&](std::size_t k) {
    return (k / l.cols / l.block_rows) * tiles_c + (k % l.cols) / l.block_cols;
  };
  std::vector<float> amax(tiles, 0.0f);
  std::vector<bool> nan(tiles, false);
  for (std::size_t k = 0; k < x.size(); ++k) {
    amax[tile_of(k)] = sm::amax_step(amax[tile_of(k)], x[k]);
    if (std::isnan(x[k])) nan[tile_of(k)] = true;
  }
  float tensor_amax = 0;
  for (const float a : amax) tensor_amax = sm::amax_step(tensor_amax, a);
  const sm::Nvfp4Tensor nvfp4 = sm::nvfp4_tensor(tensor_amax);
  DeviceMath d;
  std::vector<sm::TileScale> scales(tiles);
  for (std::size_t t = 0; t < tiles; ++t) {
    scales[t] = sm::tile_scale(rule, saturating, amax[t], nan[t], given, nvfp4);
    d.scale_bits.push_back(scales[t].bits);
  }
  for (std::size_t k = 0; k < x.size(); ++k) {
    const std::uint32_t random =
        numeric::is_stochastic(l.mode) ? numeric::stochastic_draw(l.seed, k) : 0u;
    d.bits.push_back(sm::element_code(rule, saturating, l.mode, x[k], scales[tile_of(k)], random));
  }
  if (rule == sm::TileRule::nvfp4) {
    d.global_scale = nvfp4.s_enc;
    d.global_decode = nvfp4.s_dec;
  }
  return d;
}

std::string difference(const DeviceMath& d, const Quantized& ref) {
  const std::string e = test::reference_difference(d, ref);
  return e.empty() ? e : "device math: " + e;
}

// The first of the two differences (the fast path's, the device math's), or "".
std::string first(std::string a, std::string b) {
  return a.empty() ? b : a;
}

// MX: the fast path and the device math under OCP's scale, and the device math under TE's
// round-up scale.
std::string check_mx(const std::vector<float>& x, const Layout& l, const Format& element) {
  const Quantized ref = quantize_mx(x, l, element);
  return first(first(difference(quantize_mx_fast(x, l, element), ref),
                     difference(device_math(x, l, element, sm::TileRule::mx_ocp), ref)),
               difference(device_math(x, l, element, sm::TileRule::mx_round_up),
                          quantize_mx(x, l, element, MxScale::round_up)));
}

std::string check_nvfp4(const std::vector<float>& x, const Layout& l) {
  const Quantized ref = quantize_nvfp4(x, l);
  return first(difference(quantize_nvfp4_fast(x, l), ref),
               difference(device_math(x, l, formats::e2m1, sm::TileRule::nvfp4), ref));
}

// fp32 scales (the reference has no fast path for them): each tile's own scale, plain and as a
// power of two, and (on one tile) a given scale.
std::string check_fp32(const std::vector<float>& x, const Layout& l, const Format& element,
                       float given) {
  std::string d = first(difference(device_math(x, l, element, sm::TileRule::fp32_amax),
                                   quantize_current(x, l, element, false)),
                        difference(device_math(x, l, element, sm::TileRule::fp32_amax_pow2),
                                   quantize_current(x, l, element, true)));
  if (l.block_rows == l.rows && l.block_cols == l.cols) {
    d = first(d, difference(device_math(x, l, element, sm::TileRule::fp32_given, given),
                            quantize_with_scale(x, l, element, given)));
  }
  return d;
}

Layout layout(std::size_t rows, std::size_t cols, std::size_t br, std::size_t bc,
              Rounding mode = Rounding::nearest_even, std::uint64_t seed = 0) {
  return {
      .rows = rows, .cols = cols, .block_rows = br, .block_cols = bc, .mode = mode, .seed = seed};
}

// ---- (a) the distributions of harness/inputs --------------------------------------------------

std::vector<float> tensor_of(const std::string& spec, std::size_t n, std::uint64_t seed) {
  const std::vector<std::size_t> shape{n};
  const inputs::Generated g = inputs::generate(spec, shape, formats::fp32, seed);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(g.tensor.data[i]);
  return x;
}

// Plants, by seed, a whole block of zeros, one with a NaN, one with an infinity and one with a
// binary32 subnormal amax into the tensor (rows x cols, blocks of br x bc).
void plant(std::vector<float>& x, const Layout& l, std::uint64_t seed) {
  const std::size_t tiles_r = l.rows / l.block_rows;
  const std::size_t tiles_c = l.cols / l.block_cols;
  const auto block = [&](std::uint64_t j, auto&& set) {
    const std::uint64_t t = numeric::splitmix64(seed, j) % (tiles_r * tiles_c);
    const std::size_t r0 = (t / tiles_c) * l.block_rows;
    const std::size_t c0 = (t % tiles_c) * l.block_cols;
    for (std::size_t r = r0; r < r0 + l.block_rows; ++r) {
      for (std::size_t c = c0; c < c0 + l.block_cols; ++c) set(x[r * l.cols + c], r * l.cols + c);
    }
  };
  block(0, [](float& v, std::size_t) { v = 0; });
  block(1, [](float& v, std::size_t k) { v = k % 2 ? -0.0f : 0.0f; });
  block(2, [](float& v, std::size_t k) {
    if (k % 7 == 3) v = k % 2 ? -kNaN : kNaN;
  });
  block(3, [](float& v, std::size_t k) {
    if (k % 5 == 1) v = k % 2 ? -kInf : kInf;
  });
  block(4, [](float& v, std::size_t k) {
    v = std::bit_cast<float>(static_cast<std::uint32_t>(k * 2654435761u) & 0x807FFFFFu);
  });
}

struct Shape {
  std::size_t rows, cols, br, bc;
};

// The roles' blocks: MX 1x32 along K for every operand (and 32x1 for a K-major operand), NVFP4 1x16
// for activations and gradients and 16x16 for weights; plus a tensor of a single block.
const Shape kMxShapes[] = {{64, 256, 1, 32}, {64, 96, 32, 1}, {32, 64, 32, 32}, {1, 32, 1, 32}};
const Shape kNvShapes[] = {{64, 256, 1, 16}, {64, 128, 16, 16}, {16, 16, 16, 16}, {8, 48, 1, 16}};
// fp32 scales: per tensor (fp8-delayed, fp8-current), 1x128 and 128x128 tiles (fp8-block).
const Shape kFp32Shapes[] = {{32, 64, 32, 64}, {4, 256, 1, 128}, {128, 128, 128, 128}};

const char* const kSpecs[] = {
    "normal",
    "normal:mu=0,sigma=1e-30",
    "normal:mu=0,sigma=1e30",
    "uniform:a=-448,b=448",
    "loguniform",
    "loguniform:emin=-20,emax=20",
    "near-overflow",
    "near-overflow:factor=1e30",
    "subnormal",
    "cancel",
    "relu",
};

TEST(FastQuantizers, MatchReferenceOnEveryDistribution) {
  std::uint64_t seed = 1900;
  for (const char* spec : kSpecs) {
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      for (const Shape& s : kMxShapes) {
        for (const Format* element : kMxElements) {
          const Layout l = layout(s.rows, s.cols, s.br, s.bc, mode, ++seed);
          std::vector<float> x = tensor_of(spec, s.rows * s.cols, seed);
          EXPECT_EQ(check_mx(x, l, *element), "") << spec << " " << element->name;
          plant(x, l, seed);
          EXPECT_EQ(check_mx(x, l, *element), "") << spec << " planted " << element->name;
        }
      }
      for (const Shape& s : kNvShapes) {
        const Layout l = layout(s.rows, s.cols, s.br, s.bc, mode, ++seed);
        std::vector<float> x = tensor_of(spec, s.rows * s.cols, seed);
        EXPECT_EQ(check_nvfp4(x, l), "") << spec;
        plant(x, l, seed);
        EXPECT_EQ(check_nvfp4(x, l), "") << spec << " planted";
      }
      for (const Shape& s : kFp32Shapes) {
        for (const Format* element : {&formats::e4m3, &formats::e5m2}) {
          const Layout l = layout(s.rows, s.cols, s.br, s.bc, mode, ++seed);
          std::vector<float> x = tensor_of(spec, s.rows * s.cols, seed);
          EXPECT_EQ(check_fp32(x, l, *element, 3.0f), "") << spec << " " << element->name;
          plant(x, l, seed);
          EXPECT_EQ(check_fp32(x, l, *element, 0x1p-100f), "")
              << spec << " planted " << element->name;
        }
      }
    }
  }
}

// ---- (b) properties
// ------------------------------------------------------------------------------

rc::Gen<float> any_float() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::arbitrary<std::uint32_t>(),
                   [](std::uint32_t u) { return std::bit_cast<float>(u); }),
      rc::gen::element(0.0f, -0.0f, kNaN, -kNaN, kInf, -kInf, 448.0f, 57344.0f, 6.0f, 28.0f, 7.5f,
                       0x1p-149f, 0x1p-126f, std::numeric_limits<float>::max(), 0.25f, 1.5f, 3.0f),
      rc::gen::map(rc::gen::pair(rc::gen::inRange(-60, 60), rc::gen::inRange(0, 16)),
                   [](std::pair<int, int> p) {
                     return std::ldexp(1.0f + static_cast<float>(p.second) / 16.0f, p.first);
                   }));
}

struct Case {
  Layout l;
  std::vector<float> x;
};

rc::Gen<Case> any_case() {
  return rc::gen::exec([] {
    Case c;
    const std::size_t br = *rc::gen::element<std::size_t>(1, 2, 16);
    const std::size_t bc = *rc::gen::element<std::size_t>(1, 16, 32);
    c.l =
        layout(br * *rc::gen::inRange<std::size_t>(1, 3), bc * *rc::gen::inRange<std::size_t>(1, 3),
               br, bc, *rc::gen::element(Rounding::nearest_even, Rounding::stochastic_proportional),
               *rc::gen::arbitrary<std::uint64_t>());
    // A scale factor per case, so that whole tensors sit anywhere in binary32's range.
    const float scale = std::ldexp(1.0f, *rc::gen::inRange(-140, 120));
    c.x = *rc::gen::container<std::vector<float>>(c.l.rows * c.l.cols, any_float());
    if (*rc::gen::arbitrary<bool>()) {
      for (float& v : c.x) v *= scale;
    }
    return c;
  });
}

RC_GTEST_PROP(FastQuantizers, MxMatchesReference, ()) {
  const Case c = *any_case();
  const Format& element = *kMxElements[*rc::gen::inRange<std::size_t>(0, std::size(kMxElements))];
  const std::string d = check_mx(c.x, c.l, element);
  RC_ASSERT(d == "");
}

RC_GTEST_PROP(FastQuantizers, Nvfp4MatchesReference, ()) {
  const Case c = *any_case();
  const std::string d = check_nvfp4(c.x, c.l);
  RC_ASSERT(d == "");
}

RC_GTEST_PROP(DeviceQuantizerMath, Fp32ScalesMatchReference, ()) {
  Case c = *any_case();
  if (*rc::gen::arbitrary<bool>()) {  // one tile: the per-tensor rules, a given scale too
    c.l.block_rows = c.l.rows;
    c.l.block_cols = c.l.cols;
  }
  const Format& element = **rc::gen::element(&formats::e4m3, &formats::e5m2);
  const float given = std::ldexp(1.0f + static_cast<float>(*rc::gen::inRange(0, 64)) / 64.0f,
                                 *rc::gen::inRange(-120, 120));
  const std::string d = check_fp32(c.x, c.l, element, given);
  RC_ASSERT(d == "");
}

// ---- (c) edge blocks
// -----------------------------------------------------------------------------

// One 1x32 block whose largest magnitude is `amax` (sign alternating), the rest filled by `fill`.
std::vector<float> block_with(float amax, float fill, std::size_t n = 32) {
  std::vector<float> x(n, fill);
  x[n / 2] = -amax;
  x[1] = amax;
  return x;
}

TEST(FastQuantizers, EdgeBlocks) {
  const float max = std::numeric_limits<float>::max();
  std::vector<std::vector<float>> blocks = {
      std::vector<float>(32, 0.0f),
      std::vector<float>(32, -0.0f),
      block_with(1.0f, 0.3f),                 // amax a power of two
      block_with(0x1p-126f, 0x1p-130f),       // smallest normal amax, subnormal elements
      block_with(0x1p-149f, 0.0f),            // E8M0 underflow: the scale clamps at 2^-127
      block_with(0x1p-140f, -0x1p-149f),      //   and the elements scaled by 2^127
      block_with(max, 1.0f),                  // the largest binary32 amax
      block_with(0x1p127f, 0x1.fffffep126f),  // amax 2^127: the largest E8M0 exponent reached
      block_with(kInf, 1.0f),                 // an infinity: NaN scale
      block_with(1.0f, kNaN),                 // NaN: NaN scale
      block_with(-kNaN, 2.0f),
  };
  // amax at each element format's largest value, and just past it (rounds up to a new binade).
  for (const float m :
       {448.0f, 57344.0f, 28.0f, 7.5f, 6.0f, 464.0f, 61440.0f, 30.0f, 7.75f, 7.0f}) {
    blocks.push_back(block_with(m, m * 0.99f));
    blocks.push_back(block_with(m, m / 3.0f));
  }
  for (const auto& x : blocks) {
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      for (const Format* element : kMxElements) {
        EXPECT_EQ(check_mx(x, layout(1, 32, 1, 32, mode, 7), *element), "")
            << element->name << " amax " << x[1];
      }
      EXPECT_EQ(check_nvfp4(x, layout(2, 16, 1, 16, mode, 7)), "") << "amax " << x[1];
      EXPECT_EQ(check_nvfp4(x, layout(1, 32, 1, 16, mode, 7)), "") << "amax " << x[1];
      for (const Format* element : {&formats::e4m3, &formats::e5m2}) {
        EXPECT_EQ(check_fp32(x, layout(1, 32, 1, 32, mode, 7), *element, 0x1p-20f), "")
            << element->name << " amax " << x[1];
        EXPECT_EQ(check_fp32(x, layout(2, 16, 1, 16, mode, 7), *element, 1.0f), "")
            << element->name << " amax " << x[1];
      }
    }
  }
}

// NVFP4 multiplies S_enc by fl32(1/6) (TE's S_enc * (1/6)), which is not fl32(S_enc / 6): with
// these amaxes (found by search) the two put fl32(amax_b * ...) on either side of an e4m3 tie
// (1.1875, between 1.125 and 1.25), and the block scales differ.
TEST(FastQuantizers, Nvfp4TakesTheSixthAsTeDoes) {
  for (const auto& [tensor_amax, block_amax] :
       {std::pair{0x1.0d294cp+9f, 0x1.6d4a54p+0f}, std::pair{0x1.8a635ap+11f, 0x1.dee65cp+2f},
        std::pair{0x1.b0e8acp+10f, 0x1.06d66ap+2f}}) {
    std::vector<float> x(32, 0.25f);
    x[3] = tensor_amax;
    x[16 + 5] = -block_amax;
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      EXPECT_EQ(check_nvfp4(x, layout(1, 32, 1, 16, mode, 11)), "") << tensor_amax;
    }
  }
}

// Every e4m3 block scale, 0 through 0x7E (448), subnormal ones included: a tensor amax of 2688
// makes S_enc 1, so block b with amax 6 * e4m3(b) (exact in binary32) wants the scale e4m3(b)
// itself. The fast path decodes the scale by arithmetic; its elements must still be the
// reference's, in both modes and with 2D (16x16) tiles as for weights.
TEST(FastQuantizers, Nvfp4EveryBlockScale) {
  constexpr std::size_t kScales = 0x7F;
  for (const std::size_t rows : {std::size_t{1}, std::size_t{16}}) {
    std::vector<float> x(rows * 16 * kScales);
    const std::size_t cols = 16 * kScales;
    for (std::size_t b = 0; b < kScales; ++b) {
      const auto amax = static_cast<float>(6 * numeric::decode(formats::e4m3, b));
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t j = 0; j < 16; ++j) {
          // amax, then the ratios j / 16 of it on both signs: every e2m1 code and its ties.
          const float v = j == 0 ? amax : amax * static_cast<float>(j) / 16.0f;
          x[r * cols + b * 16 + j] = (r + j) % 2 == 0 ? v : -v;
        }
      }
    }
    for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
      const Layout l = layout(rows, cols, rows, 16, mode, 5);
      EXPECT_EQ(check_nvfp4(x, l), "") << rows << " rows";
      const BlockScaled q = quantize_nvfp4_fast(x, l);
      ASSERT_EQ(q.global_scale, 1.0f);
      for (std::size_t b = 0; b < kScales; ++b) EXPECT_EQ(q.scale_bits[b], b);
    }
  }
}

TEST(FastQuantizers, ScalesOfEdgeBlocksAsTheSpecSays) {
  // e4m3 (emax 8): amax 1 gives X = 2^-8, pattern 119; amax 2^-149 clamps to 2^-127, pattern 0.
  EXPECT_EQ(
      quantize_mx_fast(block_with(1.0f, 0.0f), layout(1, 32, 1, 32), formats::e4m3).scale_bits[0],
      119u);
  EXPECT_EQ(quantize_mx_fast(block_with(0x1p-149f, 0.0f), layout(1, 32, 1, 32), formats::e4m3)
                .scale_bits[0],
            0u);
  EXPECT_EQ(
      quantize_mx_fast(block_with(1.0f, kNaN), layout(1, 32, 1, 32), formats::e2m1).scale_bits[0],
      0xFFu);
  // An all-zero tensor: NVFP4's S_enc is 1, every block scale 0 and every element +0.
  const BlockScaled z = quantize_nvfp4_fast(std::vector<float>(32, 0.0f), layout(1, 32, 1, 16));
  EXPECT_EQ(z.global_scale, 1.0f);
  EXPECT_EQ(z.scale_bits, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_EQ(z.bits, std::vector<std::uint8_t>(32, 0));
}

TEST(FastQuantizers, OtherFormatsAndModesFallBackToTheReference) {
  const std::vector<float> x = tensor_of("normal", 64, 3);
  EXPECT_EQ(check_mx(x, layout(2, 32, 1, 32, Rounding::toward_zero, 1), formats::e4m3), "");
  EXPECT_EQ(check_nvfp4(x, layout(4, 16, 1, 16, Rounding::stochastic_equal, 1)), "");
  EXPECT_THROW(quantize_mx_fast(x, layout(2, 32, 1, 24), formats::e4m3), std::invalid_argument);
  EXPECT_THROW(quantize_nvfp4_fast(x, layout(3, 16, 1, 16)), std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::quant
