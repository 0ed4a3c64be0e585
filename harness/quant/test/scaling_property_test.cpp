// Properties of the scaling math. The delayed-scaling state is stateful: random sequences of
// recorded amaxes (zero, NaN, infinite, spikes, subnormal) and updates, run on DelayedScaling and
// on a model written here from Transformer Engine's description (the scale from the largest, or the
// latest, of the last amax_history_len steps' amaxes, fmax_fp8 / amax / 2^margin in binary32, kept
// when that amax is zero or not finite); the model keeps a plain list of the steps' amaxes and
// never rolls anything. The others: MX scales are exact powers of two and every element that does
// not saturate dequantizes within half an ulp of the element format times the scale; power-of-two
// current scaling never saturates and meets the same bound; stochastic rounding lands on one of
// the two neighbours.
//
// On failure RapidCheck prints the shrunk sequence and a replay string; rerun that case with
// RC_PARAMS="reproduce=<string>". RC_PARAMS="max_success=2000" searches longer.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/quant/scaling.hpp"

namespace ampbench::quant {
namespace {

namespace formats = numeric::formats;

double f32(double x) {
  return numeric::round_to(formats::fp32, Rounding::nearest_even, x).value;
}

// ---- the delayed-scaling model ------------------------------------------------------------------

struct Model {
  DelayedScalingConfig config;
  std::vector<double> steps;  // every finished step's amax, oldest first
  double current = 0;         // this step's amax so far
  double scale = 1;
};

double window_amax(const Model& m) {
  if (m.config.amax_compute_algo == AmaxAlgo::most_recent) return m.steps.back();
  const std::size_t n = std::min(m.steps.size(), m.config.amax_history_len);
  return *std::max_element(m.steps.end() - static_cast<std::ptrdiff_t>(n), m.steps.end());
}

using Command = rc::state::Command<Model, DelayedScaling>;

void check_state(const Model& m, const DelayedScaling& sut) {
  RC_ASSERT(static_cast<double>(sut.scale()) == m.scale);
  // Slot 0 holds this step's amax; slots 1.. the last len - 1 steps', oldest first.
  const std::vector<float>& h = sut.history();
  RC_ASSERT(h.size() == m.config.amax_history_len);
  RC_ASSERT(static_cast<double>(h[0]) == m.current);
  for (std::size_t i = 1; i < h.size(); ++i) {
    const std::size_t back = h.size() - i;  // slot len-1 is the latest step
    const double want = back <= m.steps.size() ? m.steps[m.steps.size() - back] : 0.0;
    RC_ASSERT(static_cast<double>(h[i]) == want);
  }
}

rc::Gen<float> amax_values() {
  return rc::gen::oneOf(
      rc::gen::element(0.0f, std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(), 1e30f, 0x1p-149f, 448.0f),
      rc::gen::map(rc::gen::inRange(-40, 40),
                   [](int e) { return std::ldexp(1.0f + 0.375f * static_cast<float>(e & 3), e); }));
}

struct Record : Command {
  float amax = *amax_values();
  void apply(Model& m) const override {
    if (!std::isnan(amax)) m.current = std::max(m.current, static_cast<double>(amax));
  }
  void run(const Model& m, DelayedScaling& sut) const override {
    sut.record(amax);
    Model next = m;
    apply(next);
    check_state(next, sut);
  }
  void show(std::ostream& os) const override { os << "Record " << amax; }
};

struct Update : Command {
  void apply(Model& m) const override {
    m.steps.push_back(m.current);
    m.current = 0;
    const double a = window_amax(m);
    if (std::isfinite(a) && a > 0) {
      const double s = f32(f32(m.config.fmt_max * std::ldexp(1.0, -m.config.margin)) / a);
      m.scale = std::isinf(s) ? std::numeric_limits<float>::max() : s;
    }
  }
  void run(const Model& m, DelayedScaling& sut) const override {
    sut.update();
    Model next = m;
    apply(next);
    check_state(next, sut);
  }
  void show(std::ostream& os) const override { os << "Update"; }
};

RC_GTEST_PROP(DelayedScalingStateMachine, MatchesTheModel, ()) {
  Model m;
  m.config.amax_history_len = *rc::gen::inRange<std::size_t>(1, 7);
  m.config.margin = *rc::gen::inRange(-3, 4);
  m.config.amax_compute_algo = *rc::gen::element(AmaxAlgo::max, AmaxAlgo::most_recent);
  m.config.fmt_max = *rc::gen::element(448.0, 57344.0);
  DelayedScaling sut(m.config);
  rc::state::check(m, sut, rc::state::gen::execOneOfWithArgs<Record, Record, Update>());
}

// ---- block quantizers ---------------------------------------------------------------------------

// Binary32 values with exponents in [lo, hi), random signs and 24-bit significands.
rc::Gen<std::vector<float>> block(std::size_t n, int lo, int hi) {
  return rc::gen::container<std::vector<float>>(
      n, rc::gen::apply(
             [](bool negative, std::uint32_t m, int e) {
               const auto v = static_cast<float>(std::ldexp(static_cast<double>(m & 0xFFFFFFu), e));
               return negative ? -v : v;
             },
             rc::gen::arbitrary<bool>(), rc::gen::arbitrary<std::uint32_t>(),
             rc::gen::inRange(lo, hi)));
}

// The gap between the element format's values around |y| (its ulp there).
double ulp(const Format& f, double y) {
  if (y == 0) return std::ldexp(1.0, f.emin - f.fraction_bits());
  return std::ldexp(1.0, std::max(std::ilogb(y), f.emin) - f.fraction_bits());
}

// One MX block of 32 in a row.
Layout mx_block(Rounding mode = Rounding::nearest_even, std::uint64_t seed = 0) {
  Layout l;
  l.cols = 32;
  l.block_cols = 32;
  l.mode = mode;
  l.seed = seed;
  return l;
}

rc::Gen<Format> element_formats() {
  return rc::gen::element(formats::e4m3, formats::e5m2, formats::e3m2, formats::e2m3,
                          formats::e2m1);
}

RC_GTEST_PROP(MxBlocks, PowerOfTwoScalesAndHalfAnUlpTimesTheScale, ()) {
  const Format f = *element_formats();
  const std::vector<float> x = *block(32, -100, 80);
  const Quantized q = quantize_mx(x, mx_block(), f);
  const double a = amax(x);
  RC_PRE(a > 0);
  const Tile& t = q.tiles.at(0);
  const double X = std::ldexp(1.0, std::ilogb(a) - f.emax);
  RC_ASSERT(t.decode_scale == X);
  RC_ASSERT(t.decode_scale == numeric::decode_scale(formats::ue8m0, t.scale_bits));
  const double top = max_finite(q.element);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double y = std::fabs(static_cast<double>(x[i])) / X;
    if (q.element_events[i] == numeric::RoundingEvent::saturation) {
      RC_ASSERT(y > top);
      RC_ASSERT(std::fabs(q.dequantized[i]) == top * X);
    } else {
      RC_ASSERT(std::fabs(q.dequantized[i] - x[i]) <= 0.5 * ulp(q.element, y) * X);
    }
    if (std::fabs(x[i]) == a) RC_ASSERT(q.dequantized[i] != 0);  // the amax never flushes
  }
}

// TE's round-up scale: never saturates a finite block, and is the OCP scale or twice it.
RC_GTEST_PROP(MxBlocks, RoundUpScalesNeverSaturateAndAreAtMostTwiceTheOcpScale, ()) {
  const Format f = *element_formats();
  const std::vector<float> x = *block(32, -100, 80);
  const Quantized up = quantize_mx(x, mx_block(), f, MxScale::round_up);
  const Quantized ocp = quantize_mx(x, mx_block(), f);
  RC_ASSERT(up.events.saturated == 0u);
  RC_PRE(amax(x) > 0x1p-100);  // away from E8M0's clamp at 2^-127
  const double ratio = up.tiles.at(0).decode_scale / ocp.tiles.at(0).decode_scale;
  RC_ASSERT(ratio == 1.0 || ratio == 2.0);
  // The largest element is at least half the format's largest value: no binade is wasted.
  RC_ASSERT(amax(x) / up.tiles.at(0).decode_scale >= max_finite(up.element) / 2 * (1 - 0x1p-20));
}

RC_GTEST_PROP(MxBlocks, StochasticRoundingPicksANeighbour, ()) {
  const Format f = *element_formats();
  const std::vector<float> x = *block(32, -20, 20);
  const Quantized q = quantize_mx(
      x, mx_block(Rounding::stochastic_proportional, *rc::gen::arbitrary<std::uint64_t>()), f);
  const double X = q.tiles.at(0).decode_scale;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (q.element_events[i] == numeric::RoundingEvent::saturation) continue;
    const double y = std::fabs(static_cast<double>(x[i])) / X;
    RC_ASSERT(std::fabs(q.dequantized[i] - x[i]) < ulp(q.element, y) * X);
  }
}

