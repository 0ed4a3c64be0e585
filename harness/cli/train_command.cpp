#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/backend_options.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/cli/policy_options.hpp"
#include "harness/cli/text.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/runtime/cuda.hpp"
#include "harness/train/limits.hpp"
#include "harness/train/recipe_ops.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench train";

std::string number(const std::optional<double>& v, const char* format = "{:.3g}") {
  return v && std::isfinite(*v) ? fmt::format(fmt::runtime(format), *v) : std::string("-");
}

// The run's name in tables: the policy, and where it ran when both backends trained it.
std::string run_name(const train::RunResult& r, bool both) {
  return both ? fmt::format("{}@{}", r.policy, r.backend) : r.policy;
}

void write_steps(std::ostream& out, const train::RunResult& r, std::size_t every, bool both) {
  out << fmt::format("\n{} (gradients in {}, scaler {})\n", run_name(r, both), r.gradient_format,
                     r.scaler ? "on" : "off");
  out << fmt::format("{:>6}{:>11}{:>11}{:>12}{:>11}{:>11}{:>11}{:>9}{:>8}\n", "step", "loss",
                     "loss_err", "grad_err", "uflow", "uflow_sc", "scale", "tracker", "skipped");
  for (const auto& s : r.steps) {
    if (s.step % every != 0 && s.step + 1 != r.steps.size()) continue;
    out << fmt::format(
        "{:>6}{:>11}{:>11}{:>12}{:>11}{:>11}{:>11}{:>9}{:>8}\n", s.step, number(s.loss, "{:.5g}"),
        number(s.loss_error), number(s.global_gradient_error), number(s.underflow_unscaled),
        number(s.underflow_scaled), number(s.scale, "{:g}"),
        s.growth_tracker ? fmt::format("{}", *s.growth_tracker) : "-", s.skipped ? "yes" : "");
  }
}

// Where a recipe's GEMMs are multiplied: "on the hopper model", "multiplied exactly", "on
// cuBLASLt sm_90" (a device run's, train::cuda::cublaslt_recipe_gemms).
std::string gemms_on(const std::string& arch) {
  if (arch == "exact") return "multiplied exactly";
  return arch.starts_with("cuBLASLt") ? "on " + arch : "on the " + arch + " model";
}

// A recipe run's scaled tensors over all its steps: the largest amax, the last per-tensor scale,
// and the fractions of the quantized elements saturated, flushed to zero and subnormal.
void write_scaled(std::ostream& out, const train::RunResult& r,
                  const std::vector<std::string>& parameters) {
  if (r.steps.empty() || r.steps.front().scaled.empty()) return;
  std::vector<train::ScaledTensorRecord> total = r.steps.front().scaled;
  for (std::size_t s = 1; s < r.steps.size(); ++s) {
    const auto& step = r.steps[s].scaled;
    for (std::size_t i = 0; i < std::min(step.size(), total.size()); ++i) {
      train::ScaledTensorRecord& t = total[i];
      t.amax = std::max(t.amax, step[i].amax);
      t.scale = step[i].scale;
      t.elements += step[i].elements;
      t.saturated += step[i].saturated;
      t.flushed += step[i].flushed;
      t.subnormal += step[i].subnormal;
      t.blocks_lost += step[i].blocks_lost;
    }
  }
  out << fmt::format("\n{}: scaled tensors over {} steps (GEMMs {})\n", r.policy, r.steps.size(),
                     gemms_on(r.recipe_arch));
  out << fmt::format("{:<12}{:<7}{:<6}{:>11}{:>12}{:>11}{:>11}{:>11}{:>12}\n", "parameter", "gemm",
                     "role", "amax_max", "scale_last", "saturated", "flushed", "subnormal",
                     "blocks_lost");
  for (const auto& t : total) {
    const auto fraction = [&](std::uint64_t n) {
      return t.elements == 0
                 ? std::string("-")
                 : fmt::format("{:.3g}", static_cast<double>(n) / static_cast<double>(t.elements));
    };
    out << fmt::format("{:<12}{:<7}{:<6}{:>11}{:>12}{:>11}{:>11}{:>11}{:>12}\n",
                       parameters.at(t.parameter), quant::gemm_name(t.gemm),
                       quant::role_name(t.role), number(t.amax), number(t.scale, "{:.4g}"),
                       fraction(t.saturated), fraction(t.flushed), fraction(t.subnormal),
                       t.blocks_lost);
  }
}

