// ampbench: the command line. It parses arguments with CLI11 and calls the library; all work is
// done by the subcommands in this folder. Exit statuses: commands.hpp.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <exception>
#include <iostream>
#include <limits>
#include <new>
#include <string>

#include "harness/cli/commands.hpp"
#include "harness/cli/options.hpp"
#include "harness/cli/standard_output.hpp"
#include "harness/cli/version.hpp"
#include "harness/io/memory.hpp"
#include "harness/train/limits.hpp"

namespace {

// CLI11 reports a bad command line with its own exit codes; ours is always 2, after a message on
// stderr that names the problem and how to get help.
int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  std::cerr << "ampbench: " << e.what() << "\n";
  std::cerr << "Run '" << app.get_name() << " help' for the list of commands, or '"
            << app.get_name() << " COMMAND --help' for one.\n";
  return ampbench::cli::kExitUsage;
}

namespace options = ampbench::cli::options;

// The ranges of the numeric options (docs: README.md, docs/training.md "Limits").
constexpr double kLargest = std::numeric_limits<double>::max();
constexpr options::Unsigned kAnySeed{};
constexpr options::Finite kAtLeastZero{0.0, kLargest, false, false};
constexpr options::Finite kAboveZero{0.0, kLargest, true, false};
constexpr options::Integer kAtLeastOne{1, std::numeric_limits<std::int64_t>::max()};
constexpr options::Unsigned kSteps{1, ampbench::train::kMaxSteps};
constexpr options::Unsigned kBatch{1, ampbench::train::kMaxBatch};

