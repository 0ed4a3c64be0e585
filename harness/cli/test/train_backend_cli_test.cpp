// `ampbench train|profile|eval --backend cuda` end to end, on the branch this machine takes:
// without CUDA in the build or without a usable device each command stops with exit status 3
// before any work; with a device short runs train, profile and evaluate on it. (Usage errors of
// --backend are in train_cli_test.cpp, profile_cli_test.cpp and cli_test.cpp.)
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/device_available.hpp"
#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::ampbench_with_record;
using ampbench::cli::test::device_available;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

TEST(CliTrainBackend, CudaWithoutAGpuStopsBeforeAnyWorkWithStatus3) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: training runs on it";
  const std::string json = temp_path("train-cuda.json");
  const Outcome run = ampbench("train --backend cuda --steps 2 --json " + json);
  EXPECT_EQ(run.status, 3) << run.err;
  EXPECT_EQ(run.out, "");
#if AMPBENCH_HAVE_CUDA
  EXPECT_NE(run.err.find("ampbench train: --backend cuda: no usable CUDA device: "),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("(cudaError"), std::string::npos) << run.err;
#else
  EXPECT_NE(run.err.find("ampbench train: --backend cuda: this build has no CUDA backend"),
            std::string::npos)
      << run.err;
#endif
  std::FILE* written = std::fopen(json.c_str(), "r");
  EXPECT_EQ(written, nullptr) << "no record without a run";
  if (written != nullptr) std::fclose(written);
}

TEST(CliTrainBackend, AllWithoutAGpuTrainsOnTheCpuAndSaysWhy) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: both backends train";
  const auto [run, text] = ampbench_with_record(
      "train --backend all --steps 2 --batch 16 --eval 64 --policy fp32", "train-all.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("cuda: unavailable, "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("the CPU backend trains alone"), std::string::npos) << run.out;
  const auto record = nlohmann::json::parse(text);
  EXPECT_EQ(record["backend"], "cpu");
  EXPECT_FALSE(record["cuda_unavailable"].get<std::string>().empty());
  ASSERT_EQ(record["runs"].size(), 1u);
  EXPECT_EQ(record["runs"][0]["backend"], "cpu");
}

// --sensitivity with --backend all: without a device the CPU ranks alone, its ranking named by
// its backend in the record.
TEST(CliTrainBackend, SensitivityOnAllWithoutAGpuRanksOnTheCpu) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: both backends rank";
  const auto [run, text] = ampbench_with_record(
      "train --backend all --steps 2 --batch 16 --eval 64 --policy fp8-current --sensitivity",
      "train-all-sensitivity.json");
  ASSERT_TRUE(run.status == 0 || run.status == 1) << run.out << run.err;
  EXPECT_NE(run.out.find("the CPU backend trains alone"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fp8-current: layers kept in bf16 one at a time"), std::string::npos)
      << run.out;
  const auto record = nlohmann::json::parse(text);
  ASSERT_EQ(record["sensitivity"].size(), 1u) << record["sensitivity"].dump();
  EXPECT_EQ(record["sensitivity"][0]["backend"], "cpu");
  EXPECT_EQ(record["sensitivity"][0]["layers"].size(), 2u);
}

// With a device, each backend ranks the recipe's layers from its own runs (an H200 multiplies
// fp8-current on cuBLASLt): two rankings, the CPU's then the device's, each over its own runs.
TEST(CliTrainBackend, SensitivityOnAllRanksOnEachBackend) {
  if (!device_available()) GTEST_SKIP() << "no usable CUDA device here";
  const auto [run, text] = ampbench_with_record(
      "train --backend all --steps 2 --batch 16 --eval 64 --policy fp8-current --sensitivity",
      "train-all-sensitivity.json");
  if (run.status == 2) GTEST_SKIP() << "this device does not train fp8-current: " << run.err;
  ASSERT_TRUE(run.status == 0 || run.status == 1) << run.out << run.err;
  EXPECT_NE(run.out.find("fp8-current on cuda: layers kept in bf16"), std::string::npos) << run.out;
  const auto record = nlohmann::json::parse(text);
  ASSERT_EQ(record["sensitivity"].size(), 2u) << record["sensitivity"].dump();
  const char* backends[] = {"cpu", "cuda"};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& s = record["sensitivity"][i];
    EXPECT_EQ(s["backend"], backends[i]);
    EXPECT_EQ(s["layers"].size(), 2u);
    // Its recipe's mean loss error is its own backend's run's.
    std::size_t found = 0;
    for (const auto& r : record["runs"]) {
      if (r["policy"] != s["run"] || r["backend"] != backends[i]) continue;
      ++found;
      double sum = 0;
      for (const auto& step : r["steps"]) sum += step["loss_rel_error"].get<double>();
      EXPECT_NEAR(s["mean_loss_error"].get<double>(), sum / static_cast<double>(r["steps"].size()),
                  1e-12 * sum)
          << backends[i];
    }
    EXPECT_EQ(found, 1u) << backends[i];
  }
}

