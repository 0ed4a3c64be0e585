#include "harness/train/cuda/recipe_on_device.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "harness/backends/cuda/scaled_gemm.hpp"
#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "kernels/device.hpp"

namespace ampbench::train {
template class RecipeOpsOn<backends::cuda::CudaOps>;
}  // namespace ampbench::train

namespace ampbench::train::cuda {

RecipeGemmDevice cublaslt_recipe_gemms(const quant::Recipe& recipe, int cc) {
  RecipeGemmDevice device;
  device.name = fmt::format("cuBLASLt sm_{}", cc);
  device.rows_multiple = 16;
  device.k_multiple = 16;
  for (const quant::Role role : {quant::Role::x, quant::Role::w, quant::Role::dy}) {
    if (std::string_view(recipe.operand(role).element.name) == "e2m1") device.k_multiple = 32;
  }
  // One cuBLASLt handle and workspace for the run's GEMMs.
  auto gemms = std::make_shared<backends::cuda::ScaledGemms>();
  device.multiply = [recipe, gemms](quant::Gemm gemm, const quant::Quantized& a,
                                    const quant::Quantized& b) {
    return gemms->recipe_product(recipe, gemm, a, b, recipe.promote_interval == 0, nullptr);
  };
  return device;
}

std::vector<CudaTensor> RecipeDeviceMasters::parameters(CudaRecipeOps& ops) const {
  std::vector<CudaTensor> tensors = DeviceMasters::parameters(ops);
  ops.parameters_are(tensors);
  return tensors;
}

}  // namespace ampbench::train::cuda

namespace ampbench::train::steps {

cuda::CudaRecipeOps RecipeOpsOf<backends::cuda::CudaOps>::make(const quant::Recipe& recipe,
                                                               const TrainConfig& config,
                                                               std::vector<std::size_t> keep_bf16) {
  const kernels::DeviceStatus status = kernels::probe_device();
  if (!status.available) throw std::invalid_argument("no usable CUDA device: " + status.error);
  const int cc = status.compute_major * 10 + status.compute_minor;
  if (auto why = backends::cuda::why_no_recipe_training(recipe, cc)) {
    throw std::invalid_argument(*why);
  }
  return cuda::CudaRecipeOps(recipe, cuda::cublaslt_recipe_gemms(recipe, cc), config.seed,
                             std::move(keep_bf16));
}

}  // namespace ampbench::train::steps
