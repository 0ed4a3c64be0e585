// The CUDA backend through the registry (backend.hpp), in every build: the device probe, a
// request's backends with the device probed only when the GPU is asked for, and the CUDA
// backend's entry points (the audit's kernel of a plan, training and profiling on the device, the
// fingerprint's executor, a suite's cases). Only this file's implementation knows whether the
// build has CUDA. Not installed: it names the CUDA backend's plan (harness/backends/cuda), whose
// headers are not.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/plan.hpp"
#include "harness/fingerprint/fingerprint.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "harness/quant/scaling.hpp"
#include "harness/results/record.hpp"
#include "harness/results/suite.hpp"
#include "harness/runtime/backend.hpp"
#include "harness/train/trainer.hpp"

namespace ampbench::runtime {

// Whether this build has the CUDA backend.
bool built_with_cuda();

// The CUDA library versions this process loaded, in one line (they can differ from the headers
// the build used); "" in a build without CUDA.
std::string cuda_library_versions();

// Probes the device (making its context): never throws. Without CUDA in the build,
// cuda_not_built().
CudaStatus probe_cuda();

// opening_for(request, the device's status), the device probed only when the request asks for the
// GPU (for cpu it is not probed and says nothing).
Opening open_backends(Request request);

// backends::cuda::make_kernel; only to be called when probe_cuda() found a device (a build
// without CUDA throws std::logic_error).
audit::Kernel cuda_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                          const backends::cuda::Plan& plan, nlohmann::json* detail);

// train::cuda::train_on_device and profile_on_device (the latter with NVTX ranges around every
// phase, and with hardware_metrics the CUPTI range profiler's counters); likewise only after
// probe_cuda() found a device.
// `both`: train::cuda::train_on_device_and_cpu, each policy on the CPU and on the device.
train::TrainResult cuda_train(const train::TrainConfig& config, const train::Dataset& train_set,
                              const train::Dataset& eval_set,
                              const std::function<void(std::size_t)>& progress, bool both = false);
train::ProfileResult cuda_profile(const train::TrainConfig& config, const train::Dataset& train_set,
                                  std::size_t warmup, bool hardware_metrics = false);

// The fingerprint's executor on the device's matrix units (kernels::make_mma_executor) for an
// instruction "auto", "mma" or "wgmma", and the device's architecture as
// fingerprint::mma_architecture names it ("" when it names none); likewise only after
// probe_cuda() found a device. Throws std::invalid_argument where no kernel exists for the
// combination, std::runtime_error (CudaError included) where the device cannot run it.
struct MmaExecutor {
  std::unique_ptr<fingerprint::Executor> executor;
  std::string arch;
};
MmaExecutor cuda_mma_executor(const numeric::Format& input, numeric::MmaAccumulator accumulator,
                              std::string_view instruction);

// The current device's compute capability (major * 10 + minor), probed once per process; nothing
// without a usable device or without CUDA in the build.
std::optional<int> device_compute_capability();

// A recipe GEMM's product on the device (audit::RecipeDevice): both operands packed with their
// recipe operands' granularity (backends::cuda::pack_operand; std::invalid_argument with its
// reason where one cannot be) and multiplied by cuBLASLt's scaled GEMM
// (backends::cuda::ScaledGemms::recipe_product); likewise only after probe_cuda() found a device.
std::vector<double> cuda_recipe_product(const quant::Recipe& recipe, quant::Gemm gemm,
                                        const quant::Quantized& a, const quant::Quantized& b,
                                        bool fast_accum, nlohmann::json* ran);

// Why the CUDA backend cannot train `model` under policy `p`: backends::cuda::why_not_trainable of
// the model's ops (train::model_ops); a model the trainer does not have is named with the ones it
// has. Nothing when it can. Plain C++: the same answer in a build without CUDA.
std::optional<std::string> why_not_trainable(const policy::Policy& p, std::string_view model);
// Why the CUDA backend cannot train `model` under recipe `r`: why_not_trainable of amp-bf16 (the
// policy of the recipe's other ops), then backends::cuda::why_no_recipe_training on the current
// device (device_compute_capability; "no CUDA device" without one). Nothing when it can.
std::optional<std::string> why_not_trainable(const quant::Recipe& r, std::string_view model);
// backends::cuda::non_gemm_compute_note of the model's ops.
std::optional<std::string> non_gemm_compute_note(const policy::Policy& p, std::string_view model);

// A suite's cases on the backends (results::on_backends): why case `c` cannot run on `backend`
// ("cpu" runs every case; on "cuda" a training or profile run whose policies the device cannot
// train, an audit case of a Tensor Core model or of an op without a CUDA plan, a recipe case
// whose GEMMs this device's cuBLASLt cannot multiply: backends::cuda::why_no_recipe_gemm), or
// nothing.
std::optional<std::string> why_not_on(const results::SuiteCase& c, std::string_view backend);
// A suite's case narrowed to what `backend` can run (results::Narrowing): on "cuda", a training
// run's recipes this device cannot train (why_not_trainable) are taken out, each given as
// "recipe=NAME" with the reason, while its policies (a suite's [[train]] has at least one) and
// other recipes run.
std::vector<std::pair<std::string, std::string>> narrow_to(results::SuiteCase& c,
                                                           const std::string& backend);
// The runners of a suite's cases on the device `cuda` (available): each writes the device's
// record into what ran.
results::BackendRunners cuda_runners(const CudaStatus& cuda);

}  // namespace ampbench::runtime
