// The result record "ampbench.result/1" (docs/results.md): the environment of a run and one record
// per case, with its status, the breaches that failed it, the numbers `ampbench compare` judges,
// and the case's full audit or training record.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "harness/audit/budgets.hpp"
#include "harness/fingerprint/fingerprint.hpp"
#include "harness/results/device.hpp"
#include "harness/results/suite.hpp"

namespace ampbench::results {

inline constexpr std::string_view kResultSchema = "ampbench.result/1";

struct Environment {
  std::string ampbench_version;
  std::string git_revision;
  std::string compiler;
  std::string build_type;
  std::string cuda;            // the build's CUDA backend: "off" or nvcc's version and the sm list
  std::string gpu;             // the device the run would use, or why there is none
  std::string cuda_libraries;  // the CUDA runtime, driver, cuBLAS, cuDNN and CUPTI versions loaded
  Device device;               // what ran the cases, structured (device.hpp)
  std::string cpu;             // the model name of /proc/cpuinfo
  unsigned cores = 0;
  std::string hostname;
  std::uint64_t seed = 0;  // the suite's, which every case's inputs derive from
  std::string started;     // UTC, ISO 8601
  std::string finished;
};
// The machine's side of the environment: cpu, cores, hostname.
Environment host_environment();
// The first "model name" of a /proc/cpuinfo text; "unknown" when there is none.
std::string cpu_model(std::string_view cpuinfo);
// "2026-11-29T14:47:22.125Z": to the millisecond, so that two runs of a suite on one host have
// different start times (the history knows a run by it).
std::string utc_now();
nlohmann::json to_json(const Environment& environment);

struct Record {
  std::string key;
  std::string kind;  // "audit", "train", "profile", "fingerprint" or "recipe"
  bool pass = false;
  std::vector<std::string> breaches;
  std::map<std::string, double> metrics;  // finite numbers only
  // A fingerprint's inferred parameters in words, parameter -> value ("fraction_bits" -> "24",
  // "output_rounding" -> "truncation", "unknown"); empty for the other kinds. compare reports a
  // changed one as a change.
  std::map<std::string, std::string> features;
  double seconds = 0;
  // the case's ampbench.audit/1 case, ampbench.train/1, ampbench.profile-run/1,
  // ampbench.fingerprint/1 or ampbench.audit-recipe/1 case record
  nlohmann::json detail;
};

// Runs one case: an audit case against the budgets; a training run on the model's default data
// set with 512 samples held out, as `ampbench train` does; a profile run on the model's default
// data set, as `ampbench profile` does (it always passes: its numbers are reported); a fingerprint
// through the preset's model, compared with the preset, as `ampbench fingerprint --preset P` does
// (it passes when every parameter matches; each mismatch is a breach). A case that throws is a
// failed record whose breach says why.
//
// A case on a backend other than the CPU (c.backend != "cpu") runs through `runners`, which must
// hold the function its kind needs: an audit case's kernel (audit::run_kernel_case), writing into
// `ran` what ran (the device, the library call), which the record's detail keeps under "ran"; a
// training run or a profile run as train::train and train::profile_steps take them; a fingerprint's
// executor on that backend, writing what ran into `ran` likewise, and the device's architecture
// as `ran["architecture"]` ("hopper"): the fingerprint is then compared with that architecture's
// preset for the case's formats (the case's preset where it has none).
using KernelFor = std::function<audit::Kernel(const audit::Case& c, nlohmann::json* ran)>;
struct BackendRunners {
  KernelFor kernel;
  std::function<train::TrainResult(const train::TrainConfig&, const train::Dataset& train_set,
                                   const train::Dataset& eval_set)>
      train;
  std::function<train::ProfileResult(const train::TrainConfig&, const train::Dataset& train_set,
                                     std::size_t warmup)>
      profile;
  std::function<std::unique_ptr<fingerprint::Executor>(const FingerprintCase&, nlohmann::json* ran)>
      fingerprint;
  audit::RecipeDevice recipe;  // a recipe GEMM's product on the device
};
Record run_case(const SuiteCase& c, const std::vector<audit::Budget>& budgets,
                const BackendRunners& runners = {});

// The metrics of a record. Audit: max_ulp, mean_ulp, normwise_rel_error, componentwise_rel_error,
// bound_ratio, fraction_correctly_rounded, mismatches. Training, per policy P: P.eval_loss,
// P.eval_accuracy, P.eval_loss_error (relative to the reference's), P.max_loss_error (over the
// steps), P.weight_divergence (the largest parameter's), P.skipped_steps; reference.eval_loss and
// reference.eval_accuracy.
std::map<std::string, double> audit_metrics(const nlohmann::json& audit_case);
std::map<std::string, double> train_metrics(const train::TrainResult& result);
// Recipe, per GEMM G (fprop, dgrad, wgrad): G.total_error, G.mean_total_error,
// G.frobenius_error, G.quantization_error, G.accumulation_error (audit::ErrorStats: the largest
// and mean |error| / sum |a b|, the Frobenius ratio), G.saturated and G.flushed (elements of both
// operands), G.nonfinite.
std::map<std::string, double> recipe_metrics(const audit::RecipeCaseResult& result);
// Profile, per policy P: P.step_ms (the median step's wall time) and P.vs_fp32 (that over fp32's,
// when fp32 was profiled). Reported, not judged by compare: timings on shared machines vary.
std::map<std::string, double> profile_metrics(const train::ProfileResult& result);

nlohmann::json to_json(const Record& record);

// The cases a result record should hold (docs/results.md, "Partial records"): `ampbench run` writes
// its record before the first case and after each with complete = false, and with complete = true
// only after the last, so that a run that stopped says so and which cases it lacks.
struct Expected {
  std::vector<std::string> keys;  // the record's cases, in the order they run
  // A shard's: every case of the suite in the suite's order, by which a merge orders the shards'
  // records and names the cases of a missing shard. Empty for a whole run (the same as keys).
  std::vector<std::string> suite_keys;
};
// {schema, suite, shard, environment, expected: {cases, keys[, suite_keys]}, complete, [missing,]
// records}: `missing` lists the expected keys without a record while complete is false.
nlohmann::json result_document(std::string_view suite, const Shard& shard,
                               const Environment& environment, const nlohmann::json& records,
                               const Expected& expected, bool complete);

}  // namespace ampbench::results