TEST(CliTrainBackend, ProfileOnCudaWithoutAGpuStopsBeforeAnyWorkWithStatus3) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: profiling runs on it";
  const std::string trace = temp_path("profile-cuda-trace.json");
  const Outcome run = ampbench("profile --backend cuda --steps 2 --trace " + trace);
  EXPECT_EQ(run.status, 3) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err.find("ampbench profile: --backend cuda: "), 0u) << run.err;
  std::FILE* written = std::fopen(trace.c_str(), "r");
  EXPECT_EQ(written, nullptr) << "no trace without a run";
  if (written != nullptr) std::fclose(written);
}

TEST(CliTrainBackend, TheTransformerOnCudaWithoutAGpuStopsWithStatus3NotAsRefused) {
  if (device_available()) GTEST_SKIP() << "a CUDA device is present: the transformer runs on it";
  for (const char* command : {"train", "profile"}) {
    const Outcome run =
        ampbench(std::string(command) + " --backend cuda --model transformer --steps 2");
    EXPECT_EQ(run.status, 3) << command << "\n" << run.err;
    EXPECT_EQ(run.out, "") << command;
    EXPECT_EQ(run.err.find("ampbench " + std::string(command) + ": --backend cuda: "), 0u)
        << run.err;
  }
}

TEST(CliTrainBackend, ProfileOnTheGpuAttributesTheDevicesTime) {
  if (!device_available()) GTEST_SKIP() << "no usable CUDA device here";
  const std::string json = temp_path("profile-cuda.json");
  const std::string trace = temp_path("profile-cuda-trace.json");
  const Outcome run =
      ampbench("profile --backend cuda --steps 3 --warmup 1 --json " + json + " --trace " + trace);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("peak_MiB"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("profiler overhead: an empty kernel launch takes "), std::string::npos)
      << run.out;
  const auto record = nlohmann::json::parse(slurp(json));
  const auto chrome = nlohmann::json::parse(slurp(trace));
  std::remove(json.c_str());
  std::remove(trace.c_str());
  EXPECT_EQ(record["backend"], "cuda");
  EXPECT_TRUE(record["device"].contains("name")) << record.dump();
  EXPECT_GT(record["profiler_overhead"]["untraced"]["ns_per_launch"].get<double>(), 0);
  EXPECT_FALSE(record["hardware_metrics"]["why"].get<std::string>().empty());
  EXPECT_NE(run.out.find("hardware metrics: not collected: "), std::string::npos) << run.out;
  for (const auto& r : record["runs"]) {
    EXPECT_GT(r["peak_device_bytes"].get<double>(), 0) << r["policy"];
    EXPECT_GT(r["attribution"]["total"]["kernel_count"].get<double>(), 0) << r["policy"];
    const auto& categories = r["attribution"]["total"]["categories"];
    // Plausible categories: every policy runs GEMMs and the loss's reduction; autocast casts the
    // fp32 activations and weights, and its fp16/bf16 GEMMs run on Tensor Cores (cuBLASLt's
    // Hopper kernels are named nvjet or sm90_xmma: classify.hpp).
    EXPECT_TRUE(categories.contains("reduction")) << r["policy"] << categories.dump();
    if (r["policy"] == "amp-fp16" || r["policy"] == "amp-bf16") {
      EXPECT_TRUE(categories.contains("cast")) << r["policy"] << categories.dump();
      EXPECT_TRUE(categories.contains("gemm_tensor_core")) << r["policy"] << categories.dump();
    }
  }
  bool kernel = false;
  for (const auto& e : chrome["traceEvents"]) kernel = kernel || e.value("cat", "") == "kernel";
  EXPECT_TRUE(kernel) << "the trace holds the device's kernels";
}

