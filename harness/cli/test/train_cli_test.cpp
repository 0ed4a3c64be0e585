// End-to-end tests of `ampbench train`: a short run and its record, user data from CSV, and every
// way the command line can be wrong (exit 2, a message naming the option, nothing run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

TEST(TrainCli, ShortRunReportsEveryPolicyAndWritesItsRecord) {
  const std::string json = temp_path("run.json");
  const Outcome run = ampbench(
      "train --steps 3 --batch 16 --eval 64 --policy fp32,amp-fp16 "
      "--print-every 1 --json " +
      json);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("fp32 (gradients in fp32, scaler off)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("amp-fp16 (gradients in fp16, scaler on)"), std::string::npos);
  EXPECT_NE(run.out.find("tracks the reference"), std::string::npos);
  EXPECT_NE(run.err.find("step 3 of 3"), std::string::npos) << run.err;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["schema"], "ampbench.train/1");
  EXPECT_EQ(record["config"]["steps"], 3);
  EXPECT_EQ(record["runs"].size(), 2u);
  EXPECT_EQ(record["runs"][1]["policy"], "amp-fp16");
  EXPECT_EQ(record["runs"][1]["steps"][0]["scale"], 65536.0);
  EXPECT_EQ(record["reference"]["steps"].size(), 3u);
  EXPECT_EQ(record["eval_samples"], 64);
}

// An initial scale of 2^30 overflows pure fp16's gradients: the first steps are skipped while the
// scale backs off, and the run reports them.
TEST(TrainCli, ReportsTheStepsTheScalerSkipped) {
  const std::string json = temp_path("skipped.json");
  const Outcome run = ampbench(
      "train --policy fp16 --init-scale 1073741824 --steps 3 --batch 16 --eval 64 --json " + json);
  EXPECT_NE(run.status, 2) << run.err;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["runs"][0]["skipped_steps"], nlohmann::json::parse("[0, 1, 2]"));
  EXPECT_EQ(record["runs"][0]["steps"][1]["scale"], 536870912.0);
  EXPECT_NE(run.out.find("3 skipped step(s)"), std::string::npos) << run.out;
}

TEST(TrainCli, TrainsOnACsvFile) {
  const std::string csv = temp_path("data.csv");
  {
    std::ofstream file(csv);
    file << "x0,x1,label\n";
    for (int i = 0; i < 80; ++i) {
      const int label = i % 2;
      file << (label ? 1.5 : -1.5) + 0.01 * i << "," << 0.25 * (i % 5) << "," << label << "\n";
    }
  }
  const Outcome run = ampbench("train --steps 2 --batch 8 --eval 16 --policy bf16 --data " + csv);
  std::remove(csv.c_str());
  EXPECT_NE(run.status, 2) << run.err;
  EXPECT_NE(run.out.find("(64 training, 16 evaluation samples)"), std::string::npos) << run.out;
}

struct BadInput {
  const char* args;
  const char* message;
};

TEST(TrainCli, EveryBadInputIsNamedBeforeAnyWork) {
  const std::string missing_dir = "/nonexistent-ampbench-dir/out.json";
  const BadInput cases[] = {
      {"train --model resnet",
       "ampbench train: --model: unknown model 'resnet' (available: mlp, cnn, transformer)"},
      {"train --policy fp8", "ampbench train: --policy: "},
      {"train --reference-bits 32", "ampbench train: --reference-bits: 32 is outside [64, 4096]"},
      {"train --steps 0", "ampbench train: --steps, --batch and --accumulate must be positive"},
      {"train --accumulate 0",
       "ampbench train: --steps, --batch and --accumulate must be positive"},
      {"train --scaler maybe", "ampbench train: --scaler: 'maybe' is not auto, on or off"},
      {"train --growth-interval 0", "ampbench train: --growth-interval: must be >= 1, got 0"},
      {"train --init-scale 4 --min-scale 8",
       "ampbench train: --min-scale: must be finite and in [0, init_scale = 4], got 8"},
      {"train --optimizer lamb", "ampbench train: --optimizer: 'lamb' is not adamw or sgd"},
      {"train --lr -1", "ampbench train: --lr: lr must be >= 0, got -1"},
      {"train --clip-norm -2", "ampbench train: --clip-norm: -2 is not a finite value >= 0"},
      {"train --targets y.npy", "ampbench train: --targets goes with --data FILE.npy"},
      {"train --data x.npy", "ampbench train: --data x.npy: a .npy of inputs needs --targets"},
      {"train --data /nonexistent.csv", "ampbench train: --data: "},
      {"train --eval 100000", "ampbench train: --eval 100000: the data set has only 4608 samples"},
      {"train --backend tpu",
       "ampbench train: --backend: unknown backend 'tpu' (available: cpu, cuda, all)"},
      {"train --backend cuda --model transformer --policy fp32,bf16",
       "ampbench train: --backend cuda: policy bf16: linear: gemm (bf16 inputs, bf16 accumulation"},
      {"train --backend cuda --policy fp32,bf16",
       "ampbench train: --backend cuda: policy bf16: linear: gemm (bf16 inputs, bf16 accumulation"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
  const Outcome json = ampbench("train --json " + missing_dir);
  EXPECT_EQ(json.status, 2);
  EXPECT_NE(json.err.find("ampbench train: --json " + missing_dir +
                          ": directory /nonexistent-ampbench-dir does not exist"),
            std::string::npos)
      << json.err;
}

}  // namespace
