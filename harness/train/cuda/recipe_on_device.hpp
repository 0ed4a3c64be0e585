// Recipes trained on the GPU (issue 19; docs/training.md "Recipes on the device"): the CUDA
// backend's training ops under amp-bf16 (CudaOps) with the linear and convolution layers' GEMMs
// run as the recipe says (RecipeOpsOn, harness/train/recipe_ops.hpp): each GEMM's operands
// brought to the host and quantized by the reference quantizers, as on the CPU, then multiplied by
// cuBLASLt's scaled GEMM on the device, the product back on the device as a binary32 tensor. The
// master weights and the optimizer stay on the device (DeviceMasters). Needs the CUDA toolkit; a
// device to run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/train/cuda/device_masters.hpp"
#include "harness/train/recipe_ops.hpp"
#include "harness/train/trainer.hpp"
#include "harness/train/trainer_steps.hpp"

namespace ampbench::train::cuda {

using CudaRecipeOps = RecipeOpsOn<backends::cuda::CudaOps>;

// The recipe's GEMMs as cuBLASLt's scaled GEMMs on the current device
// (backends::cuda::ScaledGemms::recipe_product), named "cuBLASLt sm_XY" after its compute
// capability `cc`, with fast accumulation where the recipe never promotes (promote_interval 0),
// else cuBLASLt's own promotion; M and N padded to multiples of 16, K to 16 (32 where an operand
// is FP4), as its scaled GEMMs take them (backends::cuda::why_no_scaled_gemm), and K also to the
// instruction K of the CPU emulation's model `cpu_arch` for each GEMM (RecipeGemms pads K so on
// the CPU), so that every element keeps its stochastic draw: the runs of one recipe on the two
// backends quantize alike. A GEMM the device refuses after all is a std::logic_error (the
// refusals are why_no_recipe_training's, asked before any work).
RecipeGemmDevice cublaslt_recipe_gemms(const quant::Recipe& recipe, int cc,
                                       const std::string& cpu_arch);

// The master weights of a recipe's run on the device: DeviceMasters whose parameters tell the ops
// which weight is which layer's (RecipeOpsOn::parameters_are).
class RecipeDeviceMasters : public DeviceMasters {
 public:
  using DeviceMasters::DeviceMasters;
  std::vector<CudaTensor> parameters(CudaRecipeOps& ops) const;
};

}  // namespace ampbench::train::cuda

// Compiled once, in recipe_on_device.cpp.
extern template class ampbench::train::RecipeOpsOn<ampbench::backends::cuda::CudaOps>;

namespace ampbench::train::steps {

template <>
struct MastersOf<cuda::CudaRecipeOps> {
  using type = cuda::RecipeDeviceMasters;
};

// A recipe's run on the device: its GEMMs on the current device's cuBLASLt. Throws
// std::invalid_argument where it cannot multiply them (backends::cuda::why_no_recipe_training).
template <>
struct RecipeOpsOf<backends::cuda::CudaOps> {
  using type = cuda::CudaRecipeOps;
  static type make(const quant::Recipe& recipe, const TrainConfig& config,
                   std::vector<std::size_t> keep_bf16);
};

}  // namespace ampbench::train::steps