// A share of the loss error, "+52%".
std::string share(double removed) {
  return std::isfinite(removed) ? fmt::format("{:+.0f}%", 100 * removed) : "-";
}

// A recipe's layers ranked by the share of its loss error each removes when kept in bf16; over
// several seeds, by the mean share, with each seed's beside it.
// A recipe's ranking; on both backends (`both`), one per backend, the runs named RUN@BACKEND.
void write_sensitivity(std::ostream& out, const train::RecipeSensitivity& r, bool both) {
  const bool seeds = r.seeds.size() > 1;
  out << fmt::format(
      "\n{}{}: layers kept in bf16 one at a time, by the {}share of the loss error they remove "
      "(the mean over the steps of loss_err; {} alone: {}{})\n",
      r.recipe, both ? fmt::format(" on {}", r.backend) : "",
      seeds ? "mean over the seeds of the " : "",
      both ? fmt::format("{}@{}", r.run, r.backend) : r.run, number(r.mean_loss_error),
      seeds ? fmt::format(", the mean over seeds {}", fmt::join(r.seeds, ", ")) : "");
  out << fmt::format("{:<12}{:>15}{:>10}{:>15}{}\n", "layer", "mean_loss_err", "removed",
                     "eval_loss_err", seeds ? "  removed at each seed" : "");
  for (const auto& l : r.layers) {
    std::vector<std::string> each;
    for (const double removed : l.removed_by_seed) each.push_back(share(removed));
    out << fmt::format("{:<12}{:>15}{:>10}{:>15}{}\n", l.parameter, number(l.mean_loss_error),
                       share(l.removed), number(l.eval_loss_error),
                       seeds ? fmt::format("  {}", fmt::join(each, " ")) : "");
  }
}

// The command-line flag of a LossScalerOptions member that validate() names.
std::string scaler_flag(const std::string& option) {
  if (option == "init_scale") return "init-scale";
  if (option == "growth_interval") return "growth-interval";
  if (option == "min_scale") return "min-scale";
  return option;
}

}  // namespace

