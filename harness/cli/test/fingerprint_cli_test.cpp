// End-to-end tests of `ampbench fingerprint`: the CPU backend's table and record, a mismatch
// (exit 1), bad command lines (exit 2), and --backend cuda without a usable GPU or without a CUDA
// build (exit 3, with the reason).
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;
using ampbench::cli::test::temp_path;
using ampbench::cli::test::tsv_rows;

TEST(FingerprintCli, CpuPresetMatchesItselfRowByRow) {
  const Outcome run = ampbench("fingerprint --backend cpu --arch ampere --format bf16");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("# preset: ampere-bf16"), std::string::npos) << run.out;
  const auto rows = tsv_rows(run.out, true);
  ASSERT_EQ(rows.size(), 11u) << run.out;  // header and ten parameters
  EXPECT_EQ(rows[0], (std::vector<std::string>{"parameter", "inferred", "preset", "match"}));
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 4u);
    EXPECT_EQ(rows[i][1], rows[i][2]) << rows[i][0];
    EXPECT_EQ(rows[i][3], "yes") << rows[i][0];
  }
  EXPECT_EQ(rows[4], (std::vector<std::string>{"fraction_bits", "24", "24", "yes"}));
  EXPECT_EQ(rows[8], (std::vector<std::string>{"fused_k", "8", "8", "yes"}));
  EXPECT_EQ(rows[10], (std::vector<std::string>{"zero_sign_kept", "no", "no", "yes"}));
}

// An emulated Ampere against Hopper's preset: F 24 against 25, 8 products per step against 16.
TEST(FingerprintCli, MismatchExitsWith1AndNamesTheParameters) {
  const std::string json = temp_path("fingerprint.json");
  const Outcome run =
      ampbench("fingerprint --backend cpu --preset ampere-fp16 --arch hopper --json " + json);
  ASSERT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.out.find("fraction_bits\t24\t25\tNO"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fused_k\t8\t16\tNO"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("MISMATCH"), std::string::npos) << run.out;
  const auto record = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  EXPECT_EQ(record["schema"], "ampbench.fingerprint/1");
  EXPECT_EQ(record["preset"], "hopper-fp16");
  EXPECT_EQ(record["match"], false);
  ASSERT_EQ(record["parameters"].size(), 10u);
  ASSERT_EQ(record["evidence"].size(), 10u);
  const auto& f = record["evidence"][3];
  EXPECT_EQ(f["parameter"], "fraction_bits");
  EXPECT_EQ(f["verdict"], "F = 24");
  EXPECT_EQ(f["probes"].size(), f["outputs"].size());
}

TEST(FingerprintCli, BadCommandLinesExitWith2) {
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"--backend cpu --arch ampere --format fp12", "--format: unknown format 'fp12'"},
      {"--backend cpu --arch ampere --accumulator fp64", "--accumulator: 'fp64'"},
      {"--backend cpu --preset ampere-fp64", "--preset: unknown preset 'ampere-fp64'"},
      {"--backend cpu", "give --preset or --arch"},
      {"--backend tpu --arch ampere", "--backend: unknown backend 'tpu'"},
      {"--backend cpu --arch ampere --format fp8", "no preset for ampere with e4m3 inputs"},
      {"--backend cpu --arch pascal", "no preset for pascal"},
      {"--backend cuda --arch ampere --preset ampere-fp16", "give --arch or --preset, not both"},
      {"--backend cpu --arch ampere --json /nonexistent/dir/f.json", "--json /nonexistent"},
      {"--backend cuda --instruction hmma", "--instruction: unknown instruction 'hmma'"},
      {"--backend cpu --arch hopper --instruction wgmma", "--instruction wgmma: the cpu backend"},
  };
  for (const Case& c : cases) {
    const Outcome run = ampbench("fingerprint " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_TRUE(run.out.empty()) << c.args;
  }
}

// Without a CUDA build, or without a usable device, --backend cuda stops before any work with
// exit 3 and the reason (the CUDA error's text where there is one). On a machine with a GPU the
// command runs instead: the gpu tests cover that.
TEST(FingerprintCli, CudaWithoutAUsableGpuExitsWith3) {
  const Outcome run = ampbench("fingerprint --backend cuda --format fp16");
  if (run.status == 0 || run.status == 1) GTEST_SKIP() << "a GPU ran the fingerprint";
  EXPECT_EQ(run.status, 3) << run.err;
  EXPECT_TRUE(run.err.find("this build has no CUDA backend") != std::string::npos ||
              run.err.find("no usable CUDA device: ") != std::string::npos)
      << run.err;
  EXPECT_TRUE(run.out.empty());
}

}  // namespace
