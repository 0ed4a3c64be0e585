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
using ampbench::cli::test::ampbench_with_record;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::temp_path;

TEST(TrainCli, ShortRunReportsEveryPolicyAndWritesItsRecord) {
  const auto [run, text] = ampbench_with_record(
      "train --steps 3 --batch 16 --eval 64 --policy fp32,amp-fp16 --print-every 1", "run.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("fp32 (gradients in fp32, scaler off)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("amp-fp16 (gradients in fp16, scaler on)"), std::string::npos);
  EXPECT_NE(run.out.find("tracks the reference"), std::string::npos);
  EXPECT_NE(run.err.find("step 3 of 3"), std::string::npos) << run.err;
  const auto record = nlohmann::json::parse(text);
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
// Recipes beside a policy: built-in names in --policy, a user recipe file in --recipe; each
// run's scaled tensors in the table and in the record.
TEST(TrainCli, TrainsRecipesBesideThePolicies) {
  const std::string recipe = temp_path("my-fp8.toml");
  {
    std::ofstream f(recipe);
    f << "name = \"my-fp8\"\nbase = \"fp8-current\"\npromote_interval = 32\n";
  }
  const auto [run, text] = ampbench_with_record(
      "train --steps 2 --batch 16 --eval 64 --print-every 1 --policy amp-bf16,fp8-delayed,nvfp4 "
      "--recipe " +
          recipe,
      "recipes.json");
  std::remove(recipe.c_str());
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(
      run.out.find(
          "recipe fp8-delayed: the linear and convolution layers' GEMMs on the hopper model, the "
          "rest as amp-bf16"),
      std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("fp8-delayed: scaled tensors over 2 steps (GEMMs on the hopper model)"),
            std::string::npos);
  EXPECT_NE(run.out.find("nvfp4: scaled tensors over 2 steps (GEMMs on the blackwell model)"),
            std::string::npos);
  EXPECT_NE(run.out.find("my-fp8 (gradients in bf16, scaler off)"), std::string::npos);
  const auto record = nlohmann::json::parse(text);
  EXPECT_EQ(record["config"]["policies"], nlohmann::json::array({"amp-bf16"}));
  EXPECT_EQ(record["config"]["recipes"], nlohmann::json::array({"fp8-delayed", "nvfp4", "my-fp8"}));
  ASSERT_EQ(record["runs"].size(), 4u);
  EXPECT_FALSE(record["runs"][0].contains("recipe_arch"));
  const auto& delayed = record["runs"][1];
  EXPECT_EQ(delayed["policy"], "fp8-delayed");
  EXPECT_EQ(delayed["recipe_arch"], "hopper");
  const auto& first = delayed["steps"][0]["scaled"];
  ASSERT_EQ(first.size(), 10u);
  EXPECT_EQ(first[0]["parameter"], "w1");
  EXPECT_EQ(first[0]["gemm"], "fprop");
  EXPECT_EQ(first[0]["role"], "x");
  EXPECT_EQ(first[0]["scale"], 1.0);  // TE's initial scale
  EXPECT_EQ(first[0]["elements"], 16 * 32);
  EXPECT_EQ(record["runs"][2]["recipe_arch"], "blackwell");
  EXPECT_EQ(record["runs"][3]["policy"], "my-fp8");
}

// --keep-bf16 names the recipe's run by the layers it keeps; --sensitivity adds one run per other
// layer and ranks them.
TEST(TrainCli, KeepsLayersInBf16AndRanksTheRest) {
  const auto [run, text] = ampbench_with_record(
      "train --model transformer --steps 2 --batch 8 --eval 64 --policy nvfp4 --keep-bf16 head.w "
      "--sensitivity",
      "sensitivity.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("recipe nvfp4: the linear and convolution layers' GEMMs (but head.w, "
                         "kept in bf16) on the blackwell model"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("nvfp4: layers kept in bf16 one at a time, by the share of the "
                         "loss error they remove"),
            std::string::npos)
      << run.out;
  const auto record = nlohmann::json::parse(text);
  ASSERT_EQ(record["runs"].size(), 8u);  // nvfp4 with head.w kept, and with each of 7 others
  EXPECT_EQ(record["runs"][0]["policy"], "nvfp4+bf16[head.w]");
  EXPECT_EQ(record["runs"][1]["policy"], "nvfp4+bf16[head.w,embed.w]");
  EXPECT_EQ(record["runs"][1]["kept_bf16"], nlohmann::json::array({"head.w", "embed.w"}));
  ASSERT_EQ(record["sensitivity"].size(), 1u);
  EXPECT_EQ(record["sensitivity"][0]["run"], "nvfp4+bf16[head.w]");
  EXPECT_EQ(record["sensitivity"][0]["layers"].size(), 7u);
}

// --sensitivity-seeds: the ranking over several seeds, each seed's share in the table and the
// record.
TEST(TrainCli, RanksTheLayersOverSeveralSeeds) {
  const auto [run, text] = ampbench_with_record(
      "train --steps 2 --batch 8 --eval 64 --policy mxfp4 --sensitivity --sensitivity-seeds 2 "
      "--seed 7",
      "sensitivity_seeds.json");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  for (const char* text_part :
       {"sensitivity over seeds 7 to 8: the recipes' runs repeated at each further seed",
        "removed at each seed", "the mean over seeds 7, 8", "2 steps (4 with the sensitivity"}) {
    EXPECT_NE(run.out.find(text_part), std::string::npos) << text_part << "\n" << run.out;
  }
  EXPECT_NE(run.err.find("step 4 of 4"), std::string::npos) << run.err;
  const auto record = nlohmann::json::parse(text);
  EXPECT_EQ(record["config"]["sensitivity_seeds"], 2);
  const auto& s = record["sensitivity"].at(0);
  EXPECT_EQ(s["seeds"], nlohmann::json::parse("[7, 8]"));
  EXPECT_EQ(s["mean_loss_error_by_seed"].size(), 2u);
  ASSERT_EQ(s["layers"].size(), 2u);
  for (const auto& layer : s["layers"]) EXPECT_EQ(layer["removed_by_seed"].size(), 2u);
}

TEST(TrainCli, ReportsTheStepsTheScalerSkipped) {
  const auto [run, text] = ampbench_with_record(
      "train --policy fp16 --init-scale 1073741824 --steps 3 --batch 16 --eval 64", "skipped.json");
  EXPECT_NE(run.status, 2) << run.err;
  const auto record = nlohmann::json::parse(text);
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

// The batch must fit the training split and the micro-batches of a step their memory; both are
// checked against the data, once it is read, before any step.
TEST(TrainCli, BatchAndAccumulationAreCheckedAgainstTheData) {
  const std::string csv = temp_path("small.csv");
  {
    std::ofstream file(csv);
    for (int i = 0; i < 80; ++i) file << 0.5 * i << "," << i % 2 << "\n";
  }
  const Outcome fits = ampbench("train --steps 1 --batch 64 --eval 16 --policy fp32 --data " + csv);
  EXPECT_NE(fits.status, 2) << fits.err;
  const Outcome over = ampbench("train --steps 1 --batch 65 --eval 16 --policy fp32 --data " + csv);
  std::remove(csv.c_str());
  EXPECT_EQ(over.status, 2);
  EXPECT_EQ(over.err,
            "ampbench train: --batch: 65 is more than the 64 samples of the training split (80 "
            "samples less --eval 16)\n");
  EXPECT_EQ(over.out, "");

  // 1025 samples of 600 features: 1024 micro-batches of 1024 samples take
  // 1024 * 1024 * 601 * 8 bytes = 4.7 GiB.
  const std::string wide = temp_path("wide.csv");
  {
    std::ofstream file(wide);
    for (int i = 0; i < 1025; ++i) {
      for (int j = 0; j < 600; ++j) file << (i + j) % 3 << ",";
      file << i % 2 << "\n";
    }
  }
  const Outcome memory = ampbench(
      "train --steps 1 --batch 1024 --accumulate 1024 --eval 1 --policy fp32 --data " + wide);
  std::remove(wide.c_str());
  EXPECT_EQ(memory.status, 2);
  EXPECT_EQ(memory.err,
            "ampbench train: --accumulate: the 1024 micro-batches of a step would take 4.7 GiB "
            "(1024 x 1024 samples x (600 values + 1 targets) x 8 bytes), more than the 4.0 GiB "
            "they may take\n");
  EXPECT_EQ(memory.out, "");
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
      {"train --reference-bits 32", "ampbench train: --reference-bits: 32 is not in [64, 4096]"},
      {"train --reference-bits 99999999999999999999",
       "ampbench train: --reference-bits: 99999999999999999999 is not in [64, 4096]"},
      // Counts are base-10 digits in their range: no sign, no wrap, no octal or hex, no overflow.
      {"train --steps 0", "ampbench train: --steps: 0 is not in [1, 100000]"},
      {"train --steps -1", "ampbench train: --steps: -1 is not in [1, 100000]"},
      {"train --steps 18446744073709551616",
       "ampbench train: --steps: 18446744073709551616 is not in [1, 100000]"},
      {"train --batch -1", "ampbench train: --batch: -1 is not in [1, 65536]"},
      {"train --batch 0", "ampbench train: --batch: 0 is not in [1, 65536]"},
      {"train --batch 100000000", "ampbench train: --batch: 100000000 is not in [1, 65536]"},
      {"train --batch 0x40", "ampbench train: --batch: '0x40' is not a base-10 integer"},
      {"train --batch 1e3", "ampbench train: --batch: '1e3' is not a base-10 integer"},
      {"train --batch 5000",
       "ampbench train: --batch: 5000 is more than the 4096 samples of the training split (4608 "
       "samples less --eval 512)"},
      {"train --accumulate 0", "ampbench train: --accumulate: 0 is not in [1, 1024]"},
      {"train --accumulate 100000000",
       "ampbench train: --accumulate: 100000000 is not in [1, 1024]"},
      {"train --seed -1", "ampbench train: --seed: -1 is not in [0, 18446744073709551615]"},
      {"train --seed 18446744073709551616",
       "ampbench train: --seed: 18446744073709551616 is not in [0, 18446744073709551615]"},
      {"train --seed 1180591620717411303424",
       "ampbench train: --seed: 1180591620717411303424 is not in [0, 18446744073709551615]"},
      {"train --eval 0", "ampbench train: --eval: 0 is not in [1, 16777216]"},
      {"train --eval 4600",
       "ampbench train: --batch: 64 is more than the 8 samples of the training split (4608 "
       "samples less --eval 4600)"},
      {"train --print-every 0", "ampbench train: --print-every: 0 is not in [1, 100000]"},
      {"train --print-every 500", "ampbench train: --print-every: 500 is more than the 200 steps"},
      {"train --steps 20 --print-every 21",
       "ampbench train: --print-every: 21 is more than the 20 steps"},
      {"train --scaler maybe", "ampbench train: --scaler: 'maybe' is not auto, on or off"},
      {"train --growth-interval 0",
       "ampbench train: --growth-interval: 0 is not in [1, 2147483647]"},
      {"train --init-scale 1e400",
       "ampbench train: --init-scale: 1e400 is beyond the range of a binary64 number"},
      {"train --init-scale 4 --min-scale 8",
       "ampbench train: --min-scale: must be finite and in [0, init_scale = 4], got 8"},
      {"train --optimizer lamb", "ampbench train: --optimizer: 'lamb' is not adamw or sgd"},
      {"train --lr -1", "ampbench train: --lr: -1 is not a finite number >= 0"},
      {"train --lr inf", "ampbench train: --lr: inf is not a finite number"},
      {"train --lr nan", "ampbench train: --lr: nan is not a finite number"},
      {"train --min-scale nan", "ampbench train: --min-scale: nan is not a finite number"},
      {"train --clip-norm -2", "ampbench train: --clip-norm: -2 is not a finite number >= 0"},
      // An empty value is not the default.
      {"train --json ''",
       "ampbench train: --json: the value is empty (leave the option out for its default)"},
      {"train --data ''",
       "ampbench train: --data: the value is empty (leave the option out for its default)"},
      {"train --policy ''",
       "ampbench train: --policy: the value is empty (leave the option out for its default)"},
      {"train --recipe ''",
       "ampbench train: --recipe: the value is empty (leave the option out for its default)"},
      {"train --recipe fp9", "ampbench train: --recipe unknown recipe 'fp9'"},
      {"train --recipe /nonexistent/r.toml", "ampbench train: --recipe"},
      {"train --arch hopper",
       "ampbench train: --arch hopper: goes with a recipe (--recipe, or a recipe in --policy)"},
      {"train --recipe mxfp6 --arch hopper", "ampbench train: --arch hopper: mxfp6 on hopper"},
      {"train --policy fp8-delayed --arch pascal",
       "ampbench train: --arch pascal: unknown architecture 'pascal'"},
      {"train --policy fp8-delayed --backend cuda --arch hopper",
       "ampbench train: --arch hopper: names the Tensor Core model the CPU emulation multiplies a "
       "recipe's GEMMs on; on --backend cuda they run on the device's cuBLASLt"},
      {"train --keep-bf16 w1",
       "ampbench train: --keep-bf16: goes with a recipe (--recipe, or a recipe in --policy)"},
      {"train --sensitivity",
       "ampbench train: --sensitivity: goes with a recipe (--recipe, or a recipe in --policy)"},
      {"train --policy nvfp4 --keep-bf16 w3",
       "ampbench train: --keep-bf16: 'w3' is not a linear or convolution layer of the mlp (its: "
       "w1, w2)"},
      {"train --policy nvfp4 --keep-bf16 w1,w1", "ampbench train: --keep-bf16: 'w1' appears twice"},
      {"train --policy nvfp4 --sensitivity-seeds 3",
       "ampbench train: --sensitivity-seeds: goes with --sensitivity"},
      {"train --policy nvfp4 --sensitivity --sensitivity-seeds 0",
       "ampbench train: --sensitivity-seeds: 0 is not in [1, 64]"},
      {"train --policy nvfp4 --sensitivity --seed 18446744073709551615 --sensitivity-seeds 2",
       "ampbench train: --sensitivity-seeds: the seeds 18446744073709551615 to "
       "18446744073709551615 + 1 go past 2^64 - 1"},
      {"train --policy nvfp4 --keep-bf16 w1,w2 --sensitivity",
       "ampbench train: --sensitivity: --keep-bf16 keeps every linear and convolution layer of the "
       "mlp"},
      {"train --targets y.npy", "ampbench train: --targets goes with --data FILE.npy"},
      {"train --data x.npy", "ampbench train: --data x.npy: a .npy of inputs needs --targets"},
      {"train --data /nonexistent.csv", "ampbench train: --data: "},
      {"train --eval 100000",
       "ampbench train: --eval: 100000 leaves nothing to train on: the data set has 4608 samples"},
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
