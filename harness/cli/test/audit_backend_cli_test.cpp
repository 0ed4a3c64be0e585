// `ampbench audit --backend cpu|cuda|all` end to end. What the command must do depends on the
// machine: without CUDA in the build or without a usable device, cuda stops with exit status 3 and
// all runs the CPU and says why the GPU is missing; with a device both run side by side. Each test
// checks the branch this machine takes, and the usage errors that come before any device work.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/device_available.hpp"
#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::device_available;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

// What the command says when it cannot use the GPU here.
std::string why_no_gpu() {
#if AMPBENCH_HAVE_CUDA
  return "no usable CUDA device: ";
#else
  return "this build has no CUDA backend (configure with the CUDA toolkit)";
#endif
}

TEST(CliAuditBackend, CudaWithoutAGpuStopsBeforeAnyWorkWithStatus3) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: the cuda backend runs";
  const Outcome run = ampbench("audit --op gemm --shape 8x8x8 --backend cuda");
  EXPECT_EQ(run.status, 3) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_NE(run.err.find("ampbench audit: --backend cuda: " + why_no_gpu()), std::string::npos)
      << run.err;
#if AMPBENCH_HAVE_CUDA
  // The CUDA error's text and name, as probe_device gives them: "... (cudaError...)".
  EXPECT_NE(run.err.find("(cudaError"), std::string::npos) << run.err;
#endif
  // Before anything else is checked: even a bad policy is not reached.
  EXPECT_EQ(ampbench("audit --op gemm --policy fp17 --backend cuda").status, 3);
}

TEST(CliAuditBackend, AllWithoutAGpuRunsTheCpuAndSaysWhy) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: both backends run";
  const std::string json = temp_path("all.json");
  const Outcome run = ampbench(
      "audit --op gemm --shape 8x8x16 --policy fp32,amp-bf16 --backend all "
      "--budgets none --json " +
      json);
  const std::string text = slurp(json);
  std::remove(json.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("cuda: unavailable, " + why_no_gpu()), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("the CPU backend runs alone"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("gemm" + std::string(20, ' ') + "fp32      cpu      8x8x16"),
            std::string::npos)
      << run.out;
  const auto records = nlohmann::json::parse(text);
  EXPECT_NE(records["cuda_unavailable"].get<std::string>().find(why_no_gpu()), std::string::npos);
  ASSERT_EQ(records["cases"].size(), 2u);
  for (const auto& record : records["cases"]) {
    EXPECT_EQ(record["backend"], "cpu");
    EXPECT_FALSE(record.contains("device"));
  }
}

TEST(CliAuditBackend, AllWithAGpuRunsEachCaseOnBothAndReportsWhatCannotRun) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device: " << why_no_gpu();
  const std::string json = temp_path("both.json");
  const Outcome run = ampbench(
      "audit --op gemm --shape 32x16x64 --policy amp-fp16,bf16 "
      "--backend all --budgets none --json " +
      json);
  const std::string text = slurp(json);
  std::remove(json.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("not on cuda: gemm (bf16 inputs, bf16 accumulation, bf16 output)"),
            std::string::npos)
      << run.out;
  const auto cases = nlohmann::json::parse(text)["cases"];
  ASSERT_EQ(cases.size(), 4u);  // amp-fp16 on cpu and cuda; bf16 on cpu, and not run on cuda
  EXPECT_EQ(cases[0]["backend"], "cpu");
  EXPECT_EQ(cases[1]["backend"], "cuda");
  EXPECT_EQ(cases[1]["status"], "PASS");
  EXPECT_EQ(cases[1]["cuda"]["compute_type"], "CUBLAS_COMPUTE_32F");
  EXPECT_EQ(cases[1]["cuda"]["a_b_type"], "CUDA_R_16F");
  EXPECT_TRUE(cases[1]["cuda"]["algorithm"].contains("id"));
  for (const char* field :
       {"name", "compute_capability", "driver", "cuda_runtime", "cublas", "cudnn"}) {
    EXPECT_TRUE(cases[1]["device"].contains(field)) << field;
  }
  EXPECT_EQ(cases[2]["backend"], "cpu");
  EXPECT_EQ(cases[3]["backend"], "cuda");
  EXPECT_EQ(cases[3]["status"], "NOT_RUN");
  EXPECT_NE(cases[3]["reason"].get<std::string>().find("cuBLAS has no compute type"),
            std::string::npos);
}

