// The CUDA side of the registry on whatever machine runs the tests: the probe never throws and,
// without a usable device (or without CUDA in the build), says why; the request's backends follow
// the rule; a suite's cases are told apart by what the device can run.
#include "harness/runtime/cuda.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/policy/policy.hpp"
#include "harness/results/suite.hpp"

namespace ampbench::runtime {
namespace {

TEST(CudaProbe, NeverThrowsAndSaysWhyThereIsNoDevice) {
  CudaStatus status;
  ASSERT_NO_THROW(status = probe_cuda());
  EXPECT_FALSE(status.gpu.empty());
  if (status.available) {
    EXPECT_EQ(status.unavailable, "");
    EXPECT_TRUE(status.device.is_object());
    EXPECT_EQ(status.gpu_device.kind, "gpu");
    return;
  }
  EXPECT_EQ(status.gpu_device.kind, "unknown");
  if (built_with_cuda()) {
    EXPECT_EQ(status.unavailable.rfind("no usable CUDA device: ", 0), 0u) << status.unavailable;
    EXPECT_GT(status.unavailable.size(), std::string("no usable CUDA device: ").size());
  } else {
    EXPECT_EQ(status.unavailable, cuda_not_built().unavailable);
    EXPECT_EQ(cuda_library_versions(), "");
  }
}

TEST(CudaProbe, OpeningFollowsTheRuleForTheDeviceFound) {
  const bool device = probe_cuda().available;
  const Opening cpu = open_backends(Request::cpu);
  EXPECT_EQ(cpu.runs, (Selection{true, false}));
  EXPECT_EQ(cpu.cuda.gpu, "");  // not probed
  const Opening cuda = open_backends(Request::cuda);
  EXPECT_EQ(cuda.refused(), !device);
  EXPECT_EQ(cuda.runs.cuda, device);
  const Opening all = open_backends(Request::all);
  EXPECT_FALSE(all.refused());
  EXPECT_EQ(all.runs, (Selection{true, device}));
  EXPECT_EQ(all.cpu_alone.empty(), device);
}

TEST(CudaEntryPoints, WithoutCudaInTheBuildTheyRefuseToRun) {
  if (built_with_cuda()) GTEST_SKIP() << "a CUDA build: the entry points run on a device";
  EXPECT_THROW(cuda_mma_executor(numeric::formats::fp16, numeric::MmaAccumulator::fp32, "auto"),
               std::logic_error);
}

// The GPU planner answers for a model from the model's ops (train::model_ops), the same in a build
// without CUDA; a model the trainer does not have is named with those it has.
TEST(CudaTraining, ModelsAreJudgedByTheirOpsAndUnknownOnesNamedWithTheTrainableOnes) {
  const policy::Policy& amp = *policy::find_builtin("amp-fp16");
  for (const char* model : {"mlp", "cnn", "transformer"}) {
    EXPECT_EQ(why_not_trainable(amp, model), std::nullopt) << model;
  }
  // Pure bf16 accumulates its linear layers' products in bf16, which no cuBLAS compute type does.
  const auto bf16 = why_not_trainable(*policy::find_builtin("bf16"), "mlp");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_EQ(bf16->rfind("policy bf16: linear: ", 0), 0u) << *bf16;
  const auto note = non_gemm_compute_note(*policy::find_builtin("fp16"), "cnn");
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->rfind("policy fp16 computes batch_norm in fp16", 0), 0u) << *note;
  EXPECT_EQ(why_not_trainable(amp, "rnn"),
            "model rnn: the CUDA backend trains mlp, cnn, transformer");
}

// A suite "t" of seed 3 whose entries are `entries` (TOML).
results::Suite suite_of(const std::string& entries) {
  return results::parse_suite("name = \"t\"\nseed = 3\n" + entries, "t.toml", ".");
}

TEST(CudaSuiteCases, TheCpuRunsEveryCaseAndTheGpuWhatItsPlannerAllows) {
  const results::Suite suite = suite_of(
      "[[audit]]\nops = [\"dot\"]\nshapes = [\"16\"]\npolicies = [\"fp32\"]\n"
      "[[audit]]\nops = [\"gemm\"]\nshapes = [\"8x8x8\"]\npolicies = [\"amp-fp16\"]\n"
      "mma = \"hopper\"\n");
  ASSERT_EQ(suite.cases.size(), 2u);
  for (const auto& c : suite.cases) EXPECT_EQ(why_not_on(c, "cpu"), std::nullopt) << c.key;
  EXPECT_EQ(why_not_on(suite.cases[0], "cuda"), std::nullopt);
  const auto mma = why_not_on(suite.cases[1], "cuda");
  ASSERT_TRUE(mma.has_value());
  EXPECT_NE(mma->find("Tensor Core model"), std::string::npos) << *mma;
  // Every kind of case has its runner on the device (called only where there is one).
  const results::BackendRunners runners = cuda_runners(probe_cuda());
  EXPECT_TRUE(runners.kernel && runners.train && runners.profile && runners.fingerprint &&
              runners.recipe);
}

// A recipe case runs on the device where its GEMMs are cuBLASLt scaled GEMMs of this device
// (backends::cuda::why_no_recipe_gemm); the audit's own refusals come first.
TEST(CudaSuiteCases, ARecipeCaseRunsWhereTheDevicesCublasLtCanMultiplyIt) {
  const results::Suite suite = suite_of(
      "[[recipe]]\nrecipes = [\"fp8-current\", \"mxfp6\"]\nshapes = [\"64x64x128\"]\n"
      "arch = \"exact\"\n");
  ASSERT_EQ(suite.cases.size(), 2u);
  EXPECT_EQ(why_not_on(suite.cases[0], "cpu"), std::nullopt);
  const std::optional<int> cc = device_compute_capability();
  const auto current = why_not_on(suite.cases[0], "cuda");
  const auto fp6 = why_not_on(suite.cases[1], "cuda");
  ASSERT_TRUE(fp6.has_value());
  if (!cc) {
    EXPECT_EQ(current, "no CUDA device to multiply on");
    EXPECT_EQ(fp6, "no CUDA device to multiply on");
    return;
  }
  EXPECT_EQ(current.has_value(), *cc < 89) << current.value_or("");
  EXPECT_NE(fp6->find("no e3m2 element type"), std::string::npos) << *fp6;
}

// A training case's recipes this device cannot train are taken out of its run on the device, each
// listed with the reason, while its policies (and the recipes it can train) still run there.
TEST(CudaSuiteCases, ATrainingRunOnTheDeviceLosesOnlyTheRecipesTheDeviceRefuses) {
  const results::Suite suite = suite_of(
      "[[train]]\nmodel = \"mlp\"\npolicies = [\"amp-bf16\"]\n"
      "recipes = [\"fp8-current\", \"mxfp6\"]\nsteps = 2\n");
  ASSERT_EQ(suite.cases.size(), 1u);
  const auto recipes = [](const results::SuiteCase& c) {
    std::vector<std::string> names;
    for (const auto& r : std::get<train::TrainConfig>(c.work).recipes) names.push_back(r.name);
    return names;
  };
  results::SuiteCase on_cpu = suite.cases[0];
  EXPECT_TRUE(narrow_to(on_cpu, "cpu").empty());
  EXPECT_EQ(recipes(on_cpu), (std::vector<std::string>{"fp8-current", "mxfp6"}));

  results::SuiteCase both = suite.cases[0];
  const auto out = narrow_to(both, "cuda");
  const std::optional<int> cc = device_compute_capability();
  // mxfp6 never trains on cuBLASLt (no FP6 type); fp8-current from sm_89.
  const bool fp8 = cc && *cc >= 89;
  EXPECT_EQ(recipes(both),
            fp8 ? std::vector<std::string>{"fp8-current"} : std::vector<std::string>{});
  ASSERT_EQ(out.size(), fp8 ? 1u : 2u);
  EXPECT_EQ(out.back().first, "recipe=mxfp6");
  // The policies' run is left for why_not_on, which now has no recipe to refuse.
  if (!cc) {
    EXPECT_EQ(out.back().second, "no CUDA device to multiply a recipe's GEMMs on");
    EXPECT_EQ(why_not_on(both, "cuda"), std::nullopt);
  }
}

}  // namespace
}  // namespace ampbench::runtime