// The CUPTI range profiler's counters per phase: collected (autocast's bf16 GEMMs execute Tensor
// Core instructions in the backward phase, and the step moves DRAM bytes), or, where the driver
// keeps counters from this user or the device cannot count, a "why" that says so: then the test
// skips with it. amp-bf16 trains without a loss scaler, so no counted step is skipped and every
// pass has the same phases.
TEST(CliTrainBackend, HardwareMetricsCountTheTensorPipePerPhase) {
  if (!device_available()) GTEST_SKIP() << "no usable CUDA device here";
  const std::string json = temp_path("profile-counters.json");
  const Outcome run = ampbench(
      "profile --backend cuda --steps 2 --warmup 1 --policy fp32,amp-bf16 "
      "--hardware-metrics --json " +
      json);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_TRUE(record["hardware_metrics"]["requested"].get<bool>());
  if (record["hardware_metrics"].contains("why")) {
    const std::string why = record["hardware_metrics"]["why"].get<std::string>();
    EXPECT_NE(run.out.find(": not collected: "), std::string::npos) << run.out;
    if (why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos ||
        why.find("does not support range profiling") != std::string::npos) {
      GTEST_SKIP() << why;
    }
    FAIL() << why;
  }
  EXPECT_NE(run.out.find("hardware counters (CUPTI range profiler"), std::string::npos) << run.out;
  for (const auto& r : record["runs"]) {
    std::map<std::string, nlohmann::json> by_path;
    for (const auto& range : r["hardware_metrics"]["ranges"]) by_path[range["path"]] = range;
    for (const char* path : {"step", "step/forward", "step/loss", "step/backward", "step/optimizer",
                             "step/forward/linear"}) {
      ASSERT_TRUE(by_path.count(path)) << r["policy"] << " has no range " << path;
    }
    EXPECT_GT(by_path["step"]["dram_bytes"].get<double>(), 0) << r["policy"];
    EXPECT_GT(by_path["step"]["gpu_time_ns"].get<double>(), 0) << r["policy"];
    if (r["policy"] == "amp-bf16") {
      EXPECT_GT(by_path["step/backward"]["tensor_instructions"].get<double>(), 0)
          << "autocast's bf16 GEMMs run on the Tensor Cores";
    }
  }
}

TEST(CliTrainBackend, EvalOnCudaRunsTheUsersInputsOnTheDeviceOrStopsWithStatus3) {
  const std::string inputs = temp_path("eval-dot.json");
  {
    std::FILE* f = std::fopen(inputs.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"a": [1, 2, 3], "b": [0.5, 0.25, 0.125]})", f);
    std::fclose(f);
  }
  const Outcome run = ampbench("eval --op dot --backend all --json --inputs " + inputs);
  const Outcome cuda = ampbench("eval --op dot --backend cuda --inputs " + inputs);
  std::remove(inputs.c_str());
  if (!device_available()) {
    // cuda stops before any work; all runs the CPU alone and says why.
    EXPECT_EQ(cuda.status, 3) << cuda.err;
    EXPECT_EQ(cuda.out, "");
    EXPECT_EQ(cuda.err.find("ampbench eval: --backend cuda: "), 0u) << cuda.err;
    ASSERT_EQ(run.status, 0) << run.err;
    const auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["output"], "0x1.6p+0");
    EXPECT_FALSE(j.contains("cuda"));
    EXPECT_FALSE(j["cuda_unavailable"].get<std::string>().empty());
    return;
  }
  ASSERT_EQ(cuda.status, 0) << cuda.err;
  ASSERT_EQ(run.status, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  // 1 * 0.5 + 2 * 0.25 + 3 * 0.125 = 1.375, exact in fp32 on both backends.
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["output"], "0x1.6p+0");
  EXPECT_EQ(j["cuda"]["output"], "0x1.6p+0");
  EXPECT_EQ(j["cuda"]["ulp_error"], 0);
  EXPECT_TRUE(j["cuda"]["ran"]["device"].contains("name"));
}

TEST(CliTrainBackend, ShortRunOnTheGpuTracksTheReference) {
  if (!device_available()) GTEST_SKIP() << "no usable CUDA device here";
  const std::string json = temp_path("train-cuda.json");
  const Outcome run = ampbench(
      "train --backend cuda --steps 5 --batch 32 --eval 128 --policy fp32,tf32,amp-fp16,amp-bf16 "
      "--json " +
      json);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("policies on "), std::string::npos) << run.out;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["backend"], "cuda");
  EXPECT_TRUE(record["device"].contains("name")) << record["device"].dump();
  ASSERT_EQ(record["runs"].size(), 4u);
  for (const auto& r : record["runs"]) {
    EXPECT_TRUE(r["pass"].get<bool>()) << r["policy"] << ": " << r["verdict"];
    // fp32 on the GPU sums in another order than the reference, but within binary32's error.
    if (r["policy"] == "fp32") {
      for (const auto& s : r["steps"]) {
        EXPECT_LT(s["loss_rel_error"].get<double>(), 1e-5) << "step " << s["step"];
      }
    }
  }
}

TEST(CliTrainBackend, TheTransformerTrainsOnTheGpu) {
  if (!device_available()) GTEST_SKIP() << "no usable CUDA device here";
  const std::string json = temp_path("train-cuda-transformer.json");
  const Outcome run = ampbench(
      "train --backend cuda --model transformer --steps 3 --batch 8 --eval 32 "
      "--policy fp32,amp-fp16,amp-bf16 --json " +
      json);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["backend"], "cuda");
  ASSERT_EQ(record["runs"].size(), 3u);
  for (const auto& r : record["runs"]) {
    EXPECT_TRUE(r["pass"].get<bool>()) << r["policy"] << ": " << r["verdict"];
  }
}

}  // namespace