RC_GTEST_PROP(Fp8Blocks, PowerOfTwoCurrentScalingNeverSaturates, ()) {
  const Format f = *rc::gen::element(formats::e4m3, formats::e5m2);
  const std::vector<float> x = *block(64, -60, 60);
  Layout l;
  l.rows = 4;
  l.cols = 16;
  l.block_rows = *rc::gen::element<std::size_t>(1, 2, 4);
  l.block_cols = *rc::gen::element<std::size_t>(4, 8, 16);
  const Quantized q = quantize_current(x, l, f, true);
  RC_ASSERT(q.events.saturated == 0u);
  for (const Tile& t : q.tiles) {
    RC_ASSERT(t.scale == std::ldexp(1.0, std::ilogb(t.scale)));  // a power of two
    RC_ASSERT(t.scale * t.decode_scale == 1.0);
    for (std::size_t i = t.row; i < t.row + t.rows; ++i) {
      for (std::size_t j = t.col; j < t.col + t.cols; ++j) {
        const double v = x[i * l.cols + j];
        const double y = std::fabs(v) * t.scale;
        RC_ASSERT(y <= max_finite(q.element));
        RC_ASSERT(std::fabs(q.dequantized[i * l.cols + j] - v) <=
                  0.5 * ulp(q.element, y) * t.decode_scale);
      }
    }
  }
}

