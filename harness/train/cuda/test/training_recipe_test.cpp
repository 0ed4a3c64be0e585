// Recipes trained on the device (recipe_on_device.hpp): each GEMM of the mlp's layers quantized on
// the host and multiplied by cuBLASLt's scaled GEMM, beside the same recipe on the CPU emulation's
// Tensor Core model. The first step's quantizations see the same inputs on both (the data and the
// initial weights), so their records are equal exactly; the losses differ by the products'
// summation order and the device's own accumulation, which the test bounds. A recipe this
// device's cuBLASLt cannot multiply (backends::cuda::why_no_recipe_training: MX and NVFP4 before
// sm_100, FP8 before sm_89) is refused with that reason, and the test checks the refusal instead.
// Every test skips with the reason where there is no device.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backends/cuda/scaled_gemm_plan.hpp"
#include "harness/quant/recipe.hpp"
#include "harness/train/cuda/recipe_on_device.hpp"
#include "harness/train/cuda/train_on_device.hpp"
#include "harness/train/data.hpp"
#include "harness/train/trainer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::train::cuda {
namespace {

using RecipesOnGpu = kernels::test::GpuTest;

TrainConfig recipe_run(const char* recipe, std::size_t steps) {
  TrainConfig config;
  config.model = "mlp";
  config.recipes.push_back(*quant::find_recipe(recipe));
  config.steps = steps;
  config.batch = 32;
  return config;
}

const RunResult& run_on(const TrainResult& r, const char* backend) {
  for (const RunResult& run : r.runs) {
    if (run.backend == backend) return run;
  }
  throw std::logic_error(std::string("no run on ") + backend);
}

// How the device's GEMMs are padded, which needs no device: cuBLASLt's multiples of 16 (K of 32
// for FP4), and K to the CPU model's instruction K too (Blackwell's block-scaled FP4 MMA: 64), so
// that a stochastic recipe's draws fall on the same elements on both backends.
TEST(CublasLtRecipeGemms, PadAsCublasLtAndTheCpuModelBothNeed) {
  const auto padding = [](const char* recipe, const char* arch) {
    const RecipeGemmDevice d = cublaslt_recipe_gemms(*quant::find_recipe(recipe), 90, arch);
    EXPECT_EQ(d.name, "cuBLASLt sm_90");
    EXPECT_EQ(d.rows_multiple, 16u);
    return d.k_multiple;
  };
  EXPECT_EQ(padding("fp8-current", "hopper"), 16u);
  EXPECT_EQ(padding("fp8-current", "exact"), 16u);
  EXPECT_EQ(padding("nvfp4", "exact"), 32u);
  EXPECT_EQ(padding("nvfp4", "blackwell"), 64u);
}

TEST_F(RecipesOnGpu, EachBuiltinRecipeTrainsOnCublasLtOrIsRefusedWithTheReason) {
  const int cc = device().compute_major * 10 + device().compute_minor;
  const Dataset data = default_dataset("mlp", 1);
  const Split split = train::split(data, 256, 1);
  std::size_t trained = 0;
  for (const char* name : {"fp8-delayed", "fp8-current", "fp8-block", "mxfp8", "nvfp4", "mxfp4"}) {
    SCOPED_TRACE(name);
    const TrainConfig config = recipe_run(name, 4);
    if (auto why = backends::cuda::why_no_recipe_training(config.recipes[0], cc)) {
      try {
        (void)train_on_device(config, split.train, split.eval);
        ADD_FAILURE() << "trained what why_no_recipe_training refuses: " << *why;
      } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()), *why);
      }
      std::printf("%s on sm_%d: refused: %s\n", name, cc, why->c_str());
      continue;
    }
    const TrainResult r = train_on_device_and_cpu(config, split.train, split.eval);
    ASSERT_EQ(r.runs.size(), 2u);
    const RunResult& cpu = run_on(r, "cpu");
    const RunResult& gpu = run_on(r, "cuda");
    EXPECT_EQ(gpu.recipe, name);
    EXPECT_EQ(gpu.recipe_arch, "cuBLASLt sm_" + std::to_string(cc));
    ASSERT_EQ(gpu.steps.size(), 4u);
    ASSERT_EQ(cpu.steps.size(), 4u);
    // Step 0: the same operands reach the quantizers of the first layer's fprop (the data, the
    // initial weights); the records of its x and w are equal.
    const auto& device_step = gpu.steps[0].scaled;
    const auto& host_step = cpu.steps[0].scaled;
    ASSERT_EQ(device_step.size(), host_step.size());
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(device_step[i].parameter, 0u);
      EXPECT_EQ(device_step[i].gemm, quant::Gemm::fprop);
      EXPECT_EQ(device_step[i].amax, host_step[i].amax) << i;
      EXPECT_EQ(device_step[i].scale, host_step[i].scale) << i;
      EXPECT_EQ(device_step[i].saturated, host_step[i].saturated) << i;
      EXPECT_EQ(device_step[i].flushed, host_step[i].flushed) << i;
      EXPECT_EQ(device_step[i].elements, host_step[i].elements) << i;
    }
    // The losses: both finite, step 0's within 1% of each other (the same quantized operands;
    // the products' accumulation order and promotion differ, and the outputs are bf16).
    for (const StepRecord& s : gpu.steps) EXPECT_TRUE(std::isfinite(s.loss)) << s.step;
    EXPECT_LE(std::fabs(gpu.steps[0].loss - cpu.steps[0].loss), 0.01 * std::fabs(cpu.steps[0].loss))
        << "device " << gpu.steps[0].loss << ", model " << cpu.steps[0].loss;
    std::printf("%s on sm_%d: loss at step 0 %.6g (model %.6g), eval loss %.6g (model %.6g)\n",
                name, cc, gpu.steps[0].loss, cpu.steps[0].loss, gpu.eval_loss, cpu.eval_loss);
    ++trained;
  }
  // An FP8 recipe trains on every device with FP8 GEMMs.
  if (cc >= 89) {
    EXPECT_GE(trained, 1u);
  }
}

}  // namespace
}  // namespace ampbench::train::cuda
