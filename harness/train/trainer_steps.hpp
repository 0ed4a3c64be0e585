// The trainer's steps as templates over the ops a policy runs on (train::EmulatedOps on the CPU,
// backends::cuda::CudaOps on the GPU), so that every backend trains, compares with the reference
// and profiles through the same code (trainer.hpp says what a step is). Not an interface for users:
// trainer.cpp instantiates it for the CPU backend, harness/train/cuda/train_on_device.cpp for the
// GPU.
//
// A policy's ops type provides the model ops of ops.hpp (at least those of the models it trains),
// phase(name), record_phases(recorder), gradient_format(), a constructor from the policy, and
// kBackend, the name of its backend ("cpu", "cuda"). Its master weights, their gradients and the
// optimizer live where MastersOf<Ops> keeps them (the device's, for the GPU), or in HostMasters
// unless the backend says otherwise; HostMasters needs parameter(values) and
// master_gradient(tensor).
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <future>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "harness/numeric/rounding.hpp"
#include "harness/profile/attribution.hpp"
#include "harness/train/clip.hpp"
#include "harness/train/models.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/recipe_ops.hpp"
#include "harness/train/trainer.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::train::steps {

using reference::Real;

template <class Master>
std::vector<std::vector<Master>> to_master(const std::vector<std::vector<double>>& values) {
  std::vector<std::vector<Master>> m;
  for (const auto& v : values) {
    std::vector<Master> t;
    t.reserve(v.size());
    for (const double x : v) {
      if constexpr (std::is_same_v<Master, float>) {
        t.push_back(static_cast<float>(x));  // exact: the values are binary32
      } else {
        t.push_back(reference::to_real(x));
      }
    }
    m.push_back(std::move(t));
  }
  return m;
}

template <class Master>
std::vector<double> to_doubles(const std::vector<Master>& v) {
  std::vector<double> d;
  d.reserve(v.size());
  for (const auto& x : v) {
    if constexpr (std::is_same_v<Master, float>) {
      d.push_back(static_cast<double>(x));
    } else {
      d.push_back(reference::to_double(x));
    }
  }
  return d;
}

// A run's master weights (binary32, or Real for the reference), their gradients and the optimizer,
// on the host: the parameters are uploaded for each step (ops.parameter) and each gradient comes
// back (ops.master_gradient). A backend whose ops keep them elsewhere names its own type with this
// interface as MastersOf<Ops> (train::cuda::DeviceMasters).
template <class Ops>
struct HostMasters {
  using Master = typename Ops::Master;
  using Tensor = typename Ops::Tensor;

  std::vector<std::vector<Master>> weights;
  std::vector<std::vector<Master>> grads;
  Optimizer<Master> optimizer;

  // `steps`: at most this many optimizer steps will be taken (unused here).
  HostMasters(Ops& /*ops*/, const std::vector<std::vector<double>>& initial,
              const OptimizerOptions& options, std::size_t /*steps*/)
      : weights(to_master<Master>(initial)), grads(weights.size()), optimizer(options) {}

  std::vector<Tensor> parameters(Ops& ops) const {
    std::vector<Tensor> params;
    for (const auto& w : weights) params.push_back(ops.parameter(w));
    return params;
  }
  // Parameter i's gradient from a micro-batch: the first of a step replaces the master gradient,
  // later ones are added to it (a binary32 addition per element for the policies, as PyTorch
  // accumulates .grad).
  void accumulate(Ops& ops, std::size_t i, const Tensor& gradient, bool first) {
    auto g = ops.master_gradient(gradient);
    if (first) {
      grads[i] = std::move(g);
    } else {
      for (std::size_t j = 0; j < g.size(); ++j) grads[i][j] += g[j];
    }
  }
  void unscale(LossScaler& scaler) { scaler.unscale(spans()); }
  // The master gradients as they stand, for the metrics.
  std::vector<std::vector<double>> gradients() const { return all_doubles(grads); }
  void clip(double max_norm) { clip_grad_norm(spans(), max_norm); }
  // The scaler's step: optimizer_step runs unless a gradient was inf or NaN.
  bool step(LossScaler& scaler, const std::function<void()>& optimizer_step) {
    return scaler.step(spans(), optimizer_step);
  }
  void optimizer_step() { optimizer.step(weights, grads); }
  std::vector<std::vector<double>> weights_as_doubles() const { return all_doubles(weights); }