// The command line parsed and the command run; its exit status. main() below adds the last resort.
int run_command_line(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  CLI::App app{"ampbench: numerical verification and profiling of mixed-precision training",
               "ampbench"};
  app.set_version_flag("--version", ampbench::cli::version_text());
  app.require_subcommand(1);
  app.fallthrough(false);

  auto* help = app.add_subcommand("help", "Show the commands and what they do");

  bool formats_json = false;
  auto* formats = app.add_subcommand(
      "formats", "Table of the number formats: bits, precision, exponent range, key values");
  formats->add_flag("--json", formats_json, "Machine-readable output with exact values");

  ampbench::cli::RoundArgs round_args;
  auto* round = app.add_subcommand(
      "round",
      "Round values read from stdin (one per line) to a format; print result, bits and event");
  round->add_option("--to", round_args.to,
                    "Target format (fp64 fp32 tf32 bf16 fp16 e4m3 e5m2 "
                    "or user:p=P,emin=E,emax=E); required");
  round->add_option("--mode", round_args.mode, "Rounding mode: rne rna rz ru rd rto sr srp sre")
      ->capture_default_str();
  options::add_unsigned(*round, "--seed", round_args.seed, kAnySeed, "Seed of the stochastic modes")
      ->capture_default_str();
  round->add_option("--subnormals", round_args.subnormals, "Subnormal numbers on or off")
      ->check(CLI::IsMember({"on", "off"}));
  round
      ->add_option("--overflow", round_args.overflow,
                   "Beyond the range: inf (NaN where the format has no infinity) or saturate")
      ->check(CLI::IsMember({"inf", "saturate"}));

  ampbench::cli::DotArgs dot_args;
  auto* dot = app.add_subcommand(
      "dot",
      "Exact dot product of two vectors (JSON {\"a\": [...], \"b\": [...]}): its correct "
      "rounding, and the naive sequential result with its error in ulps");
  dot->add_option("--format", dot_args.format,
                  "Format of the inputs and of the rounded result (see 'ampbench formats'); "
                  "required");
  dot->add_option("--accumulate", dot_args.accumulate,
                  "Format of the naive loop's accumulator (default: --format)");
  dot->add_option("--mode", dot_args.mode, "Rounding mode: rne rna rz ru rd rto sr srp sre")
      ->capture_default_str();
  options::add_unsigned(*dot, "--seed", dot_args.seed, kAnySeed, "Seed of the stochastic modes")
      ->capture_default_str();
  dot->add_option("--inputs", dot_args.inputs, "JSON file to read (default: standard input)");
  dot->add_flag("--json", dot_args.json, "One JSON object instead of text");

  ampbench::cli::PoliciesArgs policies_args;
  auto* policies = app.add_subcommand(
      "policies",
      "Precision policies: input, compute, accumulate and output format of every op class");
  policies->add_option(
      "--policy", policies_args.policy,
      "One policy: a built-in name (fp32 tf32 fp16 bf16 amp-fp16 amp-bf16 half-model "
      "bf16-model) or a FILE.toml (default: every built-in)");
  policies->add_flag("--json", policies_args.json, "Machine-readable output with the sources");

  ampbench::cli::AuditArgs audit_args;
  auto* audit = app.add_subcommand(
      "audit",
      "Per-op precision audit: error of an op under precision policies against its correctly "
      "rounded reference, with bounds and budgets (exit 1 when a case fails)");
  audit->add_option("--op", audit_args.op,
                    "The op, or ops separated by commas (docs/audit.md); or --all");
  audit->add_flag("--all", audit_args.all,
                  "Every op at its default shape under fp32, tf32, fp16, bf16, amp-fp16 and "
                  "amp-bf16 (the nightly suite's matrix)");
  audit->add_option("--shape", audit_args.shape, "Sizes separated by x: 64x1024, gemm MxNxK");
  audit->add_option(
      "--policy", audit_args.policies,
      "Policies, comma-separated: fp32 tf32 fp16 bf16 amp-fp16 amp-bf16 half-model bf16-model "
      "or FILE.toml");
  audit->add_option("--dist", audit_args.dist, "Input distribution (docs/inputs.md)")
      ->capture_default_str();
  options::add_unsigned(*audit, "--seed", audit_args.seed, kAnySeed, "Seed of the inputs")
      ->capture_default_str();
  // No op has more outputs than an operand may have elements (2^27).
  options::add_unsigned(*audit, "--samples", audit_args.samples, {0, std::uint64_t{1} << 27},
                        "Compute the reference at K seeded output positions (0: all)")
      ->capture_default_str();
  audit
      ->add_option("--backend", audit_args.backend,
                   "cpu, cuda (exit 3 without a usable GPU) or all (each case on both)")
      ->capture_default_str();
  audit->add_option("--gemm-compute", audit_args.gemm_compute,
                    "cuBLAS compute type of the GEMMs on cuda: 32F 32F_PEDANTIC 32F_FAST_TF32 "
                    "32F_FAST_16F 32F_FAST_16BF 16F (default: the policy's, docs/audit.md)");
  audit->add_option("--conv-math", audit_args.conv_math,
                    "cuDNN math type of the convolutions on cuda: default tensor_op "
                    "tensor_op_allow_conversion fma (default: the policy's, "
                    "docs/cudnn-convolution.md)");
  audit->add_option("--summation", audit_args.summation, "sequential or pairwise")
      ->capture_default_str();
  audit->add_option("--mma", audit_args.mma,
                    "Tensor Core model for gemm and dot: volta turing ampere ada hopper blackwell, "
                    "or a preset name (docs/mma-models.md)");
  audit->add_option("--budgets", audit_args.budgets,
                    "Budgets file (default: suites/budgets.toml if present; none: built-in only)");
  audit->add_option("--json", audit_args.json, "Write one record per case to this file");
  audit->add_option("--recipe", audit_args.recipes,
                    "FP8 and microscaling recipes, comma-separated: fp8-delayed fp8-current "
                    "fp8-block mxfp8 mxfp6 mxfp4 nvfp4 or FILE.toml; audits linear's fprop, dgrad "
                    "and wgrad GEMMs quantized as the recipe says (docs/scaling.md)");
  audit->add_option(
      "--arch", audit_args.arch,
      "With --recipe: the Tensor Core model that multiplies: ada hopper blackwell, or "
      "exact (default: hopper where it has a model of the recipe's formats, else "
      "exact)");
  options::add_unsigned(*audit, "--promote-interval", audit_args.promote_interval,
                        {0, std::uint64_t{1} << 27},
                        "With --recipe: promote the Tensor Core accumulation to fp32 every N "
                        "products along K (0: never; default: the recipe's)");
  audit
      ->add_option("--gemm", audit_args.gemms,
                   "With --recipe: the GEMMs, comma-separated: fprop dgrad wgrad")
      ->capture_default_str();

  bool ops_json = false;
  auto* ops = app.add_subcommand(
      "ops", "The op catalog: class, shape syntax, operands, reference and a-priori bound");
  ops->add_flag("--json", ops_json, "Machine-readable output");

  ampbench::cli::QuantizeArgs quantize_args;
  auto* quantize = app.add_subcommand(
      "quantize",
      "A tensor quantized as an FP8 or microscaling recipe quantizes a GEMM operand: the scales, "
      "every element's bits and value, the dequantized values, their error and the events");
  quantize->add_option(
      "--recipe", quantize_args.recipe,
      "fp8-delayed fp8-current fp8-block mxfp8 mxfp6 mxfp4 nvfp4, or a recipe FILE.toml; required");
  quantize->add_option("--role", quantize_args.role, "The operand: x, w or dy")
      ->capture_default_str();
  quantize->add_option("--gemm", quantize_args.gemm,
                       "The GEMM the operand enters: fprop (x, w), dgrad (dy, w) or wgrad (x, dy: "
                       "the tensor as the weight-gradient GEMM reads it, K along the row); default "
                       "fprop, dgrad for dy");
  options::add_unsigned(*quantize, "--hadamard-seed", quantize_args.hadamard_seed, kAnySeed,
                        "The Hadamard transform's random signs from this seed (default: the "
                        "recipe's, else Transformer Engine's fixed vector)");
  quantize->add_flag("--print-recipe", quantize_args.print_recipe,
                     "Print the recipe (with the options applied) as a TOML recipe file");
  quantize->add_option("--inputs", quantize_args.inputs,
                       "Tensor file (.json, .json#member, .npy), 1 or 2 dimensions");
  quantize->add_option("--dist", quantize_args.dist,
                       "Input distribution (see docs/inputs.md; default normal)");
  quantize->add_option("--shape", quantize_args.shape,
                       "COLS or ROWSxCOLS (default: two of the recipe's blocks)");
  options::add_unsigned(*quantize, "--seed", quantize_args.seed, kAnySeed,
                        "Seed of the distribution and of stochastic rounding")
      ->capture_default_str();
  quantize->add_option("--element", quantize_args.element,
                       "MX element format: mxfp8 e4m3|e5m2, mxfp6 e3m2|e2m3");
  quantize->add_option("--mode", quantize_args.mode,
                       "Rounding mode of the elements (default: the recipe's)");
  quantize
      ->add_option("--fp8-format", quantize_args.fp8_format,
                   "fp8-delayed/fp8-current: hybrid (e5m2 for dy) or e4m3")
      ->capture_default_str()
      ->check(CLI::IsMember({"hybrid", "e4m3"}));
  quantize
      ->add_option("--scales", quantize_args.scales,
                   "fp8-current/fp8-block: pow2 or fp32 (default: fp32, resp. pow2)")
      ->check(CLI::IsMember({"pow2", "fp32"}));
  options::add_integer(*quantize, "--margin", quantize_args.margin, {-126, 126},
                       "fp8-delayed: scale = fp8_max / amax / 2^margin")
      ->capture_default_str();
  options::add_unsigned(*quantize, "--amax-history-len", quantize_args.amax_history_len,
                        {1, std::uint64_t{1} << 20}, "fp8-delayed: the amax history's length")
      ->capture_default_str();
  quantize
      ->add_option("--amax-compute-algo", quantize_args.amax_compute_algo,
                   "fp8-delayed: max or most_recent")
      ->capture_default_str()
      ->check(CLI::IsMember({"max", "most_recent"}));
  quantize->add_option("--amax-history", quantize_args.amax_history,
                       "fp8-delayed: earlier steps' amaxes, comma-separated, oldest first");
  quantize->add_option("--scale", quantize_args.scale,
                       "fp8-delayed: this step's scale (a positive binary32 value)");
  quantize->add_flag("--json", quantize_args.json, "One JSON object");

  ampbench::cli::EvalArgs eval_args;
  auto* eval = app.add_subcommand(
      "eval",
      "One op on your own inputs: each output, its correctly rounded reference and the "
      "ulp error");
  eval->add_option("--op", eval_args.op, "The op (see 'ampbench ops'); required");
  eval->add_option("--policy", eval_args.policy, "Policy name or FILE.toml")->capture_default_str();
  eval->add_option("--mma", eval_args.mma, "Tensor Core model for gemm and dot");
  eval->add_option("--inputs", eval_args.inputs,
                   "JSON file: {\"operand\": nested row-major list of numbers or hex-float "
                   "strings, ...}; required");
  eval->add_flag("--json", eval_args.json, "One JSON object: output, reference, ulp_error");
  eval->add_option("--backend", eval_args.backend,
                   "cpu (the emulator), cuda (the GPU's kernels and libraries) or all (both)")
      ->capture_default_str();

  ampbench::cli::ScalerArgs scaler_args;
  double scaler_min_scale = 0.0;
  auto* scaler = app.add_subcommand(
      "scaler",
      "GradScaler-compatible loss scaler over steps read from stdin (ok, inf or nan, one per "
      "line): the scale used, whether the step was skipped, the scale and growth tracker after");
  options::add_finite(*scaler, "--init-scale", scaler_args.init_scale, kAboveZero,
                      "Initial scale (binary32)")
      ->capture_default_str();
  options::add_finite(*scaler, "--growth-factor", scaler_args.growth_factor,
                      {1.0, kLargest, true, false}, "Growth factor, > 1")
      ->capture_default_str();
  options::add_finite(*scaler, "--backoff-factor", scaler_args.backoff_factor,
                      {0.0, 1.0, true, true}, "Backoff factor, in (0, 1)")
      ->capture_default_str();
  options::add_integer(*scaler, "--growth-interval", scaler_args.growth_interval, kAtLeastOne,
                       "Consecutive clean steps before the scale grows")
      ->capture_default_str();
  auto* scaler_min_scale_option = options::add_finite(
      *scaler, "--min-scale", scaler_min_scale, kAtLeastZero,
      "Beyond PyTorch: the backoff never takes the scale below this (default: no minimum)");
  options::add_integer(*scaler, "--collapse-backoffs", scaler_args.collapse_backoffs, kAtLeastOne,
                       "Warn when the scale backs off this many times ...")
      ->capture_default_str();
  options::add_integer(*scaler, "--collapse-window", scaler_args.collapse_window, kAtLeastOne,
                       "... within this many steps")
      ->capture_default_str();
  scaler->add_flag("--hex", scaler_args.hex, "Scales as C99 hex floats");

  ampbench::cli::TrainArgs train_args;
  double train_lr = 0;
  auto* train = app.add_subcommand(
      "train",
      "Whole training steps under precision policies side by side with a multiprecision "
      "reference: loss, gradient errors, underflow, loss scale, verdict (exit 1 when a policy "
      "does not track the reference)");
  train->add_option("--model", train_args.model, "mlp")->capture_default_str();
  train
      ->add_option("--policy", train_args.policies,
                   "Policies (or built-in recipes), comma-separated, or FILE.toml")
      ->capture_default_str();
  train->add_option("--recipe", train_args.recipes,
                    "FP8/microscaling recipes trained beside the policies: names or FILE.toml, "
                    "comma-separated (docs/training.md)");
  train->add_option("--arch", train_args.arch,
                    "The recipes' Tensor Core model on the CPU: hopper, blackwell, ... or exact "
                    "(default: blackwell for MX/NVFP4, else hopper); on the device they run on "
                    "cuBLASLt");
  train->add_option("--keep-bf16", train_args.keep_bf16,
                    "Linear and convolution layers (their weights' names, comma-separated) every "
                    "recipe keeps in bf16");
  train->add_flag(
      "--sensitivity", train_args.sensitivity,
      "Each recipe again once per other linear or convolution layer kept in bf16, ranked "
      "by the share of the loss error they remove");
  std::size_t train_sensitivity_seeds = 1;
  auto* train_sensitivity_seeds_option = options::add_unsigned(
      *train, "--sensitivity-seeds", train_sensitivity_seeds,
      {1, ampbench::train::kMaxSensitivitySeeds},
      "With --sensitivity: rank by the mean over this many seeds (--seed and the next ones; "
      "default 1)");
  options::add_integer(*train, "--reference-bits", train_args.reference_bits, {64, 4096},
                       "Precision of the reference")
      ->capture_default_str();
  std::size_t train_steps = 0;
  auto* train_steps_option =
      options::add_unsigned(*train, "--steps", train_steps, kSteps,
                            "Optimizer steps (default: 200 mlp, 100 cnn and transformer)");
  options::add_unsigned(*train, "--batch", train_args.batch, kBatch,
                        "Samples per micro-batch (at most the training split's)")
      ->capture_default_str();
  options::add_unsigned(*train, "--accumulate", train_args.accumulate,
                        {1, ampbench::train::kMaxAccumulate}, "Micro-batches per optimizer step")
      ->capture_default_str();
  options::add_unsigned(*train, "--seed", train_args.seed, kAnySeed,
                        "Seed of the weights, data and batch order")
      ->capture_default_str();
  train
      ->add_option("--scaler", train_args.scaler,
                   "Loss scaler: auto (on where gradients are fp16-like), on, off")
      ->capture_default_str();
  options::add_finite(*train, "--init-scale", train_args.init_scale, kAboveZero,
                      "The loss scaler's initial scale")
      ->capture_default_str();
  options::add_integer(*train, "--growth-interval", train_args.growth_interval, kAtLeastOne,
                       "Clean steps before the scale grows")
      ->capture_default_str();
  double train_min_scale = 0;
  auto* train_min_scale_option =
      options::add_finite(*train, "--min-scale", train_min_scale, kAtLeastZero,
                          "Never back the scale off below this (default: no floor)");
  train->add_option("--optimizer", train_args.optimizer, "adamw or sgd (momentum 0.9)")
      ->capture_default_str();
  auto* train_lr_option = options::add_finite(*train, "--lr", train_lr, kAtLeastZero,
                                              "Learning rate (default 1e-3 adamw, 0.05 sgd)");
  options::add_finite(*train, "--clip-norm", train_args.clip_norm, kAtLeastZero,
                      "Global gradient norm clip (0: none)")
      ->capture_default_str();
  train->add_option(
      "--data", train_args.data,
      "FILE.csv (features..., label) or FILE.npy with --targets (default: synthetic)");
  train->add_option("--targets", train_args.targets, "FILE.npy of integer labels");
  options::add_unsigned(*train, "--eval", train_args.eval, {1, std::uint64_t{1} << 24},
                        "Samples held out for evaluation (leaving at least a batch to train on)")
      ->capture_default_str();
  options::add_unsigned(*train, "--print-every", train_args.print_every, kSteps,
                        "Table row every N steps (at most --steps; default: a tenth of them)");
  train->add_option("--json", train_args.json, "Write the record ampbench.train/1 to this file");
  train
      ->add_option(
          "--backend", train_args.backend,
          "cpu (the emulator), cuda (the policies and recipes on the GPU, the reference on "
          "the CPU) or all (both, side by side)")
      ->capture_default_str();

  ampbench::cli::ProfileArgs profile_args;
  auto* profile = app.add_subcommand(
      "profile",
      "Time training steps phase by phase under each policy (forward, backward, unscale, clip, "
      "optimizer, update); a Chrome trace and a JSON record");
  profile->add_option("--model", profile_args.model, "mlp, cnn or transformer")
      ->capture_default_str();
  profile->add_option("--policy", profile_args.policies, "Policies, comma-separated, or FILE.toml")
      ->capture_default_str();
  options::add_unsigned(*profile, "--steps", profile_args.steps, kSteps, "Timed steps")
      ->capture_default_str();
  options::add_unsigned(*profile, "--warmup", profile_args.warmup, {0, ampbench::train::kMaxWarmup},
                        "Untimed steps first")
      ->capture_default_str();
  options::add_unsigned(*profile, "--batch", profile_args.batch, kBatch,
                        "Samples per step (at most the data set's)")
      ->capture_default_str();
  options::add_unsigned(*profile, "--seed", profile_args.seed, kAnySeed,
                        "Seed of the weights and data")
      ->capture_default_str();
  profile->add_option("--backend", profile_args.backend, "cpu (host timers) or cuda (the GPU)")
      ->capture_default_str();
  profile->add_option("--trace", profile_args.trace,
                      "Chrome trace JSON for Perfetto or chrome://tracing");
  profile->add_option("--json", profile_args.json, "Write the record to this file");
  profile->add_flag("--hardware-metrics", profile_args.hardware_metrics,
                    "With --backend cuda: Tensor Core pipe and DRAM counters per phase and op "
                    "(CUPTI range profiler, after the timed steps)");

  ampbench::cli::RunArgs run_args;
  auto* run = app.add_subcommand(
      "run",
      "Run a suite of audit cases and training runs; one record per case in DIR/result.json "
      "(exit 1 when a case fails)");
  run->add_option("suite", run_args.suite, "The suite file, e.g. suites/quick.toml")->required();
  run->add_option("--shard", run_args.shard, "I/N: only the cases whose index % N == I")
      ->capture_default_str();
  run->add_option("--out", run_args.out, "Directory of result.json (default: results/<suite>)");
  run->add_option("--backend", run_args.backend,
                  "cpu, cuda (exit 3 without a usable GPU) or all: each audit case on the CPU "
                  "and the GPU; what the GPU cannot run is listed")
      ->capture_default_str();
  run->add_option("--history", run_args.history,
                  "History database the run is recorded in (default: history.sqlite beside the "
                  "--out directory; none: not recorded)");

  ampbench::cli::CompareArgs compare_args;
  auto* compare = app.add_subcommand(
      "compare",
      "Compare two result files case by case: regressions, improvements, new failures, added and "
      "missing cases (exit 1 on a regression, a new failure or a missing case)");
  compare->add_option("base", compare_args.base, "The baseline result.json")->required();
  compare->add_option("new", compare_args.current, "The result.json to judge")->required();
  double compare_tolerance = 0.1;
  auto* compare_tolerance_option = options::add_finite(
      *compare, "--tolerance", compare_tolerance, kAtLeastZero,
      "Relative change for the worse that is not a regression (default: the baseline suite's "
      "tolerance, or 0.1)");
  options::add_finite(*compare, "--floor", compare_args.floor, kAtLeastZero,
                      "Absolute change that is never a regression")
      ->capture_default_str();
  compare->add_flag("--side-by-side", compare_args.side_by_side,
                    "Every case's main metrics side by side (the default when the two files come "
                    "from different devices)");

  ampbench::cli::MergeArgs merge_args;
  auto* merge = app.add_subcommand(
      "merge", "Join the result files of a suite's shards into one, in the suite's order");
  merge->add_option("shards", merge_args.shards, "The shards' result files");
  merge->add_option("--out", merge_args.out, "The merged result file")->required();
  merge->add_flag("--partial", merge_args.partial,
                  "Merge even when shards are missing (compare reports their cases missing)");
  merge->add_flag("--drop-detail", merge_args.drop_detail,
                  "Leave out each record's detail: keys, statuses and metrics are what compare "
                  "reads (a compact baseline)");

  ampbench::cli::ReportArgs report_args;
  auto* report = app.add_subcommand(
      "report",
      "Result records as an HTML page with charts, Markdown tables and JUnit XML (one test case "
      "per record); records of one suite from different devices as a comparison of the devices");
  report->add_option("results", report_args.results, "Result files (results/SUITE/result.json)");
  report->add_option("--html", report_args.html,
                     "Write the HTML page here (self-contained: inline CSS and SVG, no script)");
  report->add_option("--md", report_args.markdown,
                     "Write the Markdown here (default, with no other output: standard output)");
  report->add_option("--junit", report_args.junit, "Write JUnit XML here");
  report->add_flag("--side-by-side", report_args.side_by_side,
                   "Compare the records as devices side by side even when some come from one "
                   "device (two or more records of one suite)");

  ampbench::cli::HistoryArgs history_args;
  auto* history = app.add_subcommand(
      "history",
      "How a metric moved over the recorded runs and revisions (SQLite); --runs lists the runs, "
      "--add records result files");
  history->add_option("--db", history_args.db, "The history database")->capture_default_str();
  history->add_option("--add", history_args.add,
                      "Record these result files (results from other machines or shards)");
  history->add_flag("--partial", history_args.partial,
                    "With --add: record a partial run (its record says complete: false) too, "
                    "flagged as partial");
  history->add_flag("--runs", history_args.runs, "List the recorded runs");
  history->add_option("--op", history_args.op, "Audit cases of this op");
  history->add_option("--policy", history_args.policy,
                      "Audit cases under this policy; of training runs, this policy's metrics");
  history->add_option("--model", history_args.model, "Training runs of this model");
  history->add_option("--key", history_args.key, "Cases whose key contains this text");
  history->add_option("--metric", history_args.metric,
                      "The metric (default: normwise_rel_error of audit cases, eval_loss_error "
                      "of each policy of training runs)");
  history->add_option("--suite", history_args.suite, "Runs of this suite");
  options::add_unsigned(*history, "--last", history_args.last, {1, 1000000000},
                        "Only the last N values of each case (runs)");
  history->add_flag("--json", history_args.json, "Machine-readable output");

  ampbench::cli::FingerprintArgs fingerprint_args;
  auto* fingerprint = app.add_subcommand(
      "fingerprint",
      "Tensor Core feature tests (subnormals, exact products, alignment bits, output rounding, "
      "normalisation, products per fused step, monotonicity): the inferred parameters against "
      "the architecture's preset (exit 1 on a mismatch, 3 without a usable GPU)");
  fingerprint->add_option("--format", fingerprint_args.format, "fp16 bf16 tf32 fp8 e4m3 e5m2")
      ->capture_default_str();
  fingerprint->add_option("--accumulator", fingerprint_args.accumulator, "fp32 or fp16")
      ->capture_default_str();
  fingerprint->add_option("--arch", fingerprint_args.arch,
                          "Compare with this architecture's preset: volta turing ampere ada "
                          "hopper blackwell (default: the device's, or --preset)");
  fingerprint->add_option("--preset", fingerprint_args.preset,
                          "cpu: the preset to emulate; cuda: the preset to compare with "
                          "(docs/mma-models.md); sets format and accumulator");
  fingerprint
      ->add_option("--backend", fingerprint_args.backend,
                   "cuda (the GPU's matrix instructions) or cpu (the preset's model)")
      ->capture_default_str();
  fingerprint
      ->add_option("--instruction", fingerprint_args.instruction,
                   "cuda: auto (wgmma on Hopper, mma elsewhere), mma (WMMA / mma.sync) or wgmma")
      ->capture_default_str();
  fingerprint->add_option("--json", fingerprint_args.json,
                          "Write the record with every test's probes and outputs to this file");
  options::refuse_empty_values(app);

  const std::string overview = app.help();  // before parsing: afterwards help() describes the
                                            // chosen subcommand
  // CLI11 would report an unknown command as a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string name = argv[1];
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->get_name() == name;
    if (!known) {
      std::cerr << "ampbench: unknown command '" << name << "'\n";
      std::cerr << "Run 'ampbench help' for the list of commands.\n";
      return ampbench::cli::kExitUsage;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  } catch (const options::OptionError& e) {  // a bad value: the message names the option
    std::cerr << e.what() << "\n";
    return ampbench::cli::kExitUsage;
  }

  if (*help) {
    std::cout << overview;
    return ampbench::cli::kExitOk;
  }
  if (*formats) return ampbench::cli::run_formats(formats_json, std::cout);
  if (*round) return ampbench::cli::run_round(round_args, std::cin, std::cout, std::cerr);
  if (*dot) return ampbench::cli::run_dot(dot_args, std::cin, std::cout, std::cerr);
  if (*policies) return ampbench::cli::run_policies(policies_args, std::cout, std::cerr);
  if (*audit) {
    for (const CLI::Option* option : audit->get_options()) {
      if (option->count() > 0) audit_args.given.push_back(option->get_name());
    }
    return ampbench::cli::run_audit(audit_args, std::cout, std::cerr);
  }
  if (*ops) return ampbench::cli::run_ops(ops_json, std::cout);
  if (*eval) return ampbench::cli::run_eval(eval_args, std::cout, std::cerr);
  if (*quantize) {
    for (const CLI::Option* option : quantize->get_options()) {
      if (option->count() > 0) quantize_args.given.push_back(option->get_name());
    }
    return ampbench::cli::run_quantize(quantize_args, std::cout, std::cerr);
  }
  if (*run) return ampbench::cli::run_suite(run_args, std::cout, std::cerr);
  if (*compare) {
    if (*compare_tolerance_option) compare_args.tolerance = compare_tolerance;
    return ampbench::cli::run_compare(compare_args, std::cout, std::cerr);
  }
  if (*merge) return ampbench::cli::run_merge(merge_args, std::cout, std::cerr);
  if (*report) return ampbench::cli::run_report(report_args, std::cout, std::cerr);
  if (*history) return ampbench::cli::run_history(history_args, std::cout, std::cerr);
  if (*profile) return ampbench::cli::run_profile(profile_args, std::cout, std::cerr);
  if (*fingerprint) return ampbench::cli::run_fingerprint(fingerprint_args, std::cout, std::cerr);
  if (*train) {
    if (*train_lr_option) train_args.lr = train_lr;
    if (*train_steps_option) train_args.steps = train_steps;
    if (*train_sensitivity_seeds_option) train_args.sensitivity_seeds = train_sensitivity_seeds;
    if (*train_min_scale_option) train_args.min_scale = train_min_scale;
    return ampbench::cli::run_train(train_args, std::cout, std::cerr);
  }
  if (*scaler) {
    if (*scaler_min_scale_option) scaler_args.min_scale = scaler_min_scale;
    return ampbench::cli::run_scaler(scaler_args, std::cin, std::cout, std::cerr);
  }
  return ampbench::cli::kExitUsage;
}

// Whatever escapes a command (memory exhausted, an error of ampbench's own) ends the run with a
// message and kExitInternal, never with std::terminate's abort.
int run_guarded(int argc, char** argv) {
  try {
    return run_command_line(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cout.flush();
    std::cerr << "ampbench: internal error: out of memory (std::bad_alloc)\n";
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "ampbench: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cout.flush();
    std::cerr << "ampbench: internal error: an exception that is not a std::exception\n";
  }
  return ampbench::cli::kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything is opened or written: SIGPIPE ignored, closed standard streams reopened.
  ampbench::cli::StandardOutput standard_output;
  (void)ampbench::io::keep_freed_memory();
  const int status = run_guarded(argc, argv);
  return ampbench::cli::exit_status(status, standard_output);
}
