// Properties of the loss scaler. The main one is stateful: random sequences of backward passes,
// inf/NaN injections, scale-loss, unscale, step and update, misuse included, run on LossScaler and
// on a small model of PyTorch's GradScaler written here from grad_scaler.py and AmpKernels.cu in
// plain binary64 arithmetic, with the project's correctly rounded round_to for every binary32
// rounding. The model never calls the scaler's code. The others: power-of-two scaling round-trips
// exactly, fp16-underflowing gradients survive scaling, clipping after unscaling equals clipping
// the unscaled gradients, and a skipped step leaves every weight bit as it was.
//
// On failure RapidCheck prints the shrunk command sequence and a replay string; rerun that case
// with RC_PARAMS="reproduce=<string>". RC_PARAMS="max_success=2000" searches longer.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/train/clip.hpp"
#include "harness/train/scaler.hpp"

namespace ampbench::train {
namespace {

namespace formats = numeric::formats;

// x correctly rounded to binary32 (nearest, ties to even), as a binary64.
double f32(double x) {
  return numeric::round_to(formats::fp32, numeric::Rounding::nearest_even, x).value;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Equal values, or both NaN: the model's NaN comes from binary64 arithmetic, whose payload
// rounding is not what is being tested.
bool same_value(double expected, float actual) {
  return std::isnan(expected) ? std::isnan(actual)
                              : same_bits(static_cast<float>(expected), actual);
}

// Binary32 values of every magnitude: sign * m * 2^e with a 24-bit m, from subnormal to near
// the largest finite value.
rc::Gen<float> any_float(int min_exponent = -160, int max_exponent = 104) {
  return rc::gen::apply(
      [](bool negative, std::uint32_t m, int e) {
        const double v = std::ldexp(static_cast<double>(m & 0xFFFFFFu), e);
        return static_cast<float>(negative ? -v : v);
      },
      rc::gen::arbitrary<bool>(), rc::gen::arbitrary<std::uint32_t>(),
      rc::gen::inRange(min_exponent, max_exponent + 1));
}

// ---- the model ---------------------------------------------------------------------------------

enum class Stage { ready, unscaled, stepped };  // OptState, for the one optimizer

struct Model {
  // GradScaler's arguments; the factors have few significant bits, so that scale * factor is
  // exact in binary64 and the model rounds once, where the kernel rounds a binary64 product.
  double growth;
  double backoff;
  int interval;
  double min_scale;  // a binary32 value; 0 when there is none
  float lr;
  // GradScaler's state.
  double scale;
  int tracker = 0;
  Stage stage = Stage::ready;
  bool inf_check_recorded = false;  // found_inf_per_device is non-empty
  bool found_inf = false;
  // Ours: steps are counted by update(); skipped steps are recorded by step().
  std::int64_t steps = 0;
  std::vector<std::int64_t> skipped;
  // The gradient buffers and the weights, one weight per gradient element.
  std::vector<std::vector<float>> grads;
  std::vector<float> weights;
};

using Error = std::optional<std::string>;

double model_inverse(const Model& m) {
  return f32(1.0 / m.scale);  // grad_scaler.py: self._scale.double().reciprocal().float()
}

// GradScaler.unscale_ with allow_fp16=False.
Error model_unscale(Model& m, bool fp16) {
  if (m.stage == Stage::unscaled) {
    return "unscale_() has already been called on this optimizer since the last update().";
  }
  if (m.stage == Stage::stepped) return "unscale_() is being called after step().";
  if (fp16) return "Attempting to unscale FP16 gradients.";
  const double inv = model_inverse(m);
  bool found = false;
  for (auto& tensor : m.grads) {
    for (float& g : tensor) {
      const double v = g;
      found = found || !std::isfinite(v);  // checked before the multiply
      // A product of two binary32 values is exact in binary64; then one rounding, as in fp32.
      if (inv != 1.0) g = static_cast<float>(f32(v * inv));
    }
  }
  m.found_inf = found;
  m.inf_check_recorded = !m.grads.empty();
  m.stage = Stage::unscaled;
  return std::nullopt;
}

// The optimizer the test drives: plain SGD on the flattened gradients.
void sgd(std::vector<float>& weights, const std::vector<std::vector<float>>& grads, float lr) {
  std::size_t i = 0;
  for (const auto& tensor : grads) {
    for (const float g : tensor) {
      weights[i] -= lr * g;
      ++i;
    }
  }
}

// GradScaler.step; returns the error and whether the optimizer ran.
Error model_step(Model& m, bool fp16, bool& ran) {
  ran = false;
  if (m.stage == Stage::stepped) return "step() has already been called since the last update().";
  if (m.stage == Stage::ready) {
    if (Error e = model_unscale(m, fp16)) return e;
  }
  if (!m.inf_check_recorded) return "No inf checks were recorded for this optimizer.";
  if (m.found_inf) {
    m.skipped.push_back(m.steps);
  } else {
    sgd(m.weights, m.grads, m.lr);
    ran = true;
  }
  m.stage = Stage::stepped;
  return std::nullopt;
}

// GradScaler.update and _amp_update_scale_, with the minimum scale on the backoff.
Error model_update(Model& m) {
  if (!m.inf_check_recorded) return "No inf checks were recorded prior to update.";
  if (m.found_inf) {
    m.scale = std::max(f32(m.scale * m.backoff), m.min_scale);
    m.tracker = 0;
  } else if (m.tracker + 1 == m.interval) {
    const double grown = f32(m.scale * m.growth);
    if (std::isfinite(grown)) m.scale = grown;
    m.tracker = 0;
  } else {
    ++m.tracker;
  }
  m.stage = Stage::ready;
  m.inf_check_recorded = false;
  m.found_inf = false;
  ++m.steps;
  return std::nullopt;
}

// ---- the system under test ---------------------------------------------------------------------

struct Sut {
  LossScaler scaler;
  std::vector<std::vector<float>> grads;
  std::vector<float> weights;

  std::vector<std::span<float>> tensors() { return {grads.begin(), grads.end()}; }
};

Stage stage_of(ScalerStage s) {
  switch (s) {
    case ScalerStage::ready: return Stage::ready;
    case ScalerStage::unscaled: return Stage::unscaled;
    case ScalerStage::stepped: return Stage::stepped;
  }
  return Stage::ready;
}

void check_same_state(const Model& m, Sut& sut) {
  RC_ASSERT(static_cast<float>(m.scale) == sut.scaler.scale());  // never NaN
  RC_ASSERT(m.tracker == sut.scaler.growth_tracker());
  RC_ASSERT(m.stage == stage_of(sut.scaler.stage()));
  RC_ASSERT(m.steps == sut.scaler.steps());
  RC_ASSERT(m.skipped == sut.scaler.skipped_steps());
  for (std::size_t t = 0; t < m.grads.size(); ++t) {
    for (std::size_t i = 0; i < m.grads[t].size(); ++i) {
      RC_ASSERT(same_value(m.grads[t][i], sut.grads[t][i]));
    }
  }
  for (std::size_t i = 0; i < m.weights.size(); ++i) {
    RC_ASSERT(same_value(m.weights[i], sut.weights[i]));
  }
}

using Command = rc::state::Command<Model, Sut>;

// The error the scaler threw (std::invalid_argument is a std::logic_error), if any.
template <class Call>
Error thrown_by(Call&& call) {
  try {
    call();
  } catch (const std::logic_error& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

// A backward pass: new scaled gradients in every buffer.
struct Backward : Command {
  std::vector<std::vector<float>> values;
  explicit Backward(const Model& m) {
    for (const auto& tensor : m.grads) {
      values.push_back(*rc::gen::container<std::vector<float>>(tensor.size(), any_float()));
    }
  }
  void apply(Model& m) const override { m.grads = values; }
  void run(const Model& m, Sut& sut) const override {
    sut.grads = values;
    check_same_state(nextState(m), sut);
  }
  void show(std::ostream& os) const override { os << "Backward"; }
};

// An overflow in the backward pass: one element becomes +-inf or NaN.
struct Inject : Command {
  std::size_t tensor = 0;
  std::size_t index = 0;
  float value = 0.0f;
  explicit Inject(const Model& m) {
    std::vector<std::size_t> nonempty;
    for (std::size_t t = 0; t < m.grads.size(); ++t) {
      if (!m.grads[t].empty()) nonempty.push_back(t);
    }
    RC_PRE(!nonempty.empty());
    tensor = *rc::gen::elementOf(nonempty);
    index = *rc::gen::inRange<std::size_t>(0, m.grads[tensor].size());
    value = *rc::gen::element(INFINITY, -INFINITY, NAN);
  }
  void apply(Model& m) const override { m.grads[tensor][index] = value; }
  void run(const Model& m, Sut& sut) const override {
    sut.grads[tensor][index] = value;
    check_same_state(nextState(m), sut);
  }
  void show(std::ostream& os) const override {
    os << "Inject " << value << " at [" << tensor << "][" << index << "]";
  }
};

struct ScaleLoss : Command {
  float loss = *any_float(-140, 100);
  void run(const Model& m, Sut& sut) const override {
    RC_ASSERT(same_value(f32(static_cast<double>(loss) * m.scale), sut.scaler.scale_loss(loss)));
  }
  void show(std::ostream& os) const override { os << "ScaleLoss " << loss; }
};

struct Unscale : Command {
  bool fp16 = *rc::gen::weightedElement<bool>({{1, true}, {5, false}});
  void apply(Model& m) const override { model_unscale(m, fp16); }
  void run(const Model& m, Sut& sut) const override {
    Model expected = m;
    const Error error = model_unscale(expected, fp16);
    const auto tensors = sut.tensors();
    const Error actual =
        thrown_by([&] { sut.scaler.unscale(tensors, fp16 ? formats::fp16 : formats::fp32); });
    RC_ASSERT(actual == error);
    check_same_state(expected, sut);
  }
  void show(std::ostream& os) const override { os << "Unscale" << (fp16 ? " fp16" : ""); }
};

struct Step : Command {
  bool fp16 = *rc::gen::weightedElement<bool>({{1, true}, {5, false}});
  void apply(Model& m) const override {
    bool ran = false;
    model_step(m, fp16, ran);
  }
  void run(const Model& m, Sut& sut) const override {
    Model expected = m;
    bool expected_ran = false;
    const Error error = model_step(expected, fp16, expected_ran);
    const auto tensors = sut.tensors();
    bool ran = false;
    const Error actual = thrown_by([&] {
      ran = sut.scaler.step(
          tensors, [&] { sgd(sut.weights, sut.grads, m.lr); },
          fp16 ? formats::fp16 : formats::fp32);
    });
    RC_ASSERT(actual == error);
    RC_ASSERT(ran == expected_ran);
    check_same_state(expected, sut);  // a skipped step left every weight bit as it was
  }
  void show(std::ostream& os) const override { os << "Step" << (fp16 ? " fp16" : ""); }
};

// step() then update(), each as its own call: whole iterations reach the scale's extremes.
struct Iteration : Command {
  void apply(Model& m) const override {
    bool ran = false;
    model_step(m, false, ran);
    model_update(m);
  }
  void run(const Model& m, Sut& sut) const override {
    Model expected = m;
    bool expected_ran = false;
    const Error step_error = model_step(expected, false, expected_ran);
    const Error update_error = model_update(expected);
    const auto tensors = sut.tensors();
    bool ran = false;
    RC_ASSERT(thrown_by([&] {
                ran = sut.scaler.step(tensors, [&] { sgd(sut.weights, sut.grads, m.lr); });
              }) == step_error);
    RC_ASSERT(ran == expected_ran);
    RC_ASSERT(thrown_by([&] { sut.scaler.update(); }) == update_error);
    check_same_state(expected, sut);
  }
  void show(std::ostream& os) const override { os << "Iteration"; }
};

struct Update : Command {
  void apply(Model& m) const override { model_update(m); }
  void run(const Model& m, Sut& sut) const override {
    Model expected = m;
    const Error error = model_update(expected);
    RC_ASSERT(thrown_by([&] { sut.scaler.update(); }) == error);
    check_same_state(expected, sut);
  }
  void show(std::ostream& os) const override { os << "Update"; }
};

// A valid initial scale: a positive binary32 value.
rc::Gen<double> initial_scale() {
  const auto power_of_two = [](int k) { return std::ldexp(1.0, k); };
  const rc::Gen<double> any = rc::gen::oneOf(
      // Powers of two over the whole binary32 range, and near its ends, to reach the growth cap
      // and the collapse.
      rc::gen::map(rc::gen::inRange(-149, 128), power_of_two),
      rc::gen::map(rc::gen::inRange(118, 128), power_of_two),
      rc::gen::map(rc::gen::inRange(-149, -120), power_of_two),
      // Any binary32 value of a common magnitude.
      rc::gen::map(any_float(-20, 20), [](float x) { return std::fabs(static_cast<double>(x)); }));
  return rc::gen::suchThat(any, [](double s) { return s > 0.0; });
}

RC_GTEST_PROP(ScalerStateMachine, MatchesTheGradScalerModel, ()) {
  Model m;
  m.scale = *initial_scale();
  m.growth = *rc::gen::element(2.0, 1.5, 4.0, 1.25, 3.0, 1.0 + 0x1p-10);
  m.backoff = *rc::gen::element(0.5, 0.25, 0.75, 0.125, 0.875);
  m.interval = *rc::gen::inRange(1, 5);
  const bool has_min = *rc::gen::arbitrary<bool>();
  const int min_shift = *rc::gen::inRange(0, 40);
  m.min_scale = has_min ? f32(std::ldexp(m.scale, -min_shift)) : 0.0;
  m.lr = *rc::gen::element(0.5f, 0.1f, 1e-3f);
  // 0 to 3 gradient tensors of 0 to 4 elements: no tensor at all is a misuse path, rarely
  // chosen since it makes every later step and update an error.
  const std::size_t tensor_count =
      *rc::gen::weightedElement<std::size_t>({{1, 0}, {3, 1}, {3, 2}, {3, 3}});
  const auto sizes = *rc::gen::container<std::vector<std::size_t>>(
      tensor_count, rc::gen::inRange<std::size_t>(0, 5));
  std::size_t elements = 0;
  for (const std::size_t n : sizes) {
    m.grads.emplace_back(n, 0.0f);
    elements += n;
  }
  m.weights = *rc::gen::container<std::vector<float>>(elements, any_float(-30, 30));

  LossScalerOptions options{.init_scale = m.scale,
                            .growth_factor = m.growth,
                            .backoff_factor = m.backoff,
                            .growth_interval = m.interval};
  if (has_min) options.min_scale = m.min_scale;
  Sut sut{LossScaler(options), m.grads, m.weights};
  rc::state::check(m, sut,
                   rc::state::gen::execOneOfWithArgs<Backward, Inject, ScaleLoss, Unscale, Step,
                                                     Update, Iteration, Iteration>());
}

// ---- properties of single iterations -----------------------------------------------------------

// Gradients whose products with 2^k stay normal binary32 values.
rc::Gen<std::vector<float>> moderate_gradients() {
  return rc::gen::container<std::vector<float>>(any_float(-60, 40));
}

RC_GTEST_PROP(ScalerRoundTrip, PowerOfTwoScalingIsExact, ()) {
  const int k = *rc::gen::inRange(-60, 61);
  const std::vector<float> grads = *moderate_gradients();
  LossScaler scaler({.init_scale = std::ldexp(1.0, k)});
  std::vector<float> scaled;
  for (const float g : grads) {
    scaled.push_back(scaler.scale_loss(g));
    // The premise: nothing overflowed or underflowed, so the product is exact.
    RC_ASSERT(static_cast<double>(scaled.back()) == std::ldexp(static_cast<double>(g), k));
  }
  const std::vector<std::span<float>> tensors = {scaled};
  scaler.unscale(tensors);
  RC_ASSERT(!scaler.found_inf());
  for (std::size_t i = 0; i < grads.size(); ++i) RC_ASSERT(same_bits(scaled[i], grads[i]));
}

// A gradient below half of fp16's smallest subnormal (2^-25) is 0 when the fp16 backward pass
// produces it unscaled. Scaled by the default 2^16 it is a nonzero fp16 value, and the fp32
// master gradient unscales to a nonzero value; scaled by 2^40 it lands in fp16's normal range and
// comes back within fp16's unit roundoff 2^-11.
RC_GTEST_PROP(ScalerUnderflow, Fp16UnderflowSurvivesScaling, ()) {
  const bool negative = *rc::gen::arbitrary<bool>();
  const double magnitude =
      std::ldexp(1.0 + *rc::gen::inRange(0, 1 << 23) * 0x1p-23, *rc::gen::inRange(-40, -25));
  const double g = static_cast<float>(negative ? -magnitude : magnitude);
  const auto to_fp16 = [](double x) {
    return static_cast<float>(
        numeric::round_to(formats::fp16, numeric::Rounding::nearest_even, x).value);
  };
  RC_ASSERT(to_fp16(g) == 0.0f);

  for (const double scale : {65536.0, 0x1p40}) {
    LossScaler scaler({.init_scale = scale});
    std::vector<float> grad = {to_fp16(g * scale)};  // the fp16 backward's scaled gradient
    const std::vector<std::span<float>> tensors = {grad};
    scaler.unscale(tensors);  // an fp32 master gradient holding an fp16 value
    RC_ASSERT(grad[0] != 0.0f);
    RC_ASSERT(std::signbit(grad[0]) == negative);
    if (scale == 0x1p40) RC_ASSERT(std::fabs(grad[0] - g) <= 0x1p-11 * std::fabs(g));
  }
}

// Clipping belongs after unscale: clipping the unscaled gradients gives, bit for bit, what
// clipping the original gradients gives (power-of-two scale, nothing over- or underflowing).
RC_GTEST_PROP(ScalerClip, ClipAfterUnscaleEqualsClipOfTheUnscaledGradients, ()) {
  const int k = *rc::gen::inRange(-60, 61);
  std::vector<float> a = *moderate_gradients();
  std::vector<float> b = *moderate_gradients();
  const double max_norm =
      std::ldexp(1.0 + *rc::gen::inRange(0, 100) / 100.0, *rc::gen::inRange(-70, 50));
  LossScaler scaler({.init_scale = std::ldexp(1.0, k)});
  std::vector<float> scaled_a;
  std::vector<float> scaled_b;
  for (const float g : a) scaled_a.push_back(scaler.scale_loss(g));
  for (const float g : b) scaled_b.push_back(scaler.scale_loss(g));
  const std::vector<std::span<float>> scaled = {scaled_a, scaled_b};
  scaler.unscale(scaled);
  const double norm_after_unscale = clip_grad_norm(scaled, max_norm);

  const std::vector<std::span<float>> originals = {a, b};
  const double norm = clip_grad_norm(originals, max_norm);
  RC_ASSERT(norm_after_unscale == norm);
  for (std::size_t i = 0; i < a.size(); ++i) RC_ASSERT(same_bits(scaled_a[i], a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) RC_ASSERT(same_bits(scaled_b[i], b[i]));
}

RC_GTEST_PROP(ScalerSkip, SkippedStepLeavesEveryWeightBit, ()) {
  auto grads = *rc::gen::nonEmpty(rc::gen::container<std::vector<float>>(any_float()));
  const std::size_t at = *rc::gen::inRange<std::size_t>(0, grads.size());
  grads[at] = *rc::gen::element(INFINITY, -INFINITY, NAN);
  const auto weights = *rc::gen::container<std::vector<float>>(grads.size(), any_float());
  auto updated = weights;
  LossScaler scaler({.init_scale = *initial_scale()});
  const std::vector<std::span<float>> tensors = {grads};
  const bool ran = scaler.step(tensors, [&] { sgd(updated, {grads}, 0.5f); });
  RC_ASSERT(!ran);
  RC_ASSERT(std::memcmp(updated.data(), weights.data(), weights.size() * sizeof(float)) == 0);
  RC_ASSERT(scaler.skipped_steps() == std::vector<std::int64_t>{0});
}

}  // namespace
}  // namespace ampbench::train