 private:
  static std::vector<std::vector<double>> all_doubles(const std::vector<std::vector<Master>>& t) {
    std::vector<std::vector<double>> d;
    for (const auto& v : t) d.push_back(to_doubles(v));
    return d;
  }
  std::vector<std::span<float>> spans() { return {grads.begin(), grads.end()}; }
};

// Where a backend's runs keep their masters: on the host unless the backend's trainer specializes
// this (harness/train/cuda/device_masters.hpp keeps the CUDA backend's on the device), visible
// wherever the steps are instantiated for its ops.
template <class Ops>
struct MastersOf {
  using type = HostMasters<Ops>;
};

// One run: its ops, master weights with their gradients and optimizer, scaler, and this step's
// values.
template <class Ops>
struct Run {
  Ops ops;
  typename MastersOf<Ops>::type masters;
  std::optional<LossScaler> scaler;
  std::vector<std::vector<double>> unscaled;  // this step's unscaled gradients, for the metrics
  RunResult result;
};

// Forward and backward of every micro-batch, the gradients accumulated into the master gradients,
// and the mean loss.
template <class Model, class Ops>
double compute_gradients(const Model& model, Run<Ops>& run, const std::vector<Batch>& micro,
                         const typename Ops::Scalar& d_loss) {
  using Tensor = typename Ops::Tensor;
  const std::vector<Tensor> params = run.masters.parameters(run.ops);
  double loss = 0;
  for (std::size_t k = 0; k < micro.size(); ++k) {
    const Batch& b = micro[k];
    std::vector<Tensor> g;
    loss += Ops::to_double(
        model.loss_and_gradients(run.ops, params, b.inputs, b.targets, b.size, d_loss, g));
    for (std::size_t i = 0; i < g.size(); ++i) run.masters.accumulate(run.ops, i, g[i], k == 0);
  }
  return loss / static_cast<double>(micro.size());
}

// A policy's step: scaled backward, unscale and inf check, clip, optimizer step unless skipped,
// scaler update. `keep_unscaled`: copy the unscaled gradients into run.unscaled for the metrics
// (a profile, which compares nothing, does not time that copy).
template <class Model, class PolicyOps>
void policy_step(const Model& model, Run<PolicyOps>& run, const std::vector<Batch>& micro,
                 const TrainConfig& config, StepRecord& record, bool keep_unscaled = true) {
  const float scale = run.scaler ? run.scaler->scale() : 1.0f;
  // d (loss / K * scale) / d loss, as autograd forms it in binary32.
  const float d_loss = scale / static_cast<float>(micro.size());
  record.loss = compute_gradients(model, run, micro, static_cast<double>(d_loss));
  if (run.scaler) {
    const auto phase = run.ops.phase("unscale");
    record.scale = static_cast<double>(scale);
    run.masters.unscale(*run.scaler);
  }
  run.unscaled.clear();
  if (keep_unscaled) run.unscaled = run.masters.gradients();
  if (config.clip_norm > 0) {
    const auto phase = run.ops.phase("clip");
    run.masters.clip(config.clip_norm);
  }
  const auto optimizer_step = [&] {
    const auto phase = run.ops.phase("optimizer");
    run.masters.optimizer_step();
  };
  if (run.scaler) {
    record.skipped = !run.masters.step(*run.scaler, optimizer_step);
    const auto phase = run.ops.phase("update");
    run.scaler->update();
    record.growth_tracker = run.scaler->growth_tracker();
  } else {
    optimizer_step();
  }
  if constexpr (requires { run.ops.finish_step(); }) record.scaled = run.ops.finish_step();
}

