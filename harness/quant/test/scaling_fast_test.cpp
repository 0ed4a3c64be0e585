// The fast MX and NVFP4 quantizers (quantize_mx_fast, quantize_nvfp4_fast) against the reference
// quantizers, bit for bit: every element code, every block scale pattern, NVFP4's global scales.
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
#include "harness/quant/scaling.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const Format* const kMxElements[] = {&formats::e4m3, &formats::e5m2, &formats::e3m2, &formats::e2m3,
                                     &formats::e2m1};

// The first difference between the fast result and the reference, or "" when they agree.
std::string difference(const BlockScaled& fast, const Quantized& ref) {
  if (fast.bits.size() != ref.bits.size()) return "element counts differ";
  if (fast.scale_bits.size() != ref.tiles.size()) return "tile counts differ";
  for (std::size_t t = 0; t < ref.tiles.size(); ++t) {
    if (fast.scale_bits[t] != ref.tiles[t].scale_bits) {
      return "tile " + std::to_string(t) + ": scale " + std::to_string(fast.scale_bits[t]) +
             ", reference " + std::to_string(ref.tiles[t].scale_bits) + " (amax " +
             std::to_string(ref.tiles[t].amax) + ")";
    }
  }
  for (std::size_t k = 0; k < ref.bits.size(); ++k) {
    if (fast.bits[k] != ref.bits[k]) {
      return "element " + std::to_string(k) + ": code " + std::to_string(fast.bits[k]) +
             ", reference " + std::to_string(ref.bits[k]);
    }
  }
  if (static_cast<double>(fast.global_scale) != ref.global_scale ||
      static_cast<double>(fast.global_decode) != ref.global_decode) {
    return "global scales differ";
  }
  if (fast.element.overflow != ref.element.overflow || !same_values(fast.element, ref.element)) {
    return "element formats differ";
  }
  return "";
}

std::string check_mx(const std::vector<float>& x, const Layout& l, const Format& element) {
  return difference(quantize_mx_fast(x, l, element), quantize_mx(x, l, element));
}

std::string check_nvfp4(const std::vector<float>& x, const Layout& l) {
  return difference(quantize_nvfp4_fast(x, l), quantize_nvfp4(x, l));
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