// detail::round_to_binary32 is round_to's binary32 rounding: on products of two binary32 values
// (ties to even among them: a product of 24 and 2 significant bits often ends in one), values
// near binary32's largest finite value, its smallest normal and below, with the environment's
// rounding mode set upward (the quick path must not depend on it).
RC_GTEST_PROP(RoundToBinary32, EqualsRoundTo, ()) {
  const auto x = static_cast<double>(*rc::gen::arbitrary<float>());
  const double y = *rc::gen::oneOf(
      rc::gen::element(3.0, 1.5, -0.75, 5.0, 1.0 + 0x1p-23, 0x1p-130, 0x1p100),
      rc::gen::map(rc::gen::arbitrary<float>(), [](float v) { return static_cast<double>(v); }));
  const double p = *rc::gen::element(x * y, std::numeric_limits<float>::max() * (1 + 0x1p-25),
                                     std::numeric_limits<float>::max() * (1 + 0x1p-24),
                                     0x1p-126 * (1 - 0x1p-30), x * 0x1p-140);
  const int saved = std::fegetround();
  std::fesetround(FE_UPWARD);
  const double quick = detail::round_to_binary32(p);
  std::fesetround(saved);
  const double want = f32(p);
  const bool same = std::isnan(want) ? std::isnan(quick)
                                     : quick == want && std::signbit(quick) == std::signbit(want);
  RC_ASSERT(same);
}

// Every element as round_to makes it from the scaled input, whatever path the quantizer takes
// (scaling.cpp rounds rows of e4m3 and e5m2 elements through encode_array where that gives
// round_to's results): the bits, value, event and dequantized value of each, and the counts. The
// scaled input is computed here as scaling.hpp defines it (fl32(x * scale) for fp32 scales, x * 1/X
// exactly for MX). Inputs span subnormal and saturating scaled values, with NaNs and infinities
// mixed in; scales are given (delayed) or from each tile's amax; both fast modes and one other.
RC_GTEST_PROP(Quantizers, EveryElementIsRoundToOfItsScaledInput, ()) {
  const Format f =
      *rc::gen::element(formats::e4m3, formats::e5m2, formats::e3m2, formats::e2m3, formats::e2m1);
  const Rounding mode = *rc::gen::element(Rounding::nearest_even, Rounding::stochastic_proportional,
                                          Rounding::toward_zero);
  std::vector<float> x = *block(128, -40, 30);
  const int specials = *rc::gen::inRange(0, 3);
  for (int i = 0; i < specials; ++i) {
    x.at(*rc::gen::inRange<std::size_t>(0, x.size())) =
        *rc::gen::element(std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 0x1p-149f);
  }
  Layout l;
  l.rows = 4;
  l.cols = 32;
  l.mode = mode;
  l.seed = *rc::gen::arbitrary<std::uint64_t>();
  const int rule = *rc::gen::inRange(0, 3);
  Quantized q;
  if (rule == 0) {
    l.block_rows = 4;
    l.block_cols = 32;
    q = quantize_with_scale(x, l, f, *rc::gen::element(1.0f, 0x1p-3f, 3.0f, 1e4f, 0x1p-20f));
  } else if (rule == 1) {
    l.block_rows = *rc::gen::element<std::size_t>(1, 4);
    l.block_cols = *rc::gen::element<std::size_t>(8, 32);
    q = quantize_current(x, l, f, *rc::gen::arbitrary<bool>());
  } else {
    l.block_cols = 32;
    q = quantize_mx(x, l, f);
  }
  RC_TAG(f.name, numeric::rounding_name(mode), rule);
  QuantEvents want;
  for (const Tile& t : q.tiles) {
    for (std::size_t i = t.row; i < t.row + t.rows; ++i) {
      for (std::size_t j = t.col; j < t.col + t.cols; ++j) {
        const std::size_t k = i * l.cols + j;
        const double v = x[k];
        const double scaled = std::isnan(t.scale) ? t.scale
                              : rule == 2         ? v * t.scale
                                                  : f32(v * t.scale);
        const std::uint32_t random =
            numeric::is_stochastic(mode) ? numeric::stochastic_draw(l.seed, k) : 0u;
        const numeric::Rounded r = numeric::round_to(q.element, mode, scaled, random);
        const auto same = [](double a, double b) {
          return std::isnan(a)
                     ? std::isnan(b)
                     : !std::isnan(b) && a == b && (a != 0 || std::signbit(a) == std::signbit(b));
        };
        RC_ASSERT(q.bits[k] == r.bits);
        RC_ASSERT(same(q.values[k], r.value));
        RC_ASSERT(q.element_events[k] == r.event);
        RC_ASSERT(same(q.dequantized[k], std::isnan(t.decode_scale)
                                             ? std::numeric_limits<double>::quiet_NaN()
                                             : r.value * t.decode_scale));
        if (r.event == numeric::RoundingEvent::saturation && !std::isnan(v)) ++want.saturated;
      }
    }
  }
  RC_ASSERT(q.events.saturated == want.saturated);
}