// The reference's step: the same in Real, unscaled; clipping as clip_grad_norm_ defines it, in
// Real.
template <class Model>
void reference_step(const Model& model, Run<ReferenceOps>& run, const std::vector<Batch>& micro,
                    const TrainConfig& config, StepRecord& record) {
  record.loss = compute_gradients(model, run, micro, Real(1) / static_cast<double>(micro.size()));
  run.unscaled = run.masters.gradients();
  auto& grads = run.masters.grads;
  if (config.clip_norm > 0) {
    Real squares = 0;
    for (const auto& g : grads) {
      for (const auto& v : g) squares += v * v;
    }
    const Real coefficient = config.clip_norm / (reference::math::sqrt(squares) + 1e-6);
    if (coefficient < 1) {
      for (auto& g : grads) {
        for (auto& v : g) v *= coefficient;
      }
    }
  }
  run.masters.optimizer_step();
}

inline double norm(const std::vector<double>& v) {
  double total = 0;
  for (const double x : v) total += x * x;
  return std::sqrt(total);
}

inline std::optional<double> normwise(const std::vector<double>& x,
                                      const std::vector<double>& ref) {
  double difference = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) return std::nullopt;
    difference += (x[i] - ref[i]) * (x[i] - ref[i]);
  }
  const double r = norm(ref);
  return r == 0 ? (difference == 0 ? 0.0 : INFINITY) : std::sqrt(difference) / r;
}

template <class PolicyOps>
void compare(StepRecord& record, const Run<PolicyOps>& run, const StepRecord& ref_record,
             const std::vector<std::vector<double>>& ref_grads) {
  record.loss_error = std::fabs(record.loss - ref_record.loss) / std::fabs(ref_record.loss);
  std::vector<double> all, all_ref;
  for (std::size_t i = 0; i < ref_grads.size(); ++i) {
    all.insert(all.end(), run.unscaled[i].begin(), run.unscaled[i].end());
    all_ref.insert(all_ref.end(), ref_grads[i].begin(), ref_grads[i].end());
  }
  record.global_gradient_error = normwise(all, all_ref);
  const double vanishing = std::ldexp(norm(all_ref), -40);
  std::vector<bool> counted(ref_grads.size());
  for (std::size_t i = 0; i < ref_grads.size(); ++i) {
    counted[i] = norm(ref_grads[i]) > vanishing;
    record.gradient_error.push_back(counted[i] ? normwise(run.unscaled[i], ref_grads[i])
                                               : std::nullopt);
  }
  // The underflow fractions leave out vanishing reference gradients too: their entries are the
  // reference's rounding noise, which any format loses.
  const numeric::Format f = run.ops.gradient_format();
  const double scale = record.scale.value_or(1.0);
  std::size_t nonzero = 0, lost = 0, lost_scaled = 0;
  for (std::size_t i = 0; i < ref_grads.size(); ++i) {
    if (!counted[i]) continue;
    for (const double v : ref_grads[i]) {
      if (v == 0) continue;
      ++nonzero;
      lost += numeric::round_to(f, numeric::Rounding::nearest_even, v).value == 0;
      lost_scaled += numeric::round_to(f, numeric::Rounding::nearest_even, v * scale).value == 0;
    }
  }
  if (nonzero > 0) {
    record.underflow_unscaled = static_cast<double>(lost) / static_cast<double>(nonzero);
    record.underflow_scaled = static_cast<double>(lost_scaled) / static_cast<double>(nonzero);
  }
}

// Loss and accuracy of a run's weights on the evaluation set, in the run's own arithmetic.
template <class Model, class Ops>
void evaluate(const Model& model, Run<Ops>& run, const Dataset& eval) {
  if (eval.samples() == 0) return;
  const std::vector<typename Ops::Tensor> params = run.masters.parameters(run.ops);
  // One row of logits per target: per sample, or per token of a sequence.
  const std::size_t rows = eval.targets.size();
  const auto logits = model.logits(run.ops, params, eval.inputs, eval.samples());
  run.result.eval_loss =
      Ops::to_double(run.ops.cross_entropy(logits, eval.targets, rows, model.classes()));
  const auto values = Ops::to_doubles(logits);
  std::size_t correct = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < model.classes(); ++c) {
      if (values[r * model.classes() + c] > values[r * model.classes() + best]) best = c;
    }
    correct += static_cast<std::int64_t>(best) == eval.targets[r];
  }
  run.result.eval_accuracy = static_cast<double>(correct) / static_cast<double>(rows);
}

