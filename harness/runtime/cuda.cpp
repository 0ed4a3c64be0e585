#include "harness/runtime/cuda.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <utility>
#include <variant>
#include <vector>

#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/train/model_ops.hpp"
#include "harness/train/recipe_ops.hpp"

#if AMPBENCH_HAVE_CUDA
#include "harness/backends/cuda/kernel.hpp"
#include "harness/backends/cuda/scaled_gemm.hpp"
#include "harness/train/cuda/train_on_device.hpp"
#include "kernels/device.hpp"
#include "kernels/mma_executor.hpp"
#endif

namespace ampbench::runtime {

std::optional<std::string> why_not_trainable(const policy::Policy& p, std::string_view model) {
  const std::vector<std::string> models = train::model_names();
  if (std::find(models.begin(), models.end(), model) == models.end()) {
    return fmt::format("model {}: the CUDA backend trains {}", model, fmt::join(models, ", "));
  }
  return backends::cuda::why_not_trainable(p, train::model_ops(model));
}

std::optional<std::string> why_not_trainable(const quant::Recipe& r, std::string_view model) {
  if (auto why = why_not_trainable(train::RecipeOps::base_policy(), model)) {
    return fmt::format("recipe {}: its other ops under amp-bf16: {}", r.name, *why);
  }
  const std::optional<int> cc = device_compute_capability();
  if (!cc) return std::string("no CUDA device to multiply a recipe's GEMMs on");
  return backends::cuda::why_no_recipe_training(r, *cc);
}

std::optional<std::string> non_gemm_compute_note(const policy::Policy& p, std::string_view model) {
  return backends::cuda::non_gemm_compute_note(p, train::model_ops(model));
}

Opening open_backends(Request request) {
  return opening_for(request, request == Request::cpu ? CudaStatus{} : probe_cuda());
}

std::optional<std::string> why_not_on(const results::SuiteCase& c, std::string_view backend) {
  if (backend == "cpu" || std::holds_alternative<results::FingerprintCase>(c.work)) {
    return std::nullopt;
  }
  if (const auto* recipe = std::get_if<audit::RecipeCase>(&c.work)) {
    if (auto why = audit::why_not_runnable(*recipe)) return why;
    const std::optional<int> cc = device_compute_capability();
    if (!cc) return std::string("no CUDA device to multiply on");
    const std::size_t promote = recipe->promote_interval.value_or(recipe->recipe.promote_interval);
    for (const quant::Gemm g : recipe->gemms) {
      const audit::RecipeGemmDims d = audit::gemm_dims(*recipe, g);
      if (auto why = backends::cuda::why_no_recipe_gemm(recipe->recipe, g, d.rows, d.cols, d.k, *cc,
                                                        promote == 0)) {
        return why;
      }
    }
    return std::nullopt;
  }
  const auto* audit_case = std::get_if<audit::Case>(&c.work);
  if (audit_case == nullptr) {
    const auto* training = std::get_if<train::TrainConfig>(&c.work);
    const train::TrainConfig& config =
        training != nullptr ? *training : std::get<results::ProfileConfig>(c.work).config;
    for (const auto& p : config.policies) {
      if (auto why = why_not_trainable(p, config.model)) return why;
    }
    for (const auto& r : config.recipes) {
      if (auto why = why_not_trainable(r, config.model)) return why;
    }
    return std::nullopt;
  }
  if (audit_case->mma) {
    return std::string(
        "a Tensor Core model case is the CPU's emulation of one; on the GPU "
        "the case without the model runs the hardware itself");
  }
  const backends::cuda::Planning planned = backends::cuda::plan(
      *audit_case->op, audit_case->shape, audit::precision_of(audit_case->policy, *audit_case->op));
  if (!planned.plan) return planned.reason;
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> narrow_to(results::SuiteCase& c,
                                                           const std::string& backend) {
  auto* config = std::get_if<train::TrainConfig>(&c.work);
  if (backend == "cpu" || config == nullptr || config->recipes.empty()) return {};
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<quant::Recipe> kept;
  for (const quant::Recipe& r : config->recipes) {
    if (auto why = why_not_trainable(r, config->model)) {
      out.emplace_back("recipe=" + r.name, std::move(*why));
    } else {
      kept.push_back(r);
    }
  }
  config->recipes = std::move(kept);
  // Without recipes there is nothing to rank (the further seeds would train the reference alone).
  if (config->recipes.empty()) config->sensitivity = false;
  return out;
}

results::BackendRunners cuda_runners(const CudaStatus& cuda) {
  results::BackendRunners runners;
  runners.kernel = [device = cuda.device](const audit::Case& c, nlohmann::json* ran) {
    const backends::cuda::Planning planned =
        backends::cuda::plan(*c.op, c.shape, audit::precision_of(c.policy, *c.op));
    (*ran)["device"] = device;
    return cuda_kernel(*c.op, c.shape, *planned.plan, &(*ran)["call"]);
  };
  runners.train = [](const train::TrainConfig& config, const train::Dataset& train_set,
                     const train::Dataset& eval_set) {
    return cuda_train(config, train_set, eval_set, {});
  };
  runners.profile = [](const train::TrainConfig& config, const train::Dataset& train_set,
                       std::size_t warmup) { return cuda_profile(config, train_set, warmup); };
  runners.fingerprint = [device = cuda.device](const results::FingerprintCase& c,
                                               nlohmann::json* ran) {
    (*ran)["device"] = device;
    MmaExecutor executor = cuda_mma_executor(c.preset.input, c.preset.accumulator(), c.instruction);
    if (!executor.arch.empty()) (*ran)["architecture"] = executor.arch;
    return std::move(executor.executor);
  };
  runners.recipe = [device = cuda.device](const quant::Recipe& recipe, quant::Gemm gemm,
                                          const quant::Quantized& a, const quant::Quantized& b,
                                          bool fast_accum, nlohmann::json* ran) {
    std::vector<double> product = cuda_recipe_product(recipe, gemm, a, b, fast_accum, ran);
    (*ran)["device"] = device;
    return product;
  };
  return runners;
}

#if AMPBENCH_HAVE_CUDA

namespace {

results::Device structured(const kernels::DeviceStatus& status,
                           const kernels::LibraryVersions& versions) {
  results::Device d;
  d.kind = "gpu";
  d.name = status.name;
  d.compute_capability = fmt::format("{}.{}", status.compute_major, status.compute_minor);
  d.sms = status.multiprocessors;
  d.memory_bytes = static_cast<std::int64_t>(status.memory_bytes);
  if (status.clock_khz > 0) d.sm_clock_mhz = status.clock_khz / 1000;
  if (status.memory_clock_khz > 0) d.memory_clock_mhz = status.memory_clock_khz / 1000;
  d.driver = kernels::to_string(versions.cuda_driver);
  d.cuda_runtime = kernels::to_string(versions.cuda_runtime);
  d.cublas = kernels::to_string(versions.cublas);
  d.cudnn = kernels::to_string(versions.cudnn);
  const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  d.tf32_override = tf32 == nullptr ? "unset" : tf32;
  return d;
}

}  // namespace

bool built_with_cuda() {
  return true;
}

std::string cuda_library_versions() {
  return kernels::describe(kernels::library_versions());
}

CudaStatus probe_cuda() {
  CudaStatus backend;
  try {
    const kernels::DeviceStatus status = kernels::probe_device();
    backend.available = status.available;
    backend.gpu = kernels::describe(status);
    backend.libraries = kernels::describe(kernels::library_versions());
    if (!status.available) {
      backend.unavailable = "no usable CUDA device: " + status.error;
      return backend;
    }
    backend.device = backends::cuda::device_record(status, kernels::library_versions());
    backend.gpu_device = structured(status, kernels::library_versions());
  } catch (const std::exception& e) {  // memory, or a library that failed to say its version
    backend.available = false;
    backend.unavailable = fmt::format("no usable CUDA device: {}", e.what());
  }
  return backend;
}

audit::Kernel cuda_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                          const backends::cuda::Plan& plan, nlohmann::json* detail) {
  return backends::cuda::make_kernel(op, shape, plan, detail);
}

train::TrainResult cuda_train(const train::TrainConfig& config, const train::Dataset& train_set,
                              const train::Dataset& eval_set,
                              const std::function<void(std::size_t)>& progress, bool both) {
  return both ? train::cuda::train_on_device_and_cpu(config, train_set, eval_set, progress)
              : train::cuda::train_on_device(config, train_set, eval_set, progress);
}

train::ProfileResult cuda_profile(const train::TrainConfig& config, const train::Dataset& train_set,
                                  std::size_t warmup, bool hardware_metrics) {
  return train::cuda::profile_on_device(config, train_set, warmup, hardware_metrics);
}

MmaExecutor cuda_mma_executor(const numeric::Format& input, numeric::MmaAccumulator accumulator,
                              std::string_view instruction) {
  const kernels::DeviceStatus device = kernels::probe_device();
  const char* arch = fingerprint::mma_architecture(device.compute_major, device.compute_minor);
  const auto kind = instruction == "mma"     ? kernels::MmaInstruction::mma
                    : instruction == "wgmma" ? kernels::MmaInstruction::wgmma
                                             : kernels::MmaInstruction::automatic;
  return {kernels::make_mma_executor(input, accumulator, kind), arch == nullptr ? "" : arch};
}

std::optional<int> device_compute_capability() {
  static const kernels::DeviceStatus status = kernels::probe_device();
  if (!status.available) return std::nullopt;
  return status.compute_major * 10 + status.compute_minor;
}

std::vector<double> cuda_recipe_product(const quant::Recipe& recipe, quant::Gemm gemm,
                                        const quant::Quantized& a, const quant::Quantized& b,
                                        bool fast_accum, nlohmann::json* ran) {
  return backends::cuda::ScaledGemms().recipe_product(recipe, gemm, a, b, fast_accum, ran);
}

#else

bool built_with_cuda() {
  return false;
}

std::optional<int> device_compute_capability() {
  return std::nullopt;
}

std::vector<double> cuda_recipe_product(const quant::Recipe&, quant::Gemm, const quant::Quantized&,
                                        const quant::Quantized&, bool, nlohmann::json*) {
  throw std::logic_error("cuda_recipe_product: this build has no CUDA backend");
}

std::string cuda_library_versions() {
  return "";
}

CudaStatus probe_cuda() {
  return cuda_not_built();
}

audit::Kernel cuda_kernel(const ops::OpInfo&, const ops::Shape&, const backends::cuda::Plan&,
                          nlohmann::json*) {
  throw std::logic_error("cuda_kernel: this build has no CUDA backend");
}

train::TrainResult cuda_train(const train::TrainConfig&, const train::Dataset&,
                              const train::Dataset&, const std::function<void(std::size_t)>&,
                              bool) {
  throw std::logic_error("cuda_train: this build has no CUDA backend");
}

train::ProfileResult cuda_profile(const train::TrainConfig&, const train::Dataset&, std::size_t,
                                  bool) {
  throw std::logic_error("cuda_profile: this build has no CUDA backend");
}

MmaExecutor cuda_mma_executor(const numeric::Format&, numeric::MmaAccumulator, std::string_view) {
  throw std::logic_error("cuda_mma_executor: this build has no CUDA backend");
}

#endif

}  // namespace ampbench::runtime