TEST(CliAuditBackend, ConvMathReachesCudnnAndTheRecordsSayWhatRan) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device: " << why_no_gpu();
  const std::string json = temp_path("conv.json");
  const Outcome run = ampbench(
      "audit --op conv2d_backward_filter --shape 2x4x6x6:4x3x3,pad=1 --policy fp32,bf16 "
      "--backend cuda --conv-math fma --budgets none --json " +
      json);
  const std::string text = slurp(json);
  std::remove(json.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  const auto cases = nlohmann::json::parse(text)["cases"];
  ASSERT_EQ(cases.size(), 2u);  // fp32 on cuda; bf16 (bf16 accumulation) not run
  EXPECT_EQ(cases[0]["status"], "PASS");
  EXPECT_EQ(cases[0]["cuda"]["call"], "cudnnConvolutionBackwardFilter");
  EXPECT_EQ(cases[0]["cuda"]["algorithm"]["requested_math"], "CUDNN_FMA_MATH");
  EXPECT_EQ(cases[0]["cuda"]["algorithm"]["math"], "CUDNN_FMA_MATH");
  EXPECT_TRUE(cases[0]["cuda"]["algorithm"].contains("workspace_bytes"));
  EXPECT_EQ(cases[1]["status"], "NOT_RUN");
}

TEST(CliAuditBackend, CudaWithAGpuRefusesARunWhereNoCaseCanRun) {
  if (!device_available()) GTEST_SKIP() << "no CUDA device: " << why_no_gpu();
  const Outcome run = ampbench("audit --op attention --shape 64x32x16 --backend cuda");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("no case can run on the CUDA backend:\n  attention ("), std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("the device's attention is the trainer's self-attention"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(ampbench("audit --op gemm --backend cuda --mma hopper").status, 2);
}

// scripts/gpu-check audits gemm, bmm and cast in one run, one records file.
TEST(CliAuditBackend, SeveralOpsRunEachAtItsDefaultShape) {
  const std::string json = temp_path("ops.json");
  const Outcome run = ampbench("audit --op gemm,cast --samples 8 --budgets none --json " + json);
  const std::string text = slurp(json);
  std::remove(json.c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  const auto cases = nlohmann::json::parse(text)["cases"];
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0]["shape"], "256x256x256");
  EXPECT_EQ(cases[1]["op"], "cast");
  EXPECT_EQ(cases[1]["shape"], "64x1024");
}

TEST(CliAuditBackend, BadBackendOptionsExitWith2BeforeAnyWork) {
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--op gemm --backend all --gemm-compute 64F",
       "--gemm-compute: unknown compute type '64F' (known: 32F, 32F_PEDANTIC, 32F_FAST_TF32, "
       "32F_FAST_16F, 32F_FAST_16BF, 16F)"},
      {"--op gemm --gemm-compute 32F", "--gemm-compute goes with --backend cuda or all"},
      {"--op conv2d --backend all --conv-math tf32",
       "ampbench audit: --conv-math: unknown math type 'tf32' (known: default, tensor_op, "
       "tensor_op_allow_conversion, fma)"},
      {"--op conv2d --conv-math fma", "--conv-math goes with --backend cuda or all"},
      {"--op gemm,cast --shape 8x8x8", "--shape goes with a single --op"},
      {"--op gemm,conv9d", "--op: unknown op 'conv9d'"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("audit " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
  }
}

}  // namespace