inline bool wants_scaler(ScalerMode mode, const numeric::Format& gradient_format) {
  if (mode != ScalerMode::automatic) return mode == ScalerMode::on;
  return gradient_format.emin > numeric::formats::fp32.emin;
}

// A run of `ops` named `name` from the initial weights, for at most `steps` optimizer steps.
template <class PolicyOps>
Run<PolicyOps> make_run(PolicyOps ops, const std::string& name, const TrainConfig& config,
                        const std::vector<std::vector<double>>& initial, std::size_t steps) {
  typename MastersOf<PolicyOps>::type masters(ops, initial, config.optimizer, steps);
  Run<PolicyOps> run{std::move(ops), std::move(masters), std::nullopt, {}, {}};
  run.result.policy = name;
  run.result.backend = PolicyOps::kBackend;
  run.result.gradient_format = run.ops.gradient_format().name;
  if (wants_scaler(config.scaler, run.ops.gradient_format())) {
    run.scaler.emplace(config.scaler_options);
    run.result.scaler = true;
  }
  return run;
}

// A policy's run from the initial weights, for at most `steps` optimizer steps.
template <class PolicyOps>
Run<PolicyOps> policy_run(const policy::Policy& p, const TrainConfig& config,
                          const std::vector<std::vector<double>>& initial, std::size_t steps) {
  return make_run(PolicyOps(p), p.name, config, initial, steps);
}

// The ops a backend's recipe runs are (RecipeOpsOn its ops) and how one is made: on the CPU
// emulation, RecipeOps with the GEMMs on the Tensor Core model recipe_arch names. A backend whose
// trainer runs recipes specializes this (harness/train/cuda/recipe_on_device.hpp), visible
// wherever the steps are instantiated for its ops.
template <class PolicyOps>
struct RecipeOpsOf;
template <>
struct RecipeOpsOf<EmulatedOps> {
  using type = RecipeOps;
  static RecipeOps make(const quant::Recipe& recipe, const TrainConfig& config,
                        std::vector<std::size_t> keep_bf16) {
    return RecipeOps(recipe, recipe_arch(recipe, config), config.seed, std::move(keep_bf16));
  }
};
template <class PolicyOps>
using RecipeOpsFor = typename RecipeOpsOf<PolicyOps>::type;

// A recipe's run on the backend of PolicyOps (RecipeOpsOf), the layers whose weights are named in
// `keep` in amp-bf16: named "RECIPE", or "RECIPE+bf16[w1,w2]" with layers kept.
template <class PolicyOps>
Run<RecipeOpsFor<PolicyOps>> recipe_run(const quant::Recipe& recipe,
                                        const std::vector<std::string>& keep,
                                        const std::vector<ParameterSpec>& specs,
                                        const TrainConfig& config,
                                        const std::vector<std::vector<double>>& initial,
                                        std::size_t steps) {
  std::vector<std::size_t> positions;
  for (const std::string& name : keep) {
    const auto it = std::find_if(specs.begin(), specs.end(),
                                 [&](const ParameterSpec& p) { return p.name == name; });
    const std::vector<std::string> layers = gemm_layers(config.model);
    if (it == specs.end() || std::find(layers.begin(), layers.end(), name) == layers.end()) {
      throw std::invalid_argument(
          fmt::format("--keep-bf16: '{}' is not a linear or convolution layer's weight of the {} "
                      "(its: {})",
                      name, config.model, fmt::join(layers, ", ")));
    }
    positions.push_back(static_cast<std::size_t>(it - specs.begin()));
  }
  const std::string name =
      keep.empty() ? recipe.name : fmt::format("{}+bf16[{}]", recipe.name, fmt::join(keep, ","));
  Run<RecipeOpsFor<PolicyOps>> run =
      make_run(RecipeOpsOf<PolicyOps>::make(recipe, config, std::move(positions)), name, config,
               initial, steps);
  run.result.recipe = recipe.name;
  run.result.recipe_arch = run.ops.arch();
  run.result.kept_bf16 = keep;
  return run;
}