void large_tensor_equals_round_to(std::size_t rows, std::size_t cols) {
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto u = numeric::splitmix64(11, i);
    x[i] =
        static_cast<float>(std::ldexp(static_cast<double>(u >> 40) + 1, -static_cast<int>(u % 40)));
    if (u % 7 == 0) x[i] = -x[i];
    if (u % 4093 == 0) x[i] = std::numeric_limits<float>::quiet_NaN();
  }
  for (const Rounding mode : {Rounding::nearest_even, Rounding::stochastic_proportional}) {
    for (const std::size_t block_cols : {cols, std::size_t{128}}) {
      Layout l;
      l.rows = rows;
      l.cols = cols;
      l.block_rows = block_cols == cols ? rows : 1;
      l.block_cols = block_cols;
      l.mode = mode;
      l.seed = 5;
      const Quantized q = block_cols == cols ? quantize_with_scale(x, l, formats::e4m3, 0x1p-4f)
                                             : quantize_current(x, l, formats::e4m3, false);
      ASSERT_EQ(q.tiles.size(), rows * cols / (l.block_rows * block_cols));
      QuantEvents want;
      for (std::size_t k = 0; k < x.size(); ++k) {
        const Tile& t =
            q.tiles[k / cols / l.block_rows * (cols / block_cols) + k % cols / block_cols];
        const double scaled = f32(static_cast<double>(x[k]) * t.scale);
        const numeric::Rounded r = numeric::round_to(
            q.element, mode, scaled,
            numeric::is_stochastic(mode) ? numeric::stochastic_draw(l.seed, k) : 0u);
        ASSERT_EQ(q.bits[k], r.bits) << k;
        ASSERT_EQ(q.element_events[k], r.event) << k;
        if (std::isnan(x[k])) {
          ++want.nan;
          continue;
        }
        if (r.event == numeric::RoundingEvent::saturation) ++want.saturated;
        if (x[k] != 0 && r.value == 0) ++want.flushed;
        if (r.value != 0 && std::fabs(r.value) < 0x1p-6) ++want.subnormal;
      }
      if (block_cols == cols) {
        EXPECT_GT(want.saturated, 0u);
      }
      EXPECT_GT(want.flushed, 0u);
      EXPECT_GT(want.subnormal, 0u);
      EXPECT_EQ(q.events.nan, want.nan);
      EXPECT_EQ(q.events.saturated, want.saturated);
      EXPECT_EQ(q.events.flushed, want.flushed);
      EXPECT_EQ(q.events.subnormal, want.subnormal);
    }
  }
}

// A tensor large enough to be quantized on several cores (scaling.cpp: one per 2^16 elements),
// as one tile with a given scale and as 2048 tiles of 1 x 128 with their own: every element as
// round_to makes it, and the counts of the whole tensor, with saturations (given scale), flushes,
// subnormals and NaNs present. Once as 512 x 512 (the cores take rows) and once as one row of
// 2^18 (the cores take runs of that row's tiles).
TEST(Quantizers, ALargeTensorOnSeveralCoresEqualsRoundTo) {
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{512, 512}, {1, 1 << 18}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    large_tensor_equals_round_to(rows, cols);
  }
}

}  // namespace
}  // namespace ampbench::quant
