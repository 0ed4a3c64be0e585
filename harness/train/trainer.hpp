// Whole training steps side by side: every requested policy and the multiprecision reference start
// from the same binary32 weights and see the same batches. Each step runs, per run: forward, loss,
// backward of d_loss * loss (d_loss = the loss scale / micro-batches), accumulation of the
// micro-batch gradients into binary32 master gradients, unscaling with the inf/NaN check, clipping
// by the global norm, the optimizer step on binary32 master weights (skipped on inf/NaN), and the
// scaler's update. The reference runs the same steps in Real arithmetic, unscaled.
//
// After each step the policies are compared with the reference at that step (docs/training.md):
// the loss's relative error, each parameter gradient's normwise error (the unscaled gradient before
// clipping against the reference's), and the fraction of the reference's nonzero gradient entries
// that round to zero in the policy's gradient format unscaled and multiplied by the scale used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/policy/policy.hpp"
#include "harness/profile/attribution.hpp"
#include "harness/profile/events.hpp"
#include "harness/profile/hardware_metrics.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/train/data.hpp"
#include "harness/train/optimizer.hpp"
#include "harness/train/scaler.hpp"

namespace ampbench::train {

enum class ScalerMode {
  automatic,  // on for policies whose matmul gradients have less exponent range than binary32
  on,
  off,
};

struct TrainConfig {
  std::string model = "mlp";
  std::vector<policy::Policy> policies;
  // FP8 and microscaling recipes trained beside the policies (docs/training.md "Recipes"): the
  // linear and convolution layers' three GEMMs quantized as the recipe says and multiplied on the
  // CPU emulation's Tensor Core model of `recipe_arch` (or, trained on the device, by cuBLASLt);
  // everything else as amp-bf16.
  std::vector<quant::Recipe> recipes;
  // "hopper", "blackwell", ... or "exact" (the exact product rounded once to binary32); empty:
  // each recipe's quant::default_arch.
  std::string recipe_arch;
  // Layers, by their weight's name (gemm_layers), that every recipe run keeps in amp-bf16:
  // NVFP4's "a few sensitive layers in high precision".
  std::vector<std::string> keep_bf16;
  // Each recipe also once per other layer of gemm_layers with that layer kept in bf16 too, ranked
  // by how much of the recipe's loss error each removes (TrainResult::sensitivity).
  bool sensitivity = false;
  // With sensitivity: the recipe runs and their sensitivity runs repeated at seeds seed + 1, ...,
  // seed + sensitivity_seeds - 1 as well (each repeat with its own reference; the data set and its
  // split stay those given), and the layers ranked by the mean over the seeds of the share each
  // removes. The runs and verdicts of TrainResult are the first seed's.
  std::size_t sensitivity_seeds = 1;
  int reference_bits = 113;
  std::size_t steps = 200;
  std::size_t batch = 64;      // samples per micro-batch
  std::size_t accumulate = 1;  // micro-batches per optimizer step
  std::uint64_t seed = 1;      // weights, and the batch order
  ScalerMode scaler = ScalerMode::automatic;
  LossScalerOptions scaler_options;
  OptimizerOptions optimizer = AdamWOptions{};
  double clip_norm = 1.0;  // 0: no clipping
  // Budgets of the verdict: a policy tracks the reference when its final eval loss is within
  // this relative distance of the reference's and its eval accuracy within this many points.
  double loss_budget = 0.05;
  double accuracy_budget = 0.05;
};

// One scaled tensor of a recipe run over a step: an operand of one of a layer's GEMMs,
// over the step's micro-batches.
struct ScaledTensorRecord {
  std::size_t parameter = 0;  // the layer's weight: an index into TrainResult::parameters
  quant::Gemm gemm = quant::Gemm::fprop;
  quant::Role role = quant::Role::x;
  double amax = 0;  // the largest of the step's quantizations (of the tensor before any transform)
  // The per-tensor scale of the step's last quantization (the tensor's fp32 scale; NVFP4's fp32
  // tensor encode scale); none for per-tile scales alone.
  std::optional<double> scale;
  std::uint64_t elements = 0;  // quantized, over the step (padding not counted)
  std::uint64_t saturated = 0;
  std::uint64_t flushed = 0;  // nonzero inputs that became zero
  std::uint64_t subnormal = 0;
  std::uint64_t blocks_lost = 0;  // tiles with a nonzero input that dequantize to all zeros
};

struct StepRecord {
  std::size_t step = 0;
  double loss = 0;                   // mean over the step's micro-batches
  std::optional<double> loss_error;  // |loss - reference| / |reference|; none for the reference
  // ||g - g_ref|| / ||g_ref|| per parameter; none when not finite, or when the reference gradient
  // vanishes (below 2^-40 of the whole gradient's norm: an invariance, such as attention's key
  // bias, whose gradient is zero because softmax ignores a shift common to a row)
  std::vector<std::optional<double>> gradient_error;
  std::optional<double> global_gradient_error;  // the same over all parameters together
  // The fraction of the reference's nonzero gradient entries (of the parameters whose gradient
  // does not vanish) that are zero in the gradient format, unscaled and times the scale.
  double underflow_unscaled = 0;
  double underflow_scaled = 0;
  std::optional<double> scale;  // the scale used; none without a scaler
  std::optional<int> growth_tracker;
  bool skipped = false;
  std::vector<ScaledTensorRecord> scaled;  // a recipe run's scaled tensors; empty otherwise
};

struct RunResult {
  std::string policy;           // "reference" for the reference
  std::string backend = "cpu";  // where the policy ran: cpu (emulated) or cuda
  std::string gradient_format;
  std::string recipe;                  // a recipe run's recipe; empty otherwise
  std::string recipe_arch;             // its GEMM model (TrainConfig::recipe_arch)
  std::vector<std::string> kept_bf16;  // its layers kept in amp-bf16 (gemm_layers)
  bool scaler = false;
  std::vector<StepRecord> steps;
  std::vector<std::size_t> skipped_steps;
  std::vector<std::string> scaler_warnings;
  double eval_loss = 0;
  double eval_accuracy = 0;
  std::vector<double> weight_divergence;  // per parameter: ||w - w_ref|| / ||w_ref||
  std::string verdict;
  bool pass = true;
};

// How much of a recipe's loss error keeping one more layer (gemm_layers) in bf16 removes.
struct LayerSensitivity {
  std::string parameter;  // the layer's weight
  std::string run;        // the run that kept it
  double mean_loss_error = 0;
  double eval_loss_error = 0;
  // (mean_loss_error of the recipe's run - this run's) / the recipe's: 1 removes it all, 0
  // nothing, negative makes it worse.
  double removed = 0;
  // Over several seeds (TrainConfig::sensitivity_seeds): the share at each seed, in the order of
  // RecipeSensitivity::seeds; the fields above are then the means over the seeds.
  std::vector<double> removed_by_seed;
};
struct RecipeSensitivity {
  std::string recipe;
  std::string run;              // the recipe's run without the extra layer
  std::string backend = "cpu";  // where its runs ran (RunResult::backend): each ranks its own
  // The mean over the steps of |loss - reference| / |reference|, and the eval loss's.
  double mean_loss_error = 0;
  double eval_loss_error = 0;
  std::vector<LayerSensitivity> layers;  // the most error removed first
  // The seeds the ranking is over, and the recipe's mean loss error at each.
  std::vector<std::uint64_t> seeds;
  std::vector<double> mean_loss_error_by_seed;
};

struct TrainResult {
  TrainConfig config;
  std::string dataset;
  std::size_t train_samples = 0;
  std::size_t eval_samples = 0;
  std::vector<std::string> parameters;  // names, in the order of the per-parameter lists
  RunResult reference;
  std::vector<RunResult> runs;
  double seconds = 0;
  std::string backend = "cpu";               // where the policies ran: cpu, cuda or all (both)
  nlohmann::json device = nlohmann::json();  // the GPU's record (backends::cuda::device_record)
  std::string cuda_unavailable;              // why a run asked for both backends had the CPU alone
  std::vector<RecipeSensitivity> sensitivity;  // with TrainConfig::sensitivity, per recipe
};

// The models this build can train ("mlp").
std::vector<std::string> model_names();
// The steps a run takes unless told: 200 for the mlp, 100 for the slower cnn and transformer.
std::size_t default_steps(const std::string& model);
// A synthetic data set for the model, from `seed`.
Dataset default_dataset(const std::string& model, std::uint64_t seed);

// The layers whose GEMMs a recipe quantizes, by their weights' names, in parameter order: the
// linear layers (the model's 2-D parameters) and the convolutions (its 4-D parameters). Throws
// std::invalid_argument for an unknown model.
std::vector<std::string> gemm_layers(const std::string& model);

// The steps train() takes on `config`: its steps, once per sensitivity seed.
std::size_t training_steps(const TrainConfig& config);

// The architecture a recipe's GEMMs run on under `config`: config.recipe_arch, or the recipe's
// quant::default_arch for its three GEMMs.
std::string recipe_arch(const quant::Recipe& recipe, const TrainConfig& config);

// Runs the configuration on `train_set`, evaluating at the end on `eval_set`. `progress` (may be
// empty) receives a line per finished step; the repeats of sensitivity_seeds continue the count
// (step s of repeat i is i * steps + s; training_steps says how many there are). Throws
// std::invalid_argument for a model it does not know or data that does not fit the model.
TrainResult train(const TrainConfig& config, const Dataset& train_set, const Dataset& eval_set,
                  const std::function<void(std::size_t step)>& progress = {});

// A backend's training of one configuration at one seed, as train() runs the CPU's.
using TrainOnce = std::function<TrainResult(const TrainConfig& config,
                                            const std::function<void(std::size_t step)>& progress)>;
// `once` on the configuration, then, with a sensitivity ranking over several seeds, on its
// recipes alone at each further seed, the rankings averaged: train() with another backend's
// training (train::cuda::train_on_device).
TrainResult train_over_seeds(const TrainConfig& config,
                             const std::function<void(std::size_t step)>& progress,
                             const TrainOnce& once);

// Profiling on the CPU backend: each policy alone (no reference), `warmup` untimed steps, then
// config.steps steps timed phase by phase with host timers: "step", and inside it "forward",
// "backward", "unscale", "clip", "optimizer", "update" (harness/profile/host_timer.hpp). What it
// times is the CPU emulator, not a GPU: the ratios between policies say what emulating them costs.
struct PolicyProfile {
  std::string policy;
  std::vector<std::uint64_t> step_ns;  // each timed step's wall time
  profile::Trace trace;                // its phases, and the device's activity when profiled there
  profile::Attribution attribution;    // of `trace`
  std::optional<std::uint64_t> peak_device_bytes;  // over the timed steps, on a GPU
  // What the device's trace lacks and why (CUPTI unavailable, records it could not convert),
  // added to the attribution's warnings.
  std::vector<std::string> collection_warnings;
  // The hardware counters of one more step per range profiler pass, by phase and op range, when
  // asked for on a GPU; else why not, when asked for.
  std::optional<profile::HardwareMetrics> hardware_metrics;
  std::string hardware_metrics_why;
};
struct ProfileResult {
  TrainConfig config;
  std::size_t warmup = 0;
  std::vector<PolicyProfile> policies;
  nlohmann::json device = nlohmann::json();             // the GPU's record, on a GPU
  nlohmann::json profiler_overhead = nlohmann::json();  // the collector's cost, on a GPU
  // Per-range hardware counters (Tensor Core pipe, DRAM), on a GPU: {"requested", "collected"
  // (for at least one policy), "metrics": [...] when requested, "why" (not requested, or the first
  // policy without them and its reason)}; each policy's counters are in its PolicyProfile.
  nlohmann::json hardware_metrics = nlohmann::json();
};
ProfileResult profile_steps(const TrainConfig& config, const Dataset& train_set,
                            std::size_t warmup);

// The record "ampbench.train/1" (docs/training.md).
nlohmann::json to_json(const TrainResult& result);

}  // namespace ampbench::train