// The mean over a run's steps of its loss error against the reference.
inline double mean_loss_error(const RunResult& r) {
  double sum = 0;
  std::size_t n = 0;
  for (const StepRecord& s : r.steps) {
    if (!s.loss_error) continue;
    sum += *s.loss_error;
    ++n;
  }
  return n == 0 ? 0 : sum / static_cast<double>(n);
}

// One recipe's ranking on one backend: its runs that keep one layer more than `base` (its run
// without the extra layer), on base's backend, against base.
template <class EvalError>
RecipeSensitivity rank_one(const RunResult& base, const std::vector<RunResult>& runs,
                           const TrainConfig& config, const EvalError& eval_error) {
  RecipeSensitivity s;
  s.recipe = base.recipe;
  s.run = base.policy;
  s.backend = base.backend;
  s.mean_loss_error = mean_loss_error(base);
  s.eval_loss_error = eval_error(base);
  s.seeds = {config.seed};
  s.mean_loss_error_by_seed = {s.mean_loss_error};
  for (const RunResult& r : runs) {
    if (r.recipe != base.recipe || r.backend != base.backend ||
        r.kept_bf16.size() != config.keep_bf16.size() + 1) {
      continue;
    }
    LayerSensitivity l{r.kept_bf16.back(), r.policy, mean_loss_error(r), eval_error(r), 0, {}};
    l.removed =
        s.mean_loss_error > 0 ? (s.mean_loss_error - l.mean_loss_error) / s.mean_loss_error : 0;
    l.removed_by_seed = {l.removed};
    s.layers.push_back(std::move(l));
  }
  std::stable_sort(
      s.layers.begin(), s.layers.end(),
      [](const LayerSensitivity& a, const LayerSensitivity& b) { return a.removed > b.removed; });
  return s;
}

// Each recipe's sensitivity runs against its run without the extra layer: the layers ranked by the
// share of the recipe's mean loss error they remove. On each backend apart (a run on both has the
// recipe's runs on each, against the one reference), in the order the runs came.
inline std::vector<RecipeSensitivity> rank_sensitivity(const TrainConfig& config,
                                                       const std::vector<RunResult>& runs,
                                                       double reference_eval_loss) {
  const auto eval_error = [&](const RunResult& r) {
    return std::fabs(r.eval_loss - reference_eval_loss) / std::fabs(reference_eval_loss);
  };
  std::vector<RecipeSensitivity> ranked;
  for (const quant::Recipe& recipe : config.recipes) {
    for (const RunResult& base : runs) {
      if (base.recipe != recipe.name || base.kept_bf16 != config.keep_bf16) continue;
      ranked.push_back(rank_one(base, runs, config, eval_error));
    }
  }
  return ranked;
}

inline std::vector<Batch> micro_batches(const TrainConfig& config, const Dataset& train_set,
                                        std::size_t step) {
  std::vector<Batch> micro;
  for (std::size_t k = 0; k < config.accumulate; ++k) {
    micro.push_back(gather(train_set, batch_indices(train_set.samples(), config.batch,
                                                    step * config.accumulate + k, config.seed)));
  }
  return micro;
}

