// The ampbench subcommands. Each parses nothing itself (main.cpp does, with CLI11): it takes its
// arguments as a plain value, reads and writes the given streams, and returns the exit status.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace ampbench::cli {

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFail = 1;  // the run worked and a check failed (an audit budget)
// An internal failure: what ampbench could not do although the input was good (memory exhausted,
// a reference that could not be computed), with a message.
inline constexpr int kExitInternal = 1;
inline constexpr int kExitUsage = 2;  // bad command line or bad input
// --backend cuda without a usable GPU, or in a build without CUDA
inline constexpr int kExitNoDevice = 3;
// The command did its work and wrote its files, but its standard output was lost (a reader that
// went away, a full disk, a closed descriptor): standard_output.hpp. A command that failed for
// its own reason keeps its status.
inline constexpr int kExitOutput = 4;

int run_formats(bool json, std::ostream& out);

struct RoundArgs {
  std::string to;
  std::string mode = "rne";
  std::uint64_t seed = 0;
  std::string subnormals;  // "on", "off" or empty for the format's default
  std::string overflow;    // "inf", "saturate" or empty for the format's default
};
int run_round(const RoundArgs& args, std::istream& in, std::ostream& out, std::ostream& err);

struct DotArgs {
  std::string format;
  std::string accumulate;  // empty: the input format
  std::string mode = "rne";
  std::uint64_t seed = 0;
  std::string inputs;  // a file; empty: standard input
  bool json = false;
};
int run_dot(const DotArgs& args, std::istream& in, std::ostream& out, std::ostream& err);

struct PoliciesArgs {
  std::string policy;  // a built-in name or a FILE.toml; empty: every built-in policy
  bool json = false;
};
int run_policies(const PoliciesArgs& args, std::ostream& out, std::ostream& err);

struct AuditArgs {
  std::string op;
  bool all = false;
  std::string shape;     // empty: the op's default
  std::string policies;  // comma-separated names or files; empty: fp32 (all built-ins with --all)
  std::string dist = "normal";
  std::uint64_t seed = 1;
  std::size_t samples = 0;  // reference positions; 0: all
  std::string backend = "cpu";
  // --gemm-compute: a cuBLAS compute type for the GEMMs on cuda; empty: the policy's
  std::string gemm_compute;
  // --conv-math: a cuDNN math type for the convolutions on cuda; empty: the policy's
  std::string conv_math;
  std::string summation = "sequential";
  std::string mma;      // Tensor Core model: an architecture or a preset name; empty: none
  std::string budgets;  // empty: suites/budgets.toml when it exists; "none": built-in only
  std::string json;     // file for the records
  // The audit under FP8 and microscaling recipes (docs/scaling.md): comma-separated built-in
  // names or recipe files; then linear's GEMMs on the Tensor Core model of `arch` (empty: hopper
  // where it has one for the recipe, else exact), promoted every `promote_interval` products
  // (when "--promote-interval" is given; else the recipe's).
  std::string recipes;
  std::string arch;
  std::uint64_t promote_interval = 0;
  std::string gemms = "fprop,dgrad,wgrad";
  // The options given on the command line ("--policy"), so that those that do not go with
  // --recipe are refused rather than ignored.
  std::vector<std::string> given;
};
int run_audit(const AuditArgs& args, std::ostream& out, std::ostream& err);
// run_audit with --recipe (recipe_audit_command.cpp).
int run_recipe_audit(const AuditArgs& args, std::ostream& out, std::ostream& err);

int run_ops(bool json, std::ostream& out);

struct EvalArgs {
  std::string op;
  std::string policy = "fp32";
  std::string mma;
  std::string inputs;  // JSON: {"operand": nested row-major list, ...}
  bool json = false;
  std::string backend = "cpu";  // cpu, cuda (exit 3 without a usable GPU) or all
};
int run_eval(const EvalArgs& args, std::ostream& out, std::ostream& err);

