// End-to-end tests of `ampbench profile` on the CPU backend: the table, the record, the Chrome
// trace, and every way the command line can be wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;

TEST(ProfileCli, TimesEveryPhaseOfEveryPolicy) {
  const std::string json = temp_path("run.json");
  const std::string trace = temp_path("trace.json");
  const Outcome run =
      ampbench("profile --steps 2 --warmup 1 --batch 8 --json " + json + " --trace " + trace);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("1 warm-up and 2 timed steps of 8 samples"), std::string::npos) << run.out;
  for (const char* policy : {"\nfp32 ", "\namp-fp16 ", "\namp-bf16 "}) {
    EXPECT_NE(run.out.find(policy), std::string::npos) << policy << run.out;
  }
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["schema"], "ampbench.profile-run/1");
  EXPECT_EQ(record["backend"], "cpu");
  ASSERT_EQ(record["runs"].size(), 3u);
  EXPECT_EQ(record["runs"][0]["vs_fp32"], 1.0);
  for (const auto& r : record["runs"]) {
    EXPECT_GT(r["step_ms"]["median"].get<double>(), 0.0);
    EXPECT_LE(r["step_ms"]["min"].get<double>(), r["step_ms"]["median"].get<double>());
    // Forward and backward are most of a step; every phase is there.
    EXPECT_GT(
        r["phase_share"]["forward"].get<double>() + r["phase_share"]["backward"].get<double>(),
        0.5);
    EXPECT_EQ(r["phase_share"].size(), 7u);
    EXPECT_GT(r["phase_share"]["loss"].get<double>(), 0.0);
    EXPECT_EQ(r["attribution"]["schema"], "ampbench.profile/1");
    // Every op of the mlp is a range of its own: three linear layers forward and backward per
    // step, and the loss.
    std::map<std::string, std::size_t> instances;
    for (const auto& range : r["attribution"]["ranges"]) {
      instances[range["name"].get<std::string>()] = range["instances"].get<std::size_t>();
    }
    EXPECT_EQ(instances["linear"], instances["linear_backward"]) << r["policy"];
    EXPECT_GE(instances["linear"], 2u * 2) << r["policy"];
    EXPECT_EQ(instances["cross_entropy"], 2u) << r["policy"];
    EXPECT_EQ(instances["layer_norm"], instances["layer_norm_backward"]) << r["policy"];
  }
  // The trace: a named range per policy, and two "step" ranges in each.
  const auto events = nlohmann::json::parse(slurp(trace))["traceEvents"];
  std::remove(trace.c_str());
  std::set<std::string> policies;
  std::size_t steps = 0;
  for (const auto& e : events) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    if (name.starts_with("policy ")) policies.insert(name);
    steps += name == "step";
  }
  EXPECT_EQ(policies, (std::set<std::string>{"policy fp32", "policy amp-fp16", "policy amp-bf16"}));
  EXPECT_EQ(steps, 6u);
}

struct BadInput {
  const char* args;
  const char* message;
};

TEST(ProfileCli, EveryBadInputIsNamedBeforeAnyWork) {
  const BadInput cases[] = {
      {"profile --backend cuda --model transformer --policy amp-fp16,bf16",
       "ampbench profile: --backend cuda: policy bf16: "},
      {"profile --backend cuda --policy bf16", "ampbench profile: --backend cuda: policy bf16: "},
      {"profile --backend tpu",
       "ampbench profile: --backend: unknown backend 'tpu' (available: cpu, cuda)"},
      {"profile --model resnet", "ampbench profile: --model: unknown model 'resnet'"},
      {"profile --policy fp12", "ampbench profile: --policy: "},
      {"profile --steps 0", "ampbench profile: --steps: 0 is not in [1, 100000]"},
      {"profile --steps -1", "ampbench profile: --steps: -1 is not in [1, 100000]"},
      {"profile --warmup -1", "ampbench profile: --warmup: -1 is not in [0, 100000]"},
      {"profile --warmup 100001", "ampbench profile: --warmup: 100001 is not in [0, 100000]"},
      {"profile --warmup 18446744073709551615",
       "ampbench profile: --warmup: 18446744073709551615 is not in [0, 100000]"},
      {"profile --batch 0", "ampbench profile: --batch: 0 is not in [1, 65536]"},
      {"profile --batch 100000000", "ampbench profile: --batch: 100000000 is not in [1, 65536]"},
      {"profile --batch 5000",
       "ampbench profile: --batch: 5000 is more than the 4608 samples of the data set"},
      {"profile --model cnn --batch 2561",
       "ampbench profile: --batch: 2561 is more than the 2560 samples of the data set"},
      {"profile --seed 18446744073709551616",
       "ampbench profile: --seed: 18446744073709551616 is not in [0, 18446744073709551615]"},
      {"profile --trace ''",
       "ampbench profile: --trace: the value is empty (leave the option out for its default)"},
      {"profile --json ''",
       "ampbench profile: --json: the value is empty (leave the option out for its default)"},
      {"profile --hardware-metrics",
       "ampbench profile: --hardware-metrics: needs --backend cuda (the CPU backend has no "
       "hardware counters)"},
      {"profile --json /nonexistent-ampbench-dir/p.json",
       "ampbench profile: --json /nonexistent-ampbench-dir/p.json: directory "
       "/nonexistent-ampbench-dir does not exist"},
      {"profile --trace /nonexistent-ampbench-dir/t.json",
       "ampbench profile: --trace /nonexistent-ampbench-dir/t.json: directory "
       "/nonexistent-ampbench-dir does not exist"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

}  // namespace