// What a backend adds to a profile: hooks that every phase calls (NVTX ranges), and calls around
// each policy's timed steps (a device trace collector, memory counters), the second of which may
// add to the policy's profile (device events into its trace) before the trace is attributed.
struct ProfileHooks {
  profile::RangeHooks ranges;
  // begin_traced is called `traced_warmup` steps (at most all the warm-up steps) before the first
  // timed step, begin_timed right before it: a device collector starts at the first, and drops
  // what it recorded before the second (profile::records_from), so that CUPTI's instrumentation of
  // each kernel at its first traced launch falls in an untimed step.
  std::function<void()> begin_traced;
  std::size_t traced_warmup = 0;
  std::function<void()> begin_timed;
  std::function<void(PolicyProfile&)> end_timed;
  // When set, after every policy's timed steps (so that no policy is timed after a counting
  // session): each policy's hardware counters, on a fresh run of it brought through the warm-up
  // steps. The hook is handed a function that runs one more step, untimed, whose phases push and
  // pop through the hooks given to it (the CUPTI range profiler replays steps through it), at
  // most counter_steps times.
  using CountedStep = std::function<void(const profile::RangeHooks&)>;
  std::function<void(PolicyProfile&, const CountedStep&)> counters;
  std::size_t counter_steps = 0;
};

// Phases recorded into `recorder` while it lives (none after, whatever leaves the scope).
template <class Ops>
class RecordingPhases {
 public:
  RecordingPhases(Ops& ops, profile::PhaseRecorder& recorder) : ops_(ops) {
    ops_.record_phases(&recorder);
  }
  ~RecordingPhases() { ops_.record_phases(nullptr); }
  RecordingPhases(const RecordingPhases&) = delete;
  RecordingPhases& operator=(const RecordingPhases&) = delete;

 private:
  Ops& ops_;
};

// The hardware counters of every policy (ProfileHooks::counters), each on a fresh run.
template <class PolicyOps, class Model>
void count_hardware(const Model& model, const TrainConfig& config, const Dataset& train_set,
                    std::size_t warmup, const ProfileHooks& hooks,
                    const std::vector<std::vector<double>>& initial, ProfileResult& result) {
  for (std::size_t i = 0; i < config.policies.size(); ++i) {
    Run<PolicyOps> run =
        policy_run<PolicyOps>(config.policies[i], config, initial, warmup + hooks.counter_steps);
    for (std::size_t step = 0; step < warmup; ++step) {
      StepRecord record;
      policy_step(model, run, micro_batches(config, train_set, step), config, record, false);
    }
    std::size_t step = warmup;
    hooks.counters(result.policies[i], [&](const profile::RangeHooks& ranges) {
      if (step == warmup + hooks.counter_steps) {
        throw std::logic_error("the hardware counters asked for more than " +
                               std::to_string(hooks.counter_steps) + " steps");
      }
      profile::PhaseRecorder counted(ranges);
      const RecordingPhases<PolicyOps> recording(run.ops, counted);
      const auto micro = micro_batches(config, train_set, step++);
      StepRecord record;
      const auto whole = run.ops.phase("step");
      policy_step(model, run, micro, config, record, /*keep_unscaled=*/false);
    });
  }
}

// Every policy alone, timed phase by phase after `warmup` untimed steps.
template <class PolicyOps, class Model>
ProfileResult run_profile(const Model& model, const TrainConfig& config, const Dataset& train_set,
                          std::size_t warmup, const ProfileHooks& hooks = {}) {
  const auto initial = initial_parameters(model.parameters(), config.seed);
  ProfileResult result;
  result.config = config;
  result.warmup = warmup;
  const std::size_t traced_warmup = std::min(hooks.traced_warmup, warmup);
  for (const auto& p : config.policies) {
    Run<PolicyOps> run = policy_run<PolicyOps>(p, config, initial, warmup + config.steps);
    profile::PhaseRecorder recorder(hooks.ranges);
    for (std::size_t step = 0; step < warmup + config.steps; ++step) {
      if (step == warmup - traced_warmup && hooks.begin_traced) hooks.begin_traced();
      if (step == warmup) {
        if (hooks.begin_timed) hooks.begin_timed();
        run.ops.record_phases(&recorder);
      }
      const auto micro = micro_batches(config, train_set, step);
      StepRecord record;
      const auto timed = run.ops.phase("step");
      policy_step(model, run, micro, config, record, /*keep_unscaled=*/false);
    }
    run.ops.record_phases(nullptr);
    PolicyProfile profiled;
    profiled.policy = p.name;
    profiled.trace = recorder.trace();
    for (const auto& phase : recorder.phases()) {
      if (phase.name == "step") profiled.step_ns.push_back(phase.end_ns - phase.start_ns);
    }
    if (hooks.end_timed) hooks.end_timed(profiled);
    profiled.attribution = profile::attribute(profiled.trace);
    profiled.attribution.warnings.insert(profiled.attribution.warnings.begin(),
                                         profiled.collection_warnings.begin(),
                                         profiled.collection_warnings.end());
    result.policies.push_back(std::move(profiled));
  }
  if (hooks.counters) {
    count_hardware<PolicyOps>(model, config, train_set, warmup, hooks, initial, result);
  }
  return result;
}