// A tensor quantized as a recipe quantizes one GEMM operand (docs/scaling.md).
struct QuantizeArgs {
  // fp8-delayed fp8-current fp8-block mxfp8 mxfp6 mxfp4 nvfp4, or a recipe file (FILE.toml)
  std::string recipe;
  std::string role = "x";  // x, w or dy
  std::string gemm;        // fprop, dgrad or wgrad; empty: fprop for x and w, dgrad for dy
  std::string inputs;      // a tensor file (inputs::read_tensor_file); or --dist and --shape
  std::string dist;        // empty: normal
  std::string shape;       // COLS or ROWSxCOLS; empty: two blocks of the recipe
  std::uint64_t seed = 1;
  std::string element;  // MX recipes: the element format (mxfp8 e4m3|e5m2, mxfp6 e3m2|e2m3)
  std::string mode;     // empty: the recipe's rounding
  std::string fp8_format = "hybrid";  // fp8-delayed/current: hybrid (e5m2 for dy) or e4m3
  std::string scales;  // fp8-current/fp8-block: pow2 or fp32; empty: the recipe's default
  // fp8-delayed: TE DelayedScaling's parameters, the amaxes of earlier steps or a given scale.
  int margin = 0;
  std::uint64_t amax_history_len = 1024;
  std::string amax_compute_algo = "max";
  std::string amax_history;  // comma-separated, oldest first
  std::optional<std::string> scale;
  // The Hadamard transform's signs from this seed (recipes that transform the wgrad inputs), when
  // "--hadamard-seed" is given.
  std::uint64_t hadamard_seed = 0;
  bool print_recipe = false;  // print the recipe as TOML and stop
  bool json = false;
  // The options given on the command line ("--margin"), so that a recipe's own option given with
  // another recipe is refused rather than ignored.
  std::vector<std::string> given;
};
int run_quantize(const QuantizeArgs& args, std::ostream& out, std::ostream& err);

// Runs the loss scaler over steps read from `in`, one per line: ok, inf or nan (docs/scaler.md).
struct ScalerArgs {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int growth_interval = 2000;
  std::optional<double> min_scale;
  int collapse_backoffs = 10;  // warn when the scale backs off this many times ...
  int collapse_window = 100;   // ... within this many steps
  bool hex = false;            // scales as C99 hex floats instead of shortest decimals
};
int run_scaler(const ScalerArgs& args, std::istream& in, std::ostream& out, std::ostream& err);

struct TrainArgs {
  std::string model = "mlp";
  std::string policies = "fp32,amp-fp16,amp-bf16,fp16";  // and built-in recipes' names
  std::optional<std::string> recipes;    // recipes' names or FILE.toml, comma-separated
  std::string arch;                      // the recipes' GEMM model; empty: each recipe's default
  std::optional<std::string> keep_bf16;  // linear layers every recipe keeps in bf16
  bool sensitivity = false;              // each recipe again with each other layer in bf16
  std::optional<std::size_t> sensitivity_seeds;  // that ranking over this many seeds
  int reference_bits = 113;
  std::optional<std::size_t> steps;  // default: train::default_steps(model)
  std::size_t batch = 64;
  std::size_t accumulate = 1;
  std::uint64_t seed = 1;
  std::string scaler = "auto";
  double init_scale = 65536.0;  // the loss scaler's options (docs/scaler.md)
  int growth_interval = 2000;
  std::optional<double> min_scale;
  std::string optimizer = "adamw";
  std::optional<double> lr;  // default: 1e-3 for adamw, 0.05 for sgd
  double clip_norm = 1.0;
  std::string data;     // FILE.csv, or FILE.npy with targets; empty: the model's synthetic data
  std::string targets;  // FILE.npy
  std::size_t eval = 512;
  std::size_t print_every = 0;  // 0: a tenth of the steps
  std::string json;
  std::string backend = "cpu";  // cpu, cuda
};
int run_train(const TrainArgs& args, std::ostream& out, std::ostream& err);

