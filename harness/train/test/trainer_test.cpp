// The training runs: the hand-written backward passes against finite differences in the reference
// precision, the emulated ops against the multiprecision ones, and the claims the trainer exists to
// measure (fp32 tracks the reference; fp16 gradients below 2^-24 vanish unless the loss is scaled;
// bf16 needs no scaler).
#include "harness/train/trainer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/train/data.hpp"
#include "harness/train/models.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/trainer_steps.hpp"

namespace ampbench::train {
namespace {

using reference::Real;

// A small data set of the cluster task.
Dataset small_clusters(std::size_t samples) {
  return make_clusters(3, samples, 6, 3);
}

// The same with its inputs multiplied by `scale` and rounded to fp16: values every policy reads
// exactly.
Dataset tiny_clusters(std::size_t samples, double scale) {
  Dataset d = small_clusters(samples);
  for (double& v : d.inputs) {
    v = numeric::round_to(numeric::formats::fp16, numeric::Rounding::nearest_even, v * scale).value;
  }
  return d;
}

template <class Model>
std::vector<ReferenceOps::Tensor> reference_parameters(const Model& model, std::uint64_t seed) {
  ReferenceOps ops;
  std::vector<ReferenceOps::Tensor> p;
  for (const auto& v : initial_parameters(model.parameters(), seed)) p.push_back(ops.constant(v));
  // Norm parameters away from 1 and 0, so that their gradients and the norms' dx are general.
  const auto specs = model.parameters();
  for (std::size_t t = 0; t < specs.size(); ++t) {
    for (std::size_t j = 0; j < p[t].size(); ++j) {
      if (specs[t].init == ParameterSpec::Init::ones) p[t][j] = Real(1) + Real(j) / 8;
      if (specs[t].init == ParameterSpec::Init::zeros) p[t][j] = Real(j) / 16 - Real(1) / 4;
    }
  }
  return p;
}

// Every parameter's gradient from the backward pass against central differences of the loss,
// (L(w + h) - L(w - h)) / 2h, all in 256-bit arithmetic: the truncation error is O(h^2) = 2^-80
// relative, the rounding error 2^-256 / h; a wrong term in any backward formula is off by O(1).
template <class Model>
void expect_gradients_match_differences(const Model& model, const Dataset& data) {
  const reference::WorkingPrecision bits(256);
  const std::size_t rows = data.samples();
  ReferenceOps ops;
  const auto params = reference_parameters(model, 11);
  std::vector<ReferenceOps::Tensor> grads;
  const Real d_loss = 3;  // the upstream gradient multiplies every gradient
  model.loss_and_gradients(ops, params, data.inputs, data.targets, rows, d_loss, grads);
  const Real h = Real(1) / Real(1099511627776.0);  // 2^-40
  for (std::size_t t = 0; t < params.size(); ++t) {
    for (std::size_t i = 0; i < params[t].size(); ++i) {
      std::vector<ReferenceOps::Tensor> unused;
      auto plus = params;
      plus[t][i] += h;
      auto minus = params;
      minus[t][i] -= h;
      const Real up =
          model.loss_and_gradients(ops, plus, data.inputs, data.targets, rows, 1, unused);
      const Real down =
          model.loss_and_gradients(ops, minus, data.inputs, data.targets, rows, 1, unused);
      const Real numeric = d_loss * (up - down) / (2 * h);
      const double error = reference::to_double(abs(numeric - grads[t][i]));
      EXPECT_LE(error, 1e-20 * (1 + std::fabs(reference::to_double(numeric))))
          << model.parameters()[t].name << "[" << i << "]: backward "
          << reference::to_double(grads[t][i]) << ", differences " << reference::to_double(numeric);
    }
  }
}

// The ops interface (harness/ops/training_ops.hpp) holds for the backends and refuses what is not
// one: a backend without attention's backward, or whose linear returns another type, is no
// TrainingOps.
struct WithoutAttentionBackward : EmulatedOps {
  using EmulatedOps::EmulatedOps;
  void attention_backward() = delete;
};
struct LinearOfAnotherType : ReferenceOps {
  int linear(const Tensor&, const Tensor&, const Tensor&, std::size_t, std::size_t, std::size_t);
};
static_assert(ops::TrainingOps<EmulatedOps> && ops::TrainingOps<ReferenceOps>);
static_assert(!ops::TrainingOps<WithoutAttentionBackward>);
static_assert(!ops::TrainingOps<LinearOfAnotherType>);
static_assert(!ops::TrainingOps<int>);

TEST(Backward, MlpGradientsMatchFiniteDifferencesInTheReferencePrecision) {
  expect_gradients_match_differences(Mlp(MlpShape{6, 7, 3}), small_clusters(5));
}

// Two 5x5 images: the strided convolution's taps cover the padding on one side only.
TEST(Backward, CnnGradientsMatchFiniteDifferencesInTheReferencePrecision) {
  expect_gradients_match_differences(Cnn(CnnShape{2, 5, 3, 3, 2}), make_images(4, 2, 2, 5, 3));
}

// Every op class in binary64: the emulated ops then compute what the reference computes, to
// binary64 accuracy.
policy::Policy fp64_policy() {
  std::string text = "name = \"fp64\"\n";
  for (const char* c : {"matmul", "convolution", "attention", "elementwise", "activation",
                        "normalization", "loss", "reduction"}) {
    text += fmt::format(
        "[{}]\ninput = \"fp64\"\ncompute = \"fp64\"\naccumulate = \"fp64\"\n"
        "output = \"fp64\"\n",
        c);
  }
  return policy::parse_policy(text, "fp64");
}

template <class Model>
void expect_emulation_agrees_with_reference(const Model& model, const Dataset& data) {
  const reference::WorkingPrecision bits(128);
  const std::size_t rows = data.samples();
  EmulatedOps emulated(fp64_policy());
  ReferenceOps reference;
  const auto initial = initial_parameters(model.parameters(), 5);
  std::vector<EmulatedTensor> pe;
  std::vector<ReferenceOps::Tensor> pr;
  for (const auto& v : initial) {
    // Parameters held in binary64, so that their gradients come back in binary64 too.
    pe.push_back(EmulatedTensor{v, numeric::formats::fp64});
    pr.push_back(reference.constant(v));
  }
  std::vector<EmulatedTensor> ge;
  std::vector<ReferenceOps::Tensor> gr;
  const double le =
      model.loss_and_gradients(emulated, pe, data.inputs, data.targets, rows, 1.0, ge);
  const Real lr =
      model.loss_and_gradients(reference, pr, data.inputs, data.targets, rows, Real(1), gr);
  EXPECT_NEAR(le, reference::to_double(lr), 1e-14);
  ASSERT_EQ(ge.size(), gr.size());
  for (std::size_t t = 0; t < ge.size(); ++t) {
    const auto r = ReferenceOps::to_doubles(gr[t]);
    for (std::size_t i = 0; i < r.size(); ++i) {
      EXPECT_NEAR(ge[t].values[i], r[i], 1e-13 * (1 + std::fabs(r[i])))
          << model.parameters()[t].name << "[" << i << "]";
    }
  }
}

// Two sequences of 3 tokens; every parameter of the block, attention's included.
TEST(Backward, TransformerGradientsMatchFiniteDifferencesInTheReferencePrecision) {
  const Dataset data = make_sequences(5, 2, 3, 4);
  expect_gradients_match_differences(
      Transformer(TransformerShape{3, data.sample_shape[1], 4, 6, 4}), data);
}

// The emulated ops in binary64 against the multiprecision ones: two independent implementations
// (backends/cpu and reference/mp) of the same model agree to binary64 accuracy, which checks the
// emulated ops' plumbing (transposes, casts, layouts, the parameter gradients).
TEST(Backward, EmulatedBinary64AgreesWithTheReference) {
  expect_emulation_agrees_with_reference(Mlp(MlpShape{6, 16, 3}), small_clusters(12));
  expect_emulation_agrees_with_reference(Cnn(CnnShape{1, 6, 4, 3, 4}), make_images(2, 6, 1, 6, 4));
  const Dataset sequences = make_sequences(7, 3, 5, 4);
  expect_emulation_agrees_with_reference(
      Transformer(TransformerShape{5, sequences.sample_shape[1], 8, 12, 4}), sequences);
}

TrainConfig config(std::vector<std::string> policies, std::size_t steps) {
  TrainConfig c;
  for (const auto& p : policies) c.policies.push_back(*policy::find_builtin(p));
  c.steps = steps;
  c.batch = 32;
  c.reference_bits = 113;
  return c;
}

double mean(const std::vector<StepRecord>& steps, double StepRecord::*field) {
  double total = 0;
  for (const auto& s : steps) total += s.*field;
  return total / static_cast<double>(steps.size());
}

// The default run in miniature: fp32 stays within 1e-5 of the reference in loss; amp-fp16 with
// the scaler and amp-bf16 without it track the reference within the verdict's budgets.
TEST(Training, Fp32AndAmpTrackTheReference) {
  const Split data = split(small_clusters(640), 128, 1);
  const TrainResult r = train(config({"fp32", "amp-fp16", "amp-bf16"}, 20), data.train, data.eval);
  ASSERT_EQ(r.runs.size(), 3u);
  for (const auto& s : r.runs[0].steps) EXPECT_LT(*s.loss_error, 1e-5) << "fp32 step " << s.step;
  for (const auto& run : r.runs) {
    EXPECT_TRUE(run.pass) << run.policy << ": " << run.verdict;
    EXPECT_TRUE(run.skipped_steps.empty()) << run.policy;
  }
  EXPECT_TRUE(r.runs[1].scaler);   // fp16 gradients: the scaler is on
  EXPECT_FALSE(r.runs[2].scaler);  // bf16 has fp32's exponent range: no scaler
  EXPECT_GT(r.reference.eval_accuracy, 0.6);
}

TEST(Training, CnnFp32AndAmpTrackTheReference) {
  const Split data = split(make_images(6, 160, 1, 8, 4), 32, 1);
  TrainConfig c = config({"fp32", "amp-fp16"}, 6);
  c.model = "cnn";
  c.batch = 16;
  const TrainResult r = train(c, data.train, data.eval);
  for (const auto& s : r.runs[0].steps) EXPECT_LT(*s.loss_error, 1e-5) << "fp32 step " << s.step;
  for (const auto& run : r.runs) EXPECT_TRUE(run.pass) << run.policy << ": " << run.verdict;
  EXPECT_EQ(r.parameters.front(), "conv1.w");
}

TEST(Training, TransformerFp32AndAmpTrackTheReference) {
  const Split data = split(make_sequences(6, 96, 8, 4), 16, 1);
  TrainConfig c = config({"fp32", "amp-bf16"}, 5);
  c.model = "transformer";
  c.batch = 8;
  const TrainResult r = train(c, data.train, data.eval);
  for (const auto& s : r.runs[0].steps) EXPECT_LT(*s.loss_error, 1e-5) << "fp32 step " << s.step;
  for (const auto& run : r.runs) EXPECT_TRUE(run.pass) << run.policy << ": " << run.verdict;
  EXPECT_EQ(r.parameters.size(), 20u);
}

// Inputs of about 2^-19 (fp16 values, so that every policy reads them exactly) make the first
// layer's weight gradients (x^T dh) fall below fp16's smallest subnormal, 2^-24: unscaled,
// amp-fp16 loses about half of them, and the rest keep a few bits as subnormals; scaled by 2^16
// they survive. bf16 keeps them without a scaler.
TEST(Training, Fp16GradientsBelowTwoToTheMinus24VanishUnlessTheLossIsScaled) {
  const Split data = split(tiny_clusters(320, 0x1p-20), 64, 1);
  TrainConfig off = config({"amp-fp16", "amp-bf16"}, 3);
  off.scaler = ScalerMode::off;
  TrainConfig on = config({"amp-fp16"}, 3);
  on.scaler = ScalerMode::on;
  const TrainResult unscaled = train(off, data.train, data.eval);
  const TrainResult scaled = train(on, data.train, data.eval);
  const auto& fp16_off = unscaled.runs[0].steps;
  const auto& bf16_off = unscaled.runs[1].steps;
  const auto& fp16_on = scaled.runs[0].steps;
  EXPECT_GT(mean(fp16_off, &StepRecord::underflow_unscaled), 0.1);
  EXPECT_LT(mean(fp16_on, &StepRecord::underflow_scaled), 0.01);
  // w1 (parameter 0): lost entirely without the scaler, kept with it and in bf16.
  // Measured at step 0: 17% of all gradient entries lost unscaled, none scaled; w1's normwise
  // error 0.19 unscaled, 5e-4 scaled, 4e-3 in bf16 (its 8-bit precision) without a scaler.
  EXPECT_GT(*fp16_off[0].gradient_error[0], 0.1);
  EXPECT_GT(*fp16_off[0].gradient_error[0], 100 * *fp16_on[0].gradient_error[0]);
  EXPECT_LT(*fp16_on[0].gradient_error[0], 0.01);
  EXPECT_LT(*bf16_off[0].gradient_error[0], 0.05);
}

// Two micro-batches of 16 make the batch of 32 that one step of 32 takes (the batch order is one
// sequence of samples), and the mean of their mean losses is that batch's mean loss: the
// reference's losses agree to its precision, the fp32 run's to binary32 rounding.
TEST(Training, AccumulatedMicroBatchesMakeTheWholeBatch) {
  const Split data = split(small_clusters(400), 80, 1);
  TrainConfig whole = config({"fp32"}, 4);
  TrainConfig parts = whole;
  parts.batch = 16;
  parts.accumulate = 2;
  const TrainResult a = train(whole, data.train, data.eval);
  const TrainResult b = train(parts, data.train, data.eval);
  for (std::size_t s = 0; s < 4; ++s) {
    EXPECT_NEAR(a.reference.steps[s].loss, b.reference.steps[s].loss,
                1e-15 * a.reference.steps[s].loss);
    EXPECT_NEAR(a.runs[0].steps[s].loss, b.runs[0].steps[s].loss, 1e-5);
  }
}

TEST(Training, JsonRecordNamesItsSchemaAndEveryParameter) {
  const Split data = split(small_clusters(200), 40, 1);
  const TrainResult r = train(config({"fp32"}, 2), data.train, data.eval);
  const auto j = to_json(r);
  EXPECT_EQ(j["schema"], "ampbench.train/1");
  EXPECT_EQ(j["parameters"].size(), 6u);
  EXPECT_EQ(j["runs"][0]["steps"].size(), 2u);
  EXPECT_TRUE(j["runs"][0]["steps"][0]["gradient_normwise_error"].contains("w1"));
  EXPECT_TRUE(j["runs"][0]["pass"].get<bool>());
}

// The ranges a counted step pushes and pops, recorded by plain-function hooks as CUPTI's are.
std::vector<std::string> g_counted_ranges;
int g_counted_depth = 0;
void count_push(const char* name) {
  g_counted_ranges.emplace_back(std::string(static_cast<std::size_t>(g_counted_depth), '/') + name);
  ++g_counted_depth;
}
void count_pop() {
  --g_counted_depth;
}

// A backend's hardware counters get steps of their own after the timed ones, each a whole
// step whose phases push and pop through the hooks handed in, as many as it may ask for and no
// more; the timed steps are not disturbed.
TEST(Profile, CountersReplayWholeStepsThroughTheirOwnHooks) {
  TrainConfig c = config({"amp-fp16"}, 2);
  const Dataset data = small_clusters(200);
  steps::ProfileHooks hooks;
  hooks.counter_steps = 2;
  std::size_t calls = 0;
  hooks.counters = [&](PolicyProfile& p, const steps::ProfileHooks::CountedStep& step) {
    EXPECT_EQ(p.step_ns.size(), 2u) << "the timed steps are done";
    profile::RangeHooks counting;
    counting.push = &count_push;
    counting.pop = &count_pop;
    g_counted_ranges.clear();
    step(counting);
    ++calls;
    EXPECT_EQ(g_counted_depth, 0) << "every push popped";
    step(counting);
    ++calls;
    EXPECT_THROW(step(counting), std::logic_error) << "a third step beyond counter_steps";
  };
  const ProfileResult r = steps::with_model(c, data, [&](const auto& model) {
    return steps::run_profile<EmulatedOps>(model, c, data, /*warmup=*/1, hooks);
  });
  EXPECT_EQ(calls, 2u);
  ASSERT_EQ(r.policies.size(), 1u);
  EXPECT_EQ(r.policies[0].step_ns.size(), 2u);
  // Two counted steps, each "step" with its phases one level down, in order (the ops' ranges are
  // further down).
  std::erase_if(g_counted_ranges, [](const std::string& name) { return name.rfind("//", 0) == 0; });
  const std::vector<std::string> one_step = {"step",     "/forward", "/loss",      "/backward",
                                             "/unscale", "/clip",    "/optimizer", "/update"};
  std::vector<std::string> both = one_step;
  both.insert(both.end(), one_step.begin(), one_step.end());
  EXPECT_EQ(g_counted_ranges, both);
}

TEST(Training, RejectsWhatItCannotRun) {
  const Split data = split(small_clusters(100), 20, 1);
  TrainConfig c = config({"fp32"}, 1);
  c.model = "resnet";
  EXPECT_THROW(train(c, data.train, data.eval), std::invalid_argument);
  c.model = "mlp";
  c.batch = 0;
  EXPECT_THROW(train(c, data.train, data.eval), std::invalid_argument);
}

}  // namespace
}  // namespace ampbench::train