int run_train(const TrainArgs& args, std::ostream& out, std::ostream& err) {
  // ---- everything is checked before any work starts -----------------------------------------
  train::TrainConfig config;
  if (!known_model(kCommand, args.model, err)) return kExitUsage;
  config.model = args.model;
  // --policy takes built-in recipes' names too; --recipe takes recipes alone.
  std::vector<std::string> policy_names;
  std::vector<std::string> recipe_names;
  for (std::string& name : split_list(args.policies)) {
    (quant::find_recipe(name) != nullptr ? recipe_names : policy_names).push_back(std::move(name));
  }
  if (args.recipes) {
    for (std::string& name : split_list(*args.recipes)) recipe_names.push_back(std::move(name));
  }
  if (policy_names.empty() && recipe_names.empty()) {
    err << fmt::format("{}: --policy: no policy or recipe named (policies: {}; recipes: {})\n",
                       kCommand, policy::builtin_policy_names(), quant::builtin_recipe_names());
    return kExitUsage;
  }
  if (!policy_names.empty()) {
    auto policies = read_policies(kCommand, policy_names, err);
    if (!policies) return kExitUsage;
    config.policies = std::move(*policies);
  }
  if (!args.arch.empty() && recipe_names.empty()) {
    err << fmt::format("{}: --arch {}: goes with a recipe (--recipe, or a recipe in --policy)\n",
                       kCommand, args.arch);
    return kExitUsage;
  }
  config.recipe_arch = args.arch;
  std::vector<std::string> notes;
  for (const std::string& name : recipe_names) {
    try {
      config.recipes.push_back(quant::recipe_by_name_or_file(name));
    } catch (const quant::RecipeError& e) {
      err << fmt::format("{}: --recipe {}\n", kCommand, e.what());
      return kExitUsage;
    }
    const quant::Recipe& recipe = config.recipes.back();
    const quant::DefaultArch arch =
        quant::default_arch(recipe, {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad});
    if (args.arch.empty() && !arch.note.empty()) notes.push_back(arch.note);
    try {
      (void)train::RecipeOps(recipe, args.arch.empty() ? arch.arch : args.arch, 0);
    } catch (const std::invalid_argument& e) {
      err << fmt::format("{}: {}: {}\n", kCommand,
                         args.arch.empty() ? "--recipe" : "--arch " + args.arch, e.what());
      return kExitUsage;
    }
  }
  if (args.keep_bf16 || args.sensitivity) {
    const char* option = args.keep_bf16 ? "--keep-bf16" : "--sensitivity";
    if (config.recipes.empty()) {
      err << fmt::format("{}: {}: goes with a recipe (--recipe, or a recipe in --policy)\n",
                         kCommand, option);
      return kExitUsage;
    }
    const std::vector<std::string> layers = train::gemm_layers(config.model);
    if (args.keep_bf16) {
      for (std::string& name : split_list(*args.keep_bf16)) {
        if (std::find(layers.begin(), layers.end(), name) == layers.end()) {
          err << fmt::format(
              "{}: --keep-bf16: '{}' is not a linear or convolution layer of the {} (its: {})\n",
              kCommand, name, config.model, fmt::join(layers, ", "));
          return kExitUsage;
        }
        if (std::find(config.keep_bf16.begin(), config.keep_bf16.end(), name) !=
            config.keep_bf16.end()) {
          err << fmt::format("{}: --keep-bf16: '{}' appears twice\n", kCommand, name);
          return kExitUsage;
        }
        config.keep_bf16.push_back(std::move(name));
      }
    }
    if (args.sensitivity && config.keep_bf16.size() == layers.size()) {
      err << fmt::format(
          "{}: --sensitivity: --keep-bf16 keeps every linear and convolution layer of the {}\n",
          kCommand, config.model);
      return kExitUsage;
    }
    config.sensitivity = args.sensitivity;
  }
  if (args.sensitivity_seeds) {
    if (!args.sensitivity) {
      err << fmt::format("{}: --sensitivity-seeds: goes with --sensitivity\n", kCommand);
      return kExitUsage;
    }
    if (const auto problem = train::sensitivity_seeds_problem(args.seed, *args.sensitivity_seeds)) {
      err << fmt::format("{}: --sensitivity-seeds: {}\n", kCommand, *problem);
      return kExitUsage;
    }
    config.sensitivity_seeds = *args.sensitivity_seeds;
  }
  const std::optional<runtime::Request> request = read_backend(kCommand, args.backend, err);
  if (!request) return kExitUsage;
  bool on_cuda = runtime::selection_of(*request).cuda;
  if (on_cuda && !config.recipes.empty()) {
    if (!args.arch.empty() && args.backend == "cuda") {
      err << fmt::format(
          "{}: --arch {}: names the Tensor Core model the CPU emulation multiplies a recipe's "
          "GEMMs on; on --backend cuda they run on the device's cuBLASLt (--backend all runs "
          "both)\n",
          kCommand, args.arch);
      return kExitUsage;
    }
    if (auto why = runtime::why_not_trainable(train::RecipeOps::base_policy(), config.model)) {
      err << fmt::format("{}: --backend {}: a recipe's other ops run as amp-bf16: {}\n", kCommand,
                         args.backend, *why);
      return kExitUsage;
    }
  }
  if (on_cuda) {
    for (const auto& p : config.policies) {
      if (auto why = runtime::why_not_trainable(p, config.model)) {
        err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, *why);
        return kExitUsage;
      }
    }
  }
  // The numbers' own ranges were checked when the command line was read (options.hpp); here
  // what they must satisfy together, and against the data below.
  config.reference_bits = args.reference_bits;
  config.steps = args.steps.value_or(train::default_steps(args.model));
  if (args.print_every > config.steps) {
    err << fmt::format("{}: --print-every: {} is more than the {} steps\n", kCommand,
                       args.print_every, config.steps);
    return kExitUsage;
  }
  config.batch = args.batch;
  config.accumulate = args.accumulate;
  config.seed = args.seed;
  if (args.scaler == "auto") {
    config.scaler = train::ScalerMode::automatic;
  } else if (args.scaler == "on") {
    config.scaler = train::ScalerMode::on;
  } else if (args.scaler == "off") {
    config.scaler = train::ScalerMode::off;
  } else {
    err << fmt::format("{}: --scaler: '{}' is not auto, on or off\n", kCommand, args.scaler);
    return kExitUsage;
  }
  config.scaler_options.init_scale = args.init_scale;
  config.scaler_options.growth_interval = args.growth_interval;
  config.scaler_options.min_scale = args.min_scale;
  config.scaler_options.collapse = train::CollapseDetection{};
  if (const auto problem = train::validate(config.scaler_options)) {
    err << fmt::format("{}: --{}: {}\n", kCommand, scaler_flag(problem->option), problem->message);
    return kExitUsage;
  }
  if (args.optimizer == "sgd") {
    train::SgdOptions sgd;
    sgd.lr = args.lr.value_or(0.05);
    config.optimizer = sgd;
  } else if (args.optimizer == "adamw") {
    train::AdamWOptions adamw;
    adamw.lr = args.lr.value_or(1e-3);
    config.optimizer = adamw;
  } else {
    err << fmt::format("{}: --optimizer: '{}' is not adamw or sgd\n", kCommand, args.optimizer);
    return kExitUsage;
  }
  config.clip_norm = args.clip_norm;
  FilePlan files;
  for (const auto& file : policy_files(policy_names)) files.input("--policy", file);
  for (const auto& name : recipe_names) {
    if (quant::find_recipe(name) == nullptr) files.input("--recipe", name);
  }
  if (!args.data.empty()) files.input("--data", args.data);
  if (!args.targets.empty()) files.input("--targets", args.targets);
  if (!args.json.empty()) files.output("--json", args.json);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  if (!args.targets.empty() && args.data.empty()) {
    err << fmt::format("{}: --targets goes with --data FILE.npy\n", kCommand);
    return kExitUsage;
  }
  train::Dataset data;
  try {
    if (args.data.empty()) {
      data = train::default_dataset(args.model, args.seed);
    } else if (args.data.ends_with(".npy")) {
      if (args.targets.empty()) {
        err << fmt::format("{}: --data {}: a .npy of inputs needs --targets FILE.npy\n", kCommand,
                           args.data);
        return kExitUsage;
      }
      data = train::load_dataset_npy(args.data, args.targets);
    } else {
      data = train::load_dataset_csv(args.data);
    }
  } catch (const train::DataError& e) {
    err << fmt::format("{}: --data: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  if (args.eval >= data.samples()) {
    err << fmt::format("{}: --eval: {} leaves nothing to train on: the data set has {} samples\n",
                       kCommand, args.eval, data.samples());
    return kExitUsage;
  }
  const train::DataSize training{
      data.samples() - args.eval, data.sample_size(), data.targets_per_sample,
      fmt::format("the training split ({} samples less --eval {})", data.samples(), args.eval)};
  if (const auto problem = train::size_problem(config, training)) {
    err << fmt::format("{}: --{}: {}\n", kCommand, problem->option, problem->message);
    return kExitUsage;
  }
  const train::Split split = train::split(data, args.eval, args.seed);
  // Last of the checks, as it makes the device's context.
  // Without one, cuda stops (exit 3) and all trains on the CPU alone, saying why.
  const runtime::Opening opened = runtime::open_backends(*request);
  if (refused(kCommand, opened, err)) return kExitNoDevice;
  const runtime::CudaStatus& cuda = opened.cuda;
  const std::string& cuda_unavailable = opened.cpu_alone;
  on_cuda = opened.runs.cuda;
  if (on_cuda) {
    // What this device's cuBLASLt cannot multiply, now that there is a device to ask.
    for (const auto& r : config.recipes) {
      if (auto why = runtime::why_not_trainable(r, config.model)) {
        err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, *why);
        return kExitUsage;
      }
    }
  }

  // ---- the run ----------------------------------------------------------------------------------
  out << fmt::format(
      "train {} on {} ({} training, {} evaluation samples): {} steps of {} x {} samples, seed {}, "
      "reference {} bits\n",
      config.model, data.name, split.train.samples(), split.eval.samples(), config.steps,
      config.accumulate, config.batch, config.seed, config.reference_bits);
  if (!cuda_unavailable.empty()) {
    out << fmt::format("cuda: unavailable, {}; the CPU backend trains alone\n", cuda_unavailable);
  }
  if (on_cuda) {
    out << fmt::format("policies on {}{}; the reference on the CPU\n", cuda.gpu,
                       args.backend == "all" ? " and emulated on the CPU, side by side" : "");
    for (const auto& p : config.policies) {
      if (auto note = runtime::non_gemm_compute_note(p, config.model))
        out << "note: " << *note << "\n";
    }
  }
  for (const auto& r : config.recipes) {
    const std::string kept =
        config.keep_bf16.empty()
            ? ""
            : fmt::format(" (but {}, kept in bf16)", fmt::join(config.keep_bf16, ", "));
    const std::string on_device = "on the device's cuBLASLt scaled GEMMs";
    const std::string on = !on_cuda ? gemms_on(train::recipe_arch(r, config))
                           : args.backend == "all"
                               ? fmt::format("{} and, emulated, {}", on_device,
                                             gemms_on(train::recipe_arch(r, config)))
                               : on_device;
    out << fmt::format(
        "recipe {}: the linear and convolution layers' GEMMs{} {}, the rest as amp-bf16\n", r.name,
        kept, on);
  }
  if (config.sensitivity && config.sensitivity_seeds > 1) {
    out << fmt::format(
        "sensitivity over seeds {} to {}: the recipes' runs repeated at each further seed with a "
        "reference of their own, on the same data; the runs below are seed {}'s\n",
        config.seed, config.seed + config.sensitivity_seeds - 1, config.seed);
  }
  for (const auto& note : notes) out << "note: " << note << "\n";
  out.flush();
  train::TrainResult result;
  try {
    const std::size_t total = train::training_steps(config);
    const std::size_t tick = std::max<std::size_t>(1, config.steps / 10);
    const auto progress = [&](std::size_t step) {
      if ((step + 1) % tick == 0)
        err << fmt::format("{}: step {} of {}\n", kCommand, step + 1, total);
    };
    if (on_cuda) {
      result = runtime::cuda_train(config, split.train, split.eval, progress, opened.runs.cpu);
    } else {
      result = train::train(config, split.train, split.eval, progress);
      result.cuda_unavailable = cuda_unavailable;
    }
  } catch (const std::invalid_argument& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  } catch (const std::runtime_error& e) {  // a failed CUDA, cuBLAS or cuDNN call
    err << fmt::format("{}: --backend {}: {}\n", kCommand, args.backend, e.what());
    return kExitFail;
  }

  const std::size_t every =
      args.print_every > 0 ? args.print_every : std::max<std::size_t>(1, config.steps / 10);
  const bool both = result.backend == "all";
  for (const auto& r : result.runs) {
    write_steps(out, r, every, both);
    write_scaled(out, r, result.parameters);
  }
  std::size_t width = 12;
  for (const auto& r : result.runs) width = std::max(width, run_name(r, both).size() + 2);
  out << fmt::format("\n{:<{}}{:>8}{:>9}{:>11}{:>10}{:>12}  {}\n", "policy", width, "scaler",
                     "skipped", "eval_loss", "accuracy", "w_diverge", "verdict");
  out << fmt::format("{:<{}}{:>8}{:>9}{:>11}{:>10}{:>12}  {}\n", "reference", width, "-", "-",
                     number(result.reference.eval_loss, "{:.5g}"),
                     number(result.reference.eval_accuracy, "{:.3f}"), "-", "");
  bool all_pass = true;
  for (const auto& r : result.runs) {
    double divergence = 0;
    for (const double d : r.weight_divergence) divergence = std::max(divergence, d);
    out << fmt::format("{:<{}}{:>8}{:>9}{:>11}{:>10}{:>12}  {}\n", run_name(r, both), width,
                       r.scaler ? "on" : "off", r.skipped_steps.size(),
                       number(r.eval_loss, "{:.5g}"), number(r.eval_accuracy, "{:.3f}"),
                       number(divergence), r.verdict);
    for (const auto& w : r.scaler_warnings) out << fmt::format("  warning: {}\n", w);
    all_pass = all_pass && r.pass;
  }
  for (const train::RecipeSensitivity& r : result.sensitivity) write_sensitivity(out, r, both);
  const std::size_t total = train::training_steps(config);
  out << fmt::format(
      "\n{} steps{} in {:.1f} s. loss_err: |loss - reference| / |reference|; grad_err: normwise "
      "error of the whole\ngradient (unscaled, before clipping); uflow, uflow_sc: fraction of the "
      "reference's nonzero gradient\nentries that are 0 in the gradient format, unscaled and "
      "times the scale; w_diverge: largest\n||w - w_ref|| / ||w_ref||.\n",
      config.steps,
      total == config.steps ? "" : fmt::format(" ({} with the sensitivity seeds' repeats)", total),
      result.seconds);
  if (!args.json.empty()) {
    if (auto problem = write_json_file(args.json, train::to_json(result))) {
      err << fmt::format("{}: --json {}: {}\n", kCommand, args.json, *problem);
      return kExitUsage;
    }
  }
  return all_pass ? kExitOk : kExitFail;
}

}  // namespace ampbench::cli
