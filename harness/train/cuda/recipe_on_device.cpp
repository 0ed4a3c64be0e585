#include "harness/train/cuda/recipe_on_device.hpp"

#include <fmt/format.h>

#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "harness/backends/cuda/scaled_gemm.hpp"
#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "harness/quant/recipe_gemm.hpp"
#include "kernels/device.hpp"

namespace ampbench::train {
template class RecipeOpsOn<backends::cuda::CudaOps>;
}  // namespace ampbench::train

namespace ampbench::train::cuda {

RecipeGemmDevice cublaslt_recipe_gemms(const quant::Recipe& recipe, int cc,
                                       const std::string& cpu_arch) {
  RecipeGemmDevice device;
  device.name = fmt::format("cuBLASLt sm_{}", cc);
  device.rows_multiple = 16;
  device.k_multiple = 16;
  for (const quant::Role role : {quant::Role::x, quant::Role::w, quant::Role::dy}) {
    if (std::string_view(recipe.operand(role).element.name) == "e2m1") device.k_multiple = 32;
  }
  if (cpu_arch != "exact") {
    for (const quant::Gemm g : {quant::Gemm::fprop, quant::Gemm::dgrad, quant::Gemm::wgrad}) {
      const quant::MmaChoice choice = quant::recipe_mma(cpu_arch, recipe, g);
      if (choice.mma) {
        device.k_multiple = std::lcm(device.k_multiple, quant::instruction_k(*choice.mma));
      }
    }
  }
  // One cuBLASLt handle and workspace for the run's GEMMs.
  auto gemms = std::make_shared<backends::cuda::ScaledGemms>();
  device.multiply = [recipe, gemms](quant::Gemm gemm, const quant::Quantized& a,
                                    const quant::Quantized& b) {
    try {
      return gemms->recipe_product(recipe, gemm, a, b, recipe.promote_interval == 0, nullptr);
    } catch (const std::invalid_argument& e) {
      throw std::logic_error(
          fmt::format("{}: the {} GEMM, which why_no_recipe_training let through, was refused "
                      "on its way to cuBLASLt: {}",
                      recipe.name, quant::gemm_name(gemm), e.what()));
    }
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
  return cuda::CudaRecipeOps(recipe,
                             cuda::cublaslt_recipe_gemms(recipe, cc, recipe_arch(recipe, config)),
                             config.seed, std::move(keep_bf16));
}

}  // namespace ampbench::train::steps
