// Tests of the loss scaler against PyTorch's GradScaler: the sequences of PyTorch's own tests
// (test/test_cuda.py: test_grad_scaling_update_scale, _run_scaling_case), every misuse error with
// PyTorch's text, and the binary32 edges of the scale. Expected values are PyTorch's or follow
// from IEEE 754 binary32 facts stated beside them, never from running our code.
#include "harness/train/scaler.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/scaler_math.hpp"
#include "harness/train/clip.hpp"
#include "harness/train/test/expect_error.hpp"

namespace ampbench::train {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

using test::expect_error;

// Checks that constructing a scaler from `options` throws std::invalid_argument naming `name`.
void expect_rejected(const LossScalerOptions& options, const std::string& name) {
  try {
    LossScaler scaler(options);
    ADD_FAILURE() << "accepted; expected an error naming " << name;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

std::uint32_t bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// One tensor of gradients, for the common single-tensor case.
struct Grads {
  std::vector<float> values;
  std::vector<std::span<float>> tensors;
  explicit Grads(std::vector<float> v) : values(std::move(v)), tensors{std::span<float>(values)} {}
  Grads(const Grads&) = delete;  // the span would still point into the original
  Grads& operator=(const Grads&) = delete;
  GradientList list() const { return tensors; }
};

// A plain update on host vectors, just enough to see whether the optimizer ran.
void sgd(std::vector<float>& weights, const std::vector<float>& grads, float lr) {
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] -= lr * grads[i];
}

// One whole iteration with gradients `g` (already scaled by the caller), as the CLI runs it.
bool iterate(LossScaler& scaler, std::vector<float> g) {
  Grads grads(std::move(g));
  const bool taken = scaler.step(grads.list(), [] {});
  scaler.update();
  return taken;
}

TEST(ScalerMath, IsFiniteFromTheBits) {
  EXPECT_TRUE(is_finite(0.0f));
  EXPECT_TRUE(is_finite(-FLT_MAX));
  EXPECT_TRUE(is_finite(FLT_TRUE_MIN));
  EXPECT_FALSE(is_finite(kInf));
  EXPECT_FALSE(is_finite(-kInf));
  EXPECT_FALSE(is_finite(kNaN));
}

// PyTorch test_grad_scaling_update_scale, on _amp_update_scale_ directly.
TEST(ScalerMath, PyTorchUpdateScaleSequence) {
  const ScaleRule rule{2.0, 0.25, 2, 0.0f};
  ScaleState s{4.0f, 0};
  s = update_scale(s, false, rule);
  EXPECT_EQ(s.scale, 4.0f);
  EXPECT_EQ(s.growth_tracker, 1);
  s = update_scale(s, false, rule);
  EXPECT_EQ(s.scale, 8.0f);
  EXPECT_EQ(s.growth_tracker, 0);
  s = update_scale(s, true, rule);
  EXPECT_EQ(s.scale, 2.0f);
  EXPECT_EQ(s.growth_tracker, 0);
}

// The kernel multiplies the binary32 scale by the binary64 factor and rounds once. With scale
// 2 - 2^-23 and growth 1 + 2^-24 - 2^-40 the exact product is 2 - 2^-39 - 2^-47 + 2^-63, within
// a quarter ulp of 2: it rounds to 2. Rounding the factor to binary32 first (it becomes 1) would
// leave the scale at 2 - 2^-23.
TEST(ScalerMath, GrowthIsOneBinary64ProductRoundedToBinary32) {
  const ScaleRule rule{1.0 + 0x1p-24 - 0x1p-40, 0.5, 1, 0.0f};
  const ScaleState s = update_scale({0x1.fffffep0f, 0}, false, rule);
  EXPECT_EQ(s.scale, 2.0f);
  EXPECT_EQ(s.growth_tracker, 0);
}

// The same for the backoff: 0.5 + 2^-26 + 2^-30 is 0.5 in binary32, but (2 - 2^-23) times it is
// 1 - 2^-25 + 2^-29 - 2^-49 - 2^-53, above the midpoint 1 - 2^-25 between 1 - 2^-24 and 1.
TEST(ScalerMath, BackoffIsOneBinary64ProductRoundedToBinary32) {
  const ScaleRule rule{2.0, 0.5 + 0x1p-26 + 0x1p-30, 1, 0.0f};
  const ScaleState s = update_scale({0x1.fffffep0f, 5}, true, rule);
  EXPECT_EQ(s.scale, 1.0f);
  EXPECT_EQ(s.growth_tracker, 0);
}

TEST(ScalerMath, UnscaleChecksBeforeMultiplying) {
  // 3e38 is finite; times 2 it overflows, yet it is not reported (PyTorch checks the scaled value).
  const UnscaledElement overflow = unscale_and_check(3e38f, 2.0f);
  EXPECT_EQ(overflow.value, kInf);
  EXPECT_FALSE(overflow.non_finite);
  const UnscaledElement zero_times_inf = unscale_and_check(0.0f, kInf);
  EXPECT_TRUE(std::isnan(zero_times_inf.value));
  EXPECT_FALSE(zero_times_inf.non_finite);
  EXPECT_TRUE(unscale_and_check(kInf, 0.5f).non_finite);
  EXPECT_TRUE(unscale_and_check(-kInf, 0.5f).non_finite);
  EXPECT_TRUE(unscale_and_check(kNaN, 0.5f).non_finite);
  // inv_scale 1 leaves the value as it is, NaN payload included.
  const float payload = std::nanf("0x123");
  EXPECT_EQ(bits(unscale_and_check(payload, 1.0f).value), bits(payload));
}

TEST(LossScaler, PyTorchDefaults) {
  const LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.rule().growth_factor, 2.0);
  EXPECT_EQ(scaler.rule().backoff_factor, 0.5);
  EXPECT_EQ(scaler.rule().growth_interval, 2000);
  EXPECT_EQ(scaler.rule().min_scale, 0.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.stage(), ScalerStage::ready);
  EXPECT_EQ(scaler.steps(), 0);
}

TEST(LossScaler, PyTorchUpdateScaleSequenceThroughTheApi) {
  LossScaler scaler(
      {.init_scale = 4.0, .growth_factor = 2.0, .backoff_factor = 0.25, .growth_interval = 2});
  EXPECT_TRUE(iterate(scaler, {1.0f}));
  EXPECT_EQ(scaler.scale(), 4.0f);
  EXPECT_EQ(scaler.growth_tracker(), 1);
  EXPECT_TRUE(iterate(scaler, {1.0f}));
  EXPECT_EQ(scaler.scale(), 8.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(iterate(scaler, {kInf}));
  EXPECT_EQ(scaler.scale(), 2.0f);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

// PyTorch _run_scaling_case: init 128, growth 2, interval 1, four iterations, an inf injected at
// iteration 2. The scale ends at 128 * 2^3 * 0.5, and the weights equal a plain fp32 run that
// leaves out iteration 2 (power-of-two scales make scaling and unscaling exact).
TEST(LossScaler, PyTorchScalingCase) {
  LossScaler scaler({.init_scale = 128.0, .growth_interval = 1});
  const std::vector<std::vector<float>> gradients = {
      {0.5f, -1.25f, 3.0f}, {0.125f, 2.0f, -0.75f}, {1.0f, 1.0f, 1.0f}, {-0.25f, 0.375f, 6.0f}};
  const float lr = 0.1f;
  std::vector<float> weights = {1.0f, 2.0f, -3.0f};
  std::vector<float> reference = weights;
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    std::vector<float> scaled;
    for (const float g : gradients[i]) scaled.push_back(scaler.scale_loss(g));
    if (i == 2) scaled[1] = kInf;
    Grads grads(scaled);
    scaler.step(grads.list(), [&] { sgd(weights, grads.values, lr); });
    scaler.update();
    if (i != 2) sgd(reference, gradients[i], lr);
  }
  EXPECT_EQ(scaler.scale(), 128.0f * 8.0f * 0.5f);
  EXPECT_EQ(scaler.steps(), 4);
  EXPECT_EQ(scaler.skipped_steps(), std::vector<std::int64_t>{2});
  for (std::size_t i = 0; i < weights.size(); ++i) EXPECT_EQ(bits(weights[i]), bits(reference[i]));
}

TEST(LossScaler, Bf16GradientsAreRoundedBackToBf16) {
  // inv_scale = 1/3 in binary32 is 0x3EAAAAAB; 1 * inv_scale keeps those bits, and bf16 keeps the
  // top 16 of them, rounded to nearest even: the low half 0xAAAB is above 0x8000, so 0x3EAB.
  LossScaler scaler({.init_scale = 3.0});
  ASSERT_EQ(bits(scaler.inverse_scale()), 0x3EAAAAABu);
  Grads bf16({1.0f, -1.25f});
  scaler.unscale(bf16.list(), numeric::formats::bf16);
  EXPECT_EQ(bits(bf16.values[0]), 0x3EAB0000u);
  // -1.25 * inv_scale is 0xBED55556 in binary32: the low half 0x5556 is below 0x8000, so 0xBED5.
  EXPECT_EQ(bits(bf16.values[1]), 0xBED50000u);
  // fp32 gradients keep the binary32 product.
  LossScaler fp32_scaler({.init_scale = 3.0});
  Grads fp32({1.0f});
  fp32_scaler.unscale(fp32.list());
  EXPECT_EQ(bits(fp32.values[0]), 0x3EAAAAABu);
}

TEST(LossScaler, MisuseErrorsCarryPyTorchsMessages) {
  Grads grads({1.0f});
  {
    LossScaler scaler;
    scaler.unscale(grads.list());
    expect_error<std::logic_error>(
        [&] { scaler.unscale(grads.list()); },
        "unscale_() has already been called on this optimizer since the last update().");
  }
  {
    LossScaler scaler;
    scaler.step(grads.list(), [] {});
    expect_error<std::logic_error>([&] { scaler.unscale(grads.list()); },
                                   "unscale_() is being called after step().");
    expect_error<std::logic_error>([&] { scaler.step(grads.list(), [] {}); },
                                   "step() has already been called since the last update().");
  }
  {
    LossScaler scaler;
    expect_error<std::logic_error>([&] { scaler.update(); },
                                   "No inf checks were recorded prior to update.");
  }
  {
    // No gradient tensors: the unscale inside step() records no inf check, and PyTorch asserts
    // after it has moved the stage on; update() then finds no check either.
    LossScaler scaler;
    expect_error<std::logic_error>([&] { scaler.step(GradientList{}, [] {}); },
                                   "No inf checks were recorded for this optimizer.");
    EXPECT_EQ(scaler.stage(), ScalerStage::unscaled);
    expect_error<std::logic_error>([&] { scaler.update(); },
                                   "No inf checks were recorded prior to update.");
  }
  {
    LossScaler scaler;
    Grads fp16({1.0f});
    expect_error<std::invalid_argument>(
        [&] { scaler.unscale(fp16.list(), numeric::formats::fp16); },
        "Attempting to unscale FP16 gradients.");
    expect_error<std::invalid_argument>(
        [&] {
          scaler.step(
              fp16.list(), [] {}, numeric::formats::fp16);
        },
        "Attempting to unscale FP16 gradients.");
    // Refused before anything changed.
    EXPECT_EQ(scaler.stage(), ScalerStage::ready);
    EXPECT_EQ(fp16.values[0], 1.0f);
    scaler.unscale(fp16.list(), numeric::formats::bf16);
    EXPECT_EQ(scaler.stage(), ScalerStage::unscaled);
  }
}

TEST(LossScaler, AnEmptyTensorStillRecordsAnInfCheck) {
  LossScaler scaler;
  std::vector<std::span<float>> one_empty_tensor(1);
  EXPECT_TRUE(scaler.step(one_empty_tensor, [] {}));
  scaler.update();
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

// PyTorch's update() needs an inf check, not a step: unscale_ then update is allowed.
TEST(LossScaler, UpdateAfterUnscaleWithoutStep) {
  LossScaler scaler({.init_scale = 8.0});
  Grads grads({kNaN});
  scaler.unscale(grads.list());
  EXPECT_TRUE(scaler.found_inf());
  scaler.update();
  EXPECT_EQ(scaler.scale(), 4.0f);
  EXPECT_EQ(scaler.stage(), ScalerStage::ready);
  EXPECT_TRUE(scaler.skipped_steps().empty());  // no step was skipped: none was asked for
}

// A device kernel unscaled the gradients: the scaler takes its check's result and goes on as
// after unscale(), so that step() skips or runs and update() backs off or grows exactly as if it
// had unscaled them itself.
TEST(LossScaler, RecordUnscaledStandsForAnUnscaleDoneElsewhere) {
  LossScaler device_side({.init_scale = 8.0, .growth_interval = 2});
  LossScaler host_side({.init_scale = 8.0, .growth_interval = 2});
  for (const float g : {1.0f, kInf, 1.0f, 1.0f, kNaN, 1.0f}) {
    Grads grads({g});
    host_side.unscale(grads.list());
    device_side.record_unscaled(!std::isfinite(g));
    EXPECT_EQ(device_side.stage(), ScalerStage::unscaled);
    EXPECT_EQ(device_side.found_inf(), host_side.found_inf());
    int calls = 0;
    // The gradients were unscaled already: step() must not touch them, so none are passed.
    EXPECT_EQ(device_side.step(GradientList{}, [&] { ++calls; }),
              host_side.step(grads.list(), [] {}));
    EXPECT_EQ(calls, std::isfinite(g) ? 1 : 0);
    device_side.update();
    host_side.update();
    EXPECT_EQ(device_side.scale(), host_side.scale());
    EXPECT_EQ(device_side.growth_tracker(), host_side.growth_tracker());
  }
  EXPECT_EQ(device_side.skipped_steps(), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(device_side.scale(), 4.0f);  // 8, 4 (inf), 4, 8 (grown), 4 (NaN), 4

  LossScaler twice;
  twice.record_unscaled(false);
  expect_error<std::logic_error>(
      [&] { twice.record_unscaled(false); },
      "unscale_() has already been called on this optimizer since the last update().");
  twice.step(GradientList{}, [] {});
  expect_error<std::logic_error>([&] { twice.record_unscaled(false); },
                                 "unscale_() is being called after step().");
}

TEST(LossScaler, ConstructorRejectsBadOptions) {
  expect_rejected({.growth_factor = 1.0}, "growth_factor");
  expect_rejected({.growth_factor = 0.5}, "growth_factor");
  expect_rejected({.growth_factor = std::nan("")}, "growth_factor");
  expect_rejected({.growth_factor = HUGE_VAL}, "growth_factor");
  expect_rejected({.backoff_factor = 1.0}, "backoff_factor");
  expect_rejected({.backoff_factor = 0.0}, "backoff_factor");
  expect_rejected({.backoff_factor = -0.5}, "backoff_factor");
  expect_rejected({.backoff_factor = std::nan("")}, "backoff_factor");
  expect_rejected({.growth_interval = 0}, "growth_interval");
  expect_rejected({.growth_interval = -3}, "growth_interval");
  expect_rejected({.init_scale = 0.0}, "init_scale");
  expect_rejected({.init_scale = -1.0}, "init_scale");
  expect_rejected({.init_scale = HUGE_VAL}, "init_scale");
  expect_rejected({.init_scale = std::nan("")}, "init_scale");
  expect_rejected({.init_scale = 1e39}, "init_scale");   // finite in binary64, inf in binary32
  expect_rejected({.init_scale = 1e-46}, "init_scale");  // rounds to 0 in binary32
  expect_rejected({.init_scale = 4.0, .min_scale = 8.0}, "min_scale");
  expect_rejected({.min_scale = -1.0}, "min_scale");
  expect_rejected({.min_scale = std::nan("")}, "min_scale");
  expect_rejected({.collapse = CollapseDetection{0, 10}}, "backoffs");
  expect_rejected({.collapse = CollapseDetection{5, 4}}, "window");
  EXPECT_NO_THROW(LossScaler({.init_scale = 4.0, .min_scale = 4.0}));
  EXPECT_NO_THROW(LossScaler({.min_scale = 0.0}));
}

TEST(LossScaler, ValidateNamesTheOptionAndWhatIsWrong) {
  EXPECT_FALSE(validate({}));
  const auto interval = validate({.growth_interval = 0});
  ASSERT_TRUE(interval);
  EXPECT_EQ(interval->option, "growth_interval");
  EXPECT_EQ(interval->message, "must be >= 1, got 0");
  const auto window = validate({.collapse = CollapseDetection{3, 2}});
  ASSERT_TRUE(window);
  EXPECT_EQ(window->option, "collapse.window");
}

TEST(LossScaler, InitScaleIsRoundedToBinary32) {
  const LossScaler scaler({.init_scale = 0.1});
  EXPECT_EQ(scaler.scale(), 0x1.99999ap-4f);  // 0.1 to nearest binary32
}

TEST(LossScaler, ScaleLossIsOneBinary32Product) {
  const LossScaler scaler({.init_scale = 3.0});
  // 0x1.000002p0 * 3 = 0x1.800003p1 needs 25 bits; ties to even give 0x1.800004p1.
  EXPECT_EQ(scaler.scale_loss(0x1.000002p0f), 0x1.800004p1f);
  EXPECT_EQ(LossScaler().scale_loss(1.5f), 98304.0f);
}

// The grown scale is kept only when finite; the tracker restarts either way.
TEST(LossScaler, GrowthNeverOverflows) {
  LossScaler scaler({.init_scale = 0x1p126, .growth_interval = 1});
  iterate(scaler, {1.0f});
  EXPECT_EQ(scaler.scale(), 0x1p127f);
  iterate(scaler, {1.0f});
  EXPECT_EQ(scaler.scale(), 0x1p127f);  // 2^128 is beyond binary32
  EXPECT_EQ(scaler.growth_tracker(), 0);

  // The largest binary32 value itself is reachable.
  LossScaler to_max({.init_scale = 0x1.fffffep126, .growth_interval = 1});
  iterate(to_max, {1.0f});
  EXPECT_EQ(to_max.scale(), FLT_MAX);

  // An overflowing growth is not saturated either: (2^128 - 2^105) * (1 + 2^-22) is
  // 2^128 + 2^105 - 2^83, inf in binary32, so the scale stays below FLT_MAX where it was.
  LossScaler near_max(
      {.init_scale = 0x1.fffffcp127, .growth_factor = 1.0 + 0x1p-22, .growth_interval = 1});
  iterate(near_max, {1.0f});
  EXPECT_EQ(near_max.scale(), 0x1.fffffcp127f);
  EXPECT_EQ(near_max.growth_tracker(), 0);
}

TEST(LossScaler, InverseScaleIsTheBinary64ReciprocalRounded) {
  EXPECT_EQ(LossScaler({.init_scale = 3.0}).inverse_scale(), 0x1.555556p-2f);  // 1/3 to nearest
  EXPECT_EQ(LossScaler().inverse_scale(), 0x1p-16f);
  EXPECT_EQ(LossScaler({.init_scale = 0x1p-127}).inverse_scale(), 0x1p127f);
  EXPECT_EQ(LossScaler({.init_scale = 0x1p-128}).inverse_scale(), kInf);  // 2^128 overflows

  LossScaler scaler({.init_scale = 3.0});
  Grads grads({3.0f, 1.0f});
  scaler.unscale(grads.list());
  EXPECT_EQ(grads.values[0], 1.0f);  // 3 * 0x1.555556p-2 = 1 + 2^-25, rounded to nearest
  EXPECT_EQ(grads.values[1], 0x1.555556p-2f);
}

// Finiteness is judged before the multiply: with scale 0.5 (inv_scale 2) the finite gradient
// 3e38 unscales to inf, yet found_inf stays 0 and the step is taken, as in PyTorch.
TEST(LossScaler, UnscaleOverflowIsNotReported) {
  LossScaler scaler({.init_scale = 0.5});
  Grads grads({3e38f, 1.0f});
  bool ran = false;
  EXPECT_TRUE(scaler.step(grads.list(), [&] { ran = true; }));
  EXPECT_TRUE(ran);
  EXPECT_FALSE(scaler.found_inf());
  EXPECT_EQ(grads.values[0], kInf);
  EXPECT_EQ(grads.values[1], 2.0f);
}

TEST(LossScaler, MultiTensorUnscaleRecordsAnyNonFiniteElement) {
  std::vector<float> a = {1.0f, 2.0f};
  std::vector<float> b = {4.0f, kNaN, 8.0f};
  std::vector<float> c;
  const std::vector<std::span<float>> tensors = {a, c, b};
  LossScaler scaler({.init_scale = 4.0});
  scaler.unscale(tensors);
  EXPECT_TRUE(scaler.found_inf());
  EXPECT_EQ(a, (std::vector<float>{0.25f, 0.5f}));
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_TRUE(std::isnan(b[1]));
  EXPECT_EQ(b[2], 2.0f);
}

// A skipped step leaves every weight bit unchanged and the optimizer is not called.
TEST(LossScaler, SkippedStepLeavesWeightsUntouched) {
  std::vector<float> weights = {1.0f, -0.0f, std::nanf("0x7"), 3e-45f};
  const std::vector<float> before = weights;
  LossScaler scaler;
  Grads grads({1.0f, -kInf, 2.0f, 0.5f});
  int calls = 0;
  EXPECT_FALSE(scaler.step(grads.list(), [&] {
    ++calls;
    sgd(weights, grads.values, 0.1f);
  }));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(std::memcmp(weights.data(), before.data(), weights.size() * sizeof(float)), 0);
  scaler.update();
  EXPECT_EQ(scaler.skipped_steps(), std::vector<std::int64_t>{0});
}

TEST(LossScaler, SkippedStepsAreCountedFromZero) {
  LossScaler scaler({.init_scale = 1024.0});
  for (const float g : {1.0f, kInf, 1.0f, kNaN, kNaN}) iterate(scaler, {g});
  EXPECT_EQ(scaler.steps(), 5);
  EXPECT_EQ(scaler.skipped_steps(), (std::vector<std::int64_t>{1, 3, 4}));
  EXPECT_EQ(scaler.scale(), 128.0f);
}

// The edge PyTorch has no guard for. From 2^16 with backoff 0.5, k overflowing steps leave
// 2^(16-k): after 144 the scale is 2^-128, whose reciprocal 2^128 is beyond binary32, so
// inv_scale is inf; after 165 it is 2^-149, the smallest subnormal; the 166th halving gives
// 2^-150, a tie between 0 and 2^-149 that rounds to even: 0. A zero gradient then unscales to
// 0 * inf = NaN, found_inf stays 0 (the check precedes the multiply) and the step is taken.
TEST(LossScaler, ScaleCollapsesToZeroAndZeroGradientsBecomeNaN) {
  LossScaler scaler;
  for (int k = 1; k <= 166; ++k) {
    iterate(scaler, {kInf});
    if (k == 143) {
      EXPECT_EQ(scaler.scale(), 0x1p-127f);
      EXPECT_EQ(scaler.inverse_scale(), 0x1p127f);
    }
    if (k == 144) {
      EXPECT_EQ(scaler.scale(), 0x1p-128f);
      EXPECT_EQ(scaler.inverse_scale(), kInf);
    }
    if (k == 165) {
      EXPECT_EQ(scaler.scale(), 0x1p-149f);
    }
  }
  EXPECT_EQ(scaler.scale(), 0.0f);
  EXPECT_EQ(scaler.skipped_steps().size(), 166u);

  // The next iteration: the loss scaled by 0 gives zero gradients.
  Grads grads({scaler.scale_loss(2.5f), scaler.scale_loss(-1.0f)});
  std::vector<float> weights = {1.0f, 2.0f};
  EXPECT_TRUE(scaler.step(grads.list(), [&] { sgd(weights, grads.values, 0.1f); }));
  EXPECT_FALSE(scaler.found_inf());
  EXPECT_TRUE(std::isnan(grads.values[0]));
  EXPECT_TRUE(std::isnan(weights[0]));
  EXPECT_TRUE(std::isnan(weights[1]));
}

TEST(LossScaler, MinimumScaleGuardsTheCollapse) {
  LossScaler scaler({.min_scale = 1.0});
  for (int k = 0; k < 200; ++k) iterate(scaler, {kInf});
  EXPECT_EQ(scaler.scale(), 1.0f);
  Grads grads({scaler.scale_loss(0.0f), scaler.scale_loss(-1.0f)});
  std::vector<float> weights = {1.0f, 2.0f};
  EXPECT_TRUE(scaler.step(grads.list(), [&] { sgd(weights, grads.values, 0.5f); }));
  EXPECT_EQ(grads.values, (std::vector<float>{0.0f, -1.0f}));
  EXPECT_EQ(weights, (std::vector<float>{1.0f, 2.5f}));
}

TEST(LossScaler, MinimumScaleClampsABackoffThatWouldCrossIt) {
  LossScaler scaler({.init_scale = 48.0, .backoff_factor = 0.25, .min_scale = 5.0});
  iterate(scaler, {kInf});
  EXPECT_EQ(scaler.scale(), 12.0f);
  iterate(scaler, {kInf});
  EXPECT_EQ(scaler.scale(), 5.0f);  // not 3
  iterate(scaler, {kInf});
  EXPECT_EQ(scaler.scale(), 5.0f);
}

// A minimum that is no binary32 value is rounded up: the floor is never below what was asked.
TEST(LossScaler, MinimumScaleIsRoundedUp) {
  LossScaler scaler({.init_scale = 1.0, .min_scale = 0.1});
  EXPECT_EQ(scaler.rule().min_scale, 0x1.99999ap-4f);  // 0.1 rounds up to nearest anyway
  LossScaler down({.init_scale = 1.0, .min_scale = 0.7});
  // 0.7 to nearest is 0x1.666666p-1 < 0.7; rounded up it is 0x1.666668p-1.
  EXPECT_EQ(down.rule().min_scale, 0x1.666668p-1f);
}

TEST(LossScaler, NoCollapseWarningsUnlessAskedFor) {
  LossScaler scaler;
  for (int k = 0; k < 170; ++k) iterate(scaler, {kInf});
  EXPECT_TRUE(scaler.collapse_warnings().empty());
}

TEST(LossScaler, CollapseWarnings) {
  const CollapseDetection rule{3, 5};
  LossScaler scaler({.init_scale = 8.0, .collapse = rule});
  // Steps 0..: backoffs at 0, 2 (scale 2), then clean, then 6, 7 (window 3..7 holds 6, 7 only).
  for (const float g : {kInf, 1.0f, kInf, 1.0f, 1.0f, 1.0f, kInf, kInf}) iterate(scaler, {g});
  EXPECT_EQ(scaler.scale(), 0.5f);
  ASSERT_EQ(scaler.collapse_warnings().size(), 1u);
  EXPECT_EQ(scaler.collapse_warnings()[0].kind, CollapseWarning::Kind::below_one);
  EXPECT_EQ(scaler.collapse_warnings()[0].step, 7);
  EXPECT_EQ(scaler.collapse_warnings()[0].scale, 0.5f);
  // Step 8 is the third backoff within steps 4..8.
  iterate(scaler, {kNaN});
  ASSERT_EQ(scaler.collapse_warnings().size(), 2u);
  EXPECT_EQ(scaler.collapse_warnings()[1].kind, CollapseWarning::Kind::rapid_backoff);
  EXPECT_EQ(scaler.collapse_warnings()[1].step, 8);
  // At most one rapid-backoff warning per window: steps 9..12 back off but stay within 5 steps of
  // step 8; step 13 warns again.
  for (int k = 0; k < 4; ++k) iterate(scaler, {kInf});
  EXPECT_EQ(scaler.collapse_warnings().size(), 2u);
  iterate(scaler, {kInf});
  ASSERT_EQ(scaler.collapse_warnings().size(), 3u);
  EXPECT_EQ(scaler.collapse_warnings()[2].step, 13);
  EXPECT_NE(describe(scaler.collapse_warnings()[2], rule).find("3 times within 5 steps"),
            std::string::npos);
}

TEST(LossScaler, CollapseWarningWhenTheInverseOverflows) {
  LossScaler scaler({.init_scale = 0x1p-126, .collapse = CollapseDetection{100, 100}});
  iterate(scaler, {kInf});  // 2^-127: inverse 2^127, finite
  EXPECT_TRUE(scaler.collapse_warnings().empty());
  iterate(scaler, {kInf});  // 2^-128: inverse inf
  ASSERT_EQ(scaler.collapse_warnings().size(), 1u);
  EXPECT_EQ(scaler.collapse_warnings()[0].kind, CollapseWarning::Kind::inverse_overflow);
  EXPECT_EQ(scaler.collapse_warnings()[0].step, 1);
  iterate(scaler, {kInf});
  EXPECT_EQ(scaler.collapse_warnings().size(), 1u);  // once per crossing
}

TEST(LossScaler, PinnedAtTheMinimumIsNoRapidBackoff) {
  LossScaler scaler({.init_scale = 4.0, .min_scale = 4.0, .collapse = CollapseDetection{2, 10}});
  for (int k = 0; k < 10; ++k) iterate(scaler, {kInf});
  EXPECT_TRUE(scaler.collapse_warnings().empty());
  EXPECT_EQ(scaler.skipped_steps().size(), 10u);
}

TEST(ClipGradNorm, ScalesByMaxNormOverTotalNorm) {
  std::vector<float> a = {3.0f};
  std::vector<float> b = {0.0f, 4.0f};
  const std::vector<std::span<float>> tensors = {a, b};
  EXPECT_EQ(clip_grad_norm(tensors, 1.0), 5.0);
  // The coefficient 1 / (5 + 1e-6) rounded to binary32, times each gradient in binary32.
  const float coefficient = static_cast<float>(1.0 / (5.0 + 1e-6));
  EXPECT_EQ(a[0], 3.0f * coefficient);
  EXPECT_EQ(b[1], 4.0f * coefficient);
  EXPECT_EQ(b[0], 0.0f);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  std::vector<float> a = {0.5f, -0.5f};
  const std::vector<std::span<float>> tensors = {a};
  EXPECT_EQ(clip_grad_norm(tensors, 10.0), std::sqrt(0.5));
  EXPECT_EQ(a, (std::vector<float>{0.5f, -0.5f}));
}

// The squares are summed in binary64: 2^100 squared overflows binary32 but not binary64.
TEST(ClipGradNorm, NormOfLargeGradientsIsFinite) {
  std::vector<float> a = {0x1p100f, 0x1p100f};
  const std::vector<std::span<float>> tensors = {a};
  EXPECT_EQ(clip_grad_norm(tensors, 0x1p100), 0x1p100 * std::sqrt(2.0));
  EXPECT_LT(a[0], 0x1p100f);
}

TEST(ClipGradNorm, NonFiniteNorms) {
  std::vector<float> a = {kInf, 1.0f};
  const std::vector<std::span<float>> inf_tensors = {a};
  EXPECT_EQ(clip_grad_norm(inf_tensors, 1.0), HUGE_VAL);
  EXPECT_TRUE(std::isnan(a[0]));  // inf * 0
  EXPECT_EQ(a[1], 0.0f);
  std::vector<float> b = {kNaN, 1.0f};
  const std::vector<std::span<float>> nan_tensors = {b};
  EXPECT_TRUE(std::isnan(clip_grad_norm(nan_tensors, 1.0)));
  EXPECT_TRUE(std::isnan(b[1]));
}

}  // namespace
}  // namespace ampbench::train
