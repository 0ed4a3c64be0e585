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
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

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

}  // namespace
}  // namespace ampbench::quant