struct ProfileArgs {
  std::string model = "mlp";
  std::string policies = "fp32,amp-fp16,amp-bf16";
  std::size_t steps = 20;
  std::size_t warmup = 3;
  std::size_t batch = 64;
  std::uint64_t seed = 1;
  std::string backend = "cpu";
  std::string trace;  // Chrome trace JSON
  std::string json;
  bool hardware_metrics = false;  // the CUPTI range profiler's counters (--backend cuda)
};
int run_profile(const ProfileArgs& args, std::ostream& out, std::ostream& err);

// Runs a suite (docs/results.md): one record per case in DIR/result.json, rewritten after each.
struct RunArgs {
  std::string suite;            // suites/NAME.toml
  std::string shard = "0/1";    // I/N: the cases whose index % N == I
  std::string out;              // empty: results/<suite name>
  std::string history;          // empty: history.sqlite beside DIR; "none": the run is not recorded
  std::string backend = "cpu";  // cpu, cuda (exit 3 without a usable GPU) or all
};
int run_suite(const RunArgs& args, std::ostream& out, std::ostream& err);

// Compares two result files case by case; exit 1 on a regression, a new failure or a missing case.
struct CompareArgs {
  std::string base;
  std::string current;
  // Relative change for the worse that is still not a regression; default: the baseline's suite's
  // (its record's tolerance), or 0.1.
  std::optional<double> tolerance;
  double floor = 1e-12;  // absolute change that never is one
  // The main metrics of every case side by side; on by itself when the files come from two
  // different devices (the architecture comparison).
  bool side_by_side = false;
};
int run_compare(const CompareArgs& args, std::ostream& out, std::ostream& err);

// Joins the result files of a suite's shards into one, in the suite's order.
struct MergeArgs {
  std::vector<std::string> shards;  // ampbench.result/1 files, one per shard
  std::string out;                  // the merged result file
  bool partial = false;             // merge even when shards are missing
  bool drop_detail = false;         // records without their detail: a compact baseline
};
int run_merge(const MergeArgs& args, std::ostream& out, std::ostream& err);

struct ReportArgs {
  std::vector<std::string> results;  // ampbench.result/1 files
  std::string html;                  // --html FILE
  std::string markdown;              // --md FILE; with no output file, Markdown to stdout
  std::string junit;                 // --junit FILE
  // The records set side by side as a comparison of devices even when some come from one device
  // (a comparison is the default when they come from different devices).
  bool side_by_side = false;
};
int run_report(const ReportArgs& args, std::ostream& out, std::ostream& err);

// The run history in SQLite (docs/results.md): a metric over runs, the runs (--runs), or result
// files recorded (--add).
struct HistoryArgs {
  std::string db = "results/history.sqlite";
  std::vector<std::string> add;  // result files to record; no query then
  bool partial = false;  // --add records a partial run (complete: false) too, flagged as partial
  bool runs = false;     // list the runs instead of a metric's values
  std::string op;
  std::string policy;
  std::string model;
  std::string key;     // a substring of the case key
  std::string metric;  // empty: normwise_rel_error (audit) and POLICY.eval_loss_error (train)
  std::string suite;
  std::size_t last = 0;  // N >= 1: the last N values of each case (with --runs: the last N
                         // runs); 0: all
  bool json = false;
};
int run_history(const HistoryArgs& args, std::ostream& out, std::ostream& err);

// The Tensor Core feature tests (docs/fingerprint.md) on the GPU (cuda) or on a preset's CPU model
// (cpu), compared with the preset; exit 1 on a mismatch, 3 when --backend cuda has no device.
struct FingerprintArgs {
  std::string format = "fp16";  // fp16 bf16 tf32 fp8 (= e4m3) e4m3 e5m2
  std::string accumulator = "fp32";
  // cpu: the emulated device is --preset, or --arch's preset; it is compared with --arch's
  // preset, or itself. cuda: the device is compared with --preset, or --arch's preset, or its own
  // architecture's. A preset's input and accumulator replace the two above.
  std::string arch;
  std::string preset;
  std::string backend = "cuda";
  // cuda: the matrix instruction probed: auto (wgmma on Hopper, mma elsewhere), mma, wgmma.
  std::string instruction = "auto";
  std::string json;
};
int run_fingerprint(const FingerprintArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ampbench::cli