// Trains every policy of the configuration on each backend of PolicyOps (e.g. EmulatedOps, or
// EmulatedOps and CudaOps side by side: each policy's runs in that order), then every recipe on
// each backend (RecipeOpsOf), beside one reference.
template <class... PolicyOps, class Model>
TrainResult run_training(const Model& model, const TrainConfig& config, const Dataset& train_set,
                         const Dataset& eval_set,
                         const std::function<void(std::size_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const reference::WorkingPrecision precision(config.reference_bits);
  const auto specs = model.parameters();
  const auto initial = initial_parameters(specs, config.seed);

  TrainResult result;
  result.config = config;
  result.dataset = train_set.name;
  result.train_samples = train_set.samples();
  result.eval_samples = eval_set.samples();
  for (const auto& s : specs) result.parameters.push_back(s.name);

  ReferenceOps reference_ops;
  Run<ReferenceOps> reference{
      {},
      HostMasters<ReferenceOps>(reference_ops, initial, config.optimizer, config.steps),
      std::nullopt,
      {},
      {}};
  reference.result.policy = "reference";
  reference.result.gradient_format = fmt::format("Real ({} bits)", config.reference_bits);
  std::vector<std::variant<Run<PolicyOps>..., Run<RecipeOpsFor<PolicyOps>>...>> runs;
  for (const auto& p : config.policies) {
    (runs.emplace_back(std::in_place_type<Run<PolicyOps>>,
                       policy_run<PolicyOps>(p, config, initial, config.steps)),
     ...);
  }
  const auto add_recipe_runs = [&](const quant::Recipe& r, const std::vector<std::string>& keep) {
    (runs.emplace_back(std::in_place_type<Run<RecipeOpsFor<PolicyOps>>>,
                       recipe_run<PolicyOps>(r, keep, specs, config, initial, config.steps)),
     ...);
  };
  for (const auto& r : config.recipes) {
    add_recipe_runs(r, config.keep_bf16);
    if (!config.sensitivity) continue;
    for (const std::string& layer : gemm_layers(config.model)) {
      if (std::find(config.keep_bf16.begin(), config.keep_bf16.end(), layer) !=
          config.keep_bf16.end()) {
        continue;
      }
      std::vector<std::string> keep = config.keep_bf16;
      keep.push_back(layer);
      add_recipe_runs(r, keep);
    }
  }

  for (std::size_t step = 0; step < config.steps; ++step) {
    const std::vector<Batch> micro = micro_batches(config, train_set, step);
    // The reference on a second core while the policies run on this one.
    StepRecord ref_record;
    ref_record.step = step;
    auto reference_done = std::async(std::launch::async, [&] {
      const reference::WorkingPrecision bits(config.reference_bits);
      reference_step(model, reference, micro, config, ref_record);
    });
    std::vector<StepRecord> records(runs.size());
    for (std::size_t r = 0; r < runs.size(); ++r) {
      records[r].step = step;
      std::visit([&](auto& run) { policy_step(model, run, micro, config, records[r]); }, runs[r]);
    }
    reference_done.get();
    reference.result.steps.push_back(ref_record);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      std::visit(
          [&](auto& run) {
            compare(records[r], run, ref_record, reference.unscaled);
            if (records[r].skipped) run.result.skipped_steps.push_back(step);
            run.result.steps.push_back(std::move(records[r]));
          },
          runs[r]);
    }
    if (progress) progress(step);
  }

  evaluate(model, reference, eval_set);
  const std::vector<std::vector<double>> ref_weights = reference.masters.weights_as_doubles();
  for (auto& any : runs) {
    auto& run_result = std::visit([](auto& run) -> RunResult& { return run.result; }, any);
    std::visit(
        [&](auto& run) {
          evaluate(model, run, eval_set);
          const std::vector<std::vector<double>> weights = run.masters.weights_as_doubles();
          for (std::size_t i = 0; i < weights.size(); ++i) {
            run.result.weight_divergence.push_back(
                normwise(weights[i], ref_weights[i]).value_or(INFINITY));
          }
          if (run.scaler && run.scaler->collapse_detection()) {
            for (const auto& w : run.scaler->collapse_warnings()) {
              run.result.scaler_warnings.push_back(describe(w, *run.scaler->collapse_detection()));
            }
          }
        },
        any);
    RunResult& r = run_result;
    const double loss_change =
        (r.eval_loss - reference.result.eval_loss) / reference.result.eval_loss;
    const double accuracy_change = r.eval_accuracy - reference.result.eval_accuracy;
    r.pass = std::isfinite(r.eval_loss) && std::fabs(loss_change) <= config.loss_budget &&
             -accuracy_change <= config.accuracy_budget;
    r.verdict = fmt::format(
        "{}: eval loss {:+.2f}% (budget {:.0f}%), accuracy {:+.1f} points (budget -{:.0f}); {} "
        "skipped step(s)",
        r.pass ? "tracks the reference" : "does not track the reference", 100 * loss_change,
        100 * config.loss_budget, 100 * accuracy_change, 100 * config.accuracy_budget,
        r.skipped_steps.size());
  }
  result.reference = std::move(reference.result);
  for (auto& any : runs) {
    std::visit([&](auto& run) { result.runs.push_back(std::move(run.result)); }, any);
  }
  if (config.sensitivity) {
    result.sensitivity = rank_sensitivity(config, result.runs, result.reference.eval_loss);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// Calls `run(model)` with the model the configuration names, shaped for the data, or throws
// std::invalid_argument when the data does not fit it.
template <class Call>
auto with_model(const TrainConfig& config, const Dataset& train_set, Call run) {
  if (config.batch == 0 || config.accumulate == 0) {
    throw std::invalid_argument("the batch and the number of micro-batches must be positive");
  }
  // What each model reads: feature vectors and one target per sample (mlp), images (cnn), token
  // sequences with a target per token (transformer).
  const auto& shape = train_set.sample_shape;
  const auto fits = [&](bool ok, const std::string& what) {
    if (!ok) {
      throw std::invalid_argument(fmt::format(
          "model {} takes {}; {} has samples of shape {} and "
          "{} target(s) per sample",
          config.model, what, train_set.name, fmt::join(shape, "x"), train_set.targets_per_sample));
    }
  };
  if (config.model == "mlp") {
    fits(train_set.targets_per_sample == 1, "feature vectors with one target each");
    const Mlp model(MlpShape{train_set.sample_size(), 256, train_set.classes});
    return run(model);
  }
  if (config.model == "cnn") {
    fits(shape.size() == 3 && shape[1] == shape[2] && train_set.targets_per_sample == 1,
         "square images (channels x size x size) with one target each");
    const Cnn model(CnnShape{shape[0], shape[1], train_set.classes, 6, 8});
    return run(model);
  }
  if (config.model == "transformer") {
    fits(shape.size() == 2 && train_set.targets_per_sample == shape[0],
         "sequences (length x features) with one target per token");
    const Transformer model(TransformerShape{shape[0], shape[1], 16, 32, train_set.classes});
    return run(model);
  }
  throw std::invalid_argument(
      fmt::format("unknown model '{}' (known: mlp, cnn, transformer)", config.model));
}

}  // namespace ampbench::train::steps
