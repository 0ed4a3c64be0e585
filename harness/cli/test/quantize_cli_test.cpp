// End-to-end tests of `ampbench quantize`: the real binary on small tensors whose scales and
// elements are worked out by hand from the recipes' definitions (OCP MX v1.0 (its conversion of a
// block), Transformer Engine's DelayedScaling), and every kind of bad input, each with status 2 and
// a message naming it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;

// A tensor file of this process, removed when it ends.
std::string write_tensor(const std::string& name, const std::string& json) {
  return ampbench::cli::test::temp_file("quantize-" + name + ".json", json);
}

// A row of 32: the given values, then zeros.
std::string row32(const std::string& head, int count) {
  std::string text = "[" + head;
  for (int i = count; i < 32; ++i) text += ",0";
  return text + "]";
}

nlohmann::json run_json(const std::string& args) {
  const Outcome run = ampbench("quantize " + args + " --json");
  EXPECT_EQ(run.status, 0) << args << ": " << run.err;
  return run.status == 0 ? nlohmann::json::parse(run.out) : nlohmann::json::object();
}

TEST(QuantizeCli, Mxfp4ScaleAndElementsByHand) {
  // amax 6: X = 2^(floor(log2 6) - 2) = 1 (E8M0 0x7f); 2.5 is a tie (to 2), 0.25 one to 0.
  const std::string file = write_tensor("mxfp4", "[" + row32("6,-0.5,2.5,0.25", 4) + "]");
  const nlohmann::json q = run_json("--recipe mxfp4 --inputs " + file);
  ASSERT_EQ(q["tiles"].size(), 1u);
  EXPECT_EQ(q["tiles"][0]["scale_bits"], "0x7f");
  EXPECT_EQ(q["tiles"][0]["decode_scale"], "0x1p+0");
  EXPECT_EQ(q["element"], "e2m1");
  EXPECT_EQ(q["scale_format"], "ue8m0");
  EXPECT_EQ(q["elements"][0]["bits"], "0x7");
  EXPECT_EQ(q["elements"][1]["bits"], "0x9");
  EXPECT_EQ(q["elements"][2]["value"], "0x1p+1");
  EXPECT_EQ(q["elements"][2]["error"], "-0x1p-1");
  EXPECT_EQ(q["elements"][3]["event"], "flush_to_zero");
  EXPECT_EQ(q["events"]["flushed"], 1);
  EXPECT_EQ(q["events"]["saturated"], 0);
}

TEST(QuantizeCli, Mxfp8SaturatesWhatTheFloorScaleLeavesAbove448) {
  // amax 1000: X = 2^(9 - 8) = 2; 1000 / 2 = 500 > 448.
  const std::string file = write_tensor("mxfp8", "[" + row32("1000,1", 2) + "]");
  const nlohmann::json q = run_json("--recipe mxfp8 --inputs " + file);
  EXPECT_EQ(q["tiles"][0]["scale_bits"], "0x80");
  EXPECT_EQ(q["elements"][0]["dequantized"], "0x1.cp+9");  // 896
  EXPECT_EQ(q["elements"][0]["event"], "saturation");
  EXPECT_EQ(q["events"]["saturated"], 1);
  const nlohmann::json e5m2 = run_json("--recipe mxfp8 --element e5m2 --inputs " + file);
  EXPECT_EQ(e5m2["element"], "e5m2");
  EXPECT_EQ(e5m2["tiles"][0]["scale_bits"], "0x79");  // 2^(9 - 15) = 2^-6: 127 - 6 = 0x79
}

TEST(QuantizeCli, DelayedScalingFromAHistoryAndTheNextScale) {
  const std::string file = write_tensor("delayed", "[[7, -3.5, 1, 0]]");
  // Scale 128 given: 7 * 128 = 896 saturates; the next scale is 448 / 7 = 64.
  const nlohmann::json given = run_json("--recipe fp8-delayed --scale 128 --inputs " + file);
  EXPECT_EQ(given["tiles"][0]["scale"], "0x1p+7");
  EXPECT_EQ(given["tiles"][0]["scale_bits"], "0x43000000");
  EXPECT_EQ(given["elements"][0]["dequantized"], "0x1.cp+1");  // 448 / 128 = 3.5
  EXPECT_EQ(given["events"]["saturated"], 1);
  EXPECT_EQ(given["next_scale"], "0x1p+6");
  // A window of 2 over amaxes 2, 4: scale 448 / 4 = 112; then 4 and this tensor's 7: 64.
  const nlohmann::json history =
      run_json("--recipe fp8-delayed --amax-history 2,4 --amax-history-len 2 --inputs " + file);
  EXPECT_EQ(history["tiles"][0]["scale"], "0x1.cp+6");
  EXPECT_EQ(history["next_scale"], "0x1p+6");
  // Without a history the first step is current scaling, and the output says so.
  const Outcome first = ampbench("quantize --recipe fp8-delayed --inputs " + file);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.out.find("this first step uses current scaling"), std::string::npos);
  EXPECT_NE(first.out.find("0x1p+6"), std::string::npos);
  // HYBRID: gradients in e5m2.
  EXPECT_EQ(run_json("--recipe fp8-current --role dy --inputs " + file)["element"], "e5m2");
  EXPECT_EQ(
      run_json("--recipe fp8-current --role dy --fp8-format e4m3 --inputs " + file)["element"],
      "e4m3");
}

TEST(QuantizeCli, BlockShapesFollowTheRole) {
  const nlohmann::json w = run_json("--recipe fp8-block --role w --shape 128x256");
  EXPECT_EQ(w["block"], nlohmann::json::array({128, 128}));
  EXPECT_EQ(w["tiles"].size(), 2u);
  const nlohmann::json x = run_json("--recipe fp8-block --shape 2x128");
  EXPECT_EQ(x["block"], nlohmann::json::array({1, 128}));
  EXPECT_EQ(x["tiles"].size(), 2u);
  const nlohmann::json nv = run_json("--recipe nvfp4 --role w --shape 16x32");
  EXPECT_EQ(nv["block"], nlohmann::json::array({16, 16}));
  EXPECT_EQ(nv["scale_format"], "ue4m3 blocks, fp32 tensor");
  EXPECT_EQ(run_json("--recipe nvfp4 --role dy --shape 1x16")["mode"], "srp");
}

TEST(QuantizeCli, BadInputIsStatus2NamingIt) {
  const std::string three = write_tensor("three", "[[[1]]]");
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"", "--recipe is required"},
      {"--recipe fp9", "--recipe: unknown recipe 'fp9' (known: fp8-delayed"},
      {"--recipe mxfp8 --role z", "--role: unknown role 'z'"},
      {"--recipe mxfp8 --shape 4x48",
       "--shape 4x48: a block of 32 columns does not divide the tensor's 48 columns"},
      {"--recipe fp8-block --role w --shape 64x128",
       "a block of 128 rows does not divide the tensor's 64 rows"},
      {"--recipe fp8-delayed --scale 0.1", "--scale 0.1: fp32 cannot hold this scale exactly"},
      {"--recipe fp8-delayed --scale 1e39", "--scale 1e39: fp32 cannot hold this scale"},
      {"--recipe fp8-delayed --amax-history 1,-2", "--amax-history: '-2' is not a non-negative"},
      {"--recipe mxfp8 --amax-history 1", "go with --recipe fp8-delayed"},
      {"--recipe mxfp6 --element e5m2", "--element e5m2: mxfp6 takes e3m2 or e2m3"},
      {"--recipe nvfp4 --element e2m1", "--element goes with the MX recipes"},
      {"--recipe mxfp4 --mode nearest", "--mode: unknown rounding mode 'nearest'"},
      {"--recipe mxfp4 --shape 0x32", "--shape 0x32: expected COLS or ROWSxCOLS"},
      {"--recipe mxfp4 --dist bogus", "--dist:"},
      {"--recipe mxfp4 --inputs /nonexistent/t.json", "--inputs"},
      {"--recipe mxfp4 --inputs " + three, "has more than 2 dimensions"},
      {"--recipe mxfp4 --inputs " + three + " --shape 1x32", "leave out --dist and --shape"},
      {"--recipe fp8-delayed --margin 200", "--margin"},
      // A recipe's own option with another recipe is refused, not ignored (even at its default).
      {"--recipe mxfp4 --margin 0",
       "--margin goes with --recipe fp8-delayed; mxfp4 does not use it"},
      {"--recipe fp8-current --amax-history-len 16",
       "--amax-history-len goes with --recipe fp8-delayed; fp8-current does not use it"},
      {"--recipe nvfp4 --amax-compute-algo most_recent",
       "--amax-compute-algo goes with --recipe fp8-delayed; nvfp4 does not use it"},
      {"--recipe mxfp8 --scales pow2",
       "--scales goes with --recipe fp8-current or fp8-block; mxfp8 does not use it"},
      {"--recipe fp8-block --fp8-format e4m3",
       "--fp8-format goes with --recipe fp8-delayed or fp8-current; fp8-block does not use it"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("quantize " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

TEST(QuantizeCli, UserRecipeFromToml) {
  const std::string path = ampbench::cli::test::temp_file(
      "quantize-recipe.toml",
      "name = \"wide-block\"\nbase = \"fp8-block\"\n[w]\nblock = 64\nscale = \"current\"\n");
  const nlohmann::json w = run_json("--recipe " + path + " --role w --shape 64x128");
  EXPECT_EQ(w["recipe"], "wide-block");
  EXPECT_EQ(w["block"], nlohmann::json::array({64, 64}));
  EXPECT_EQ(w["tiles"].size(), 2u);
  // fp32 scales (current), not fp8-block's power-of-two ones: 448 / amax is not a power of two.
  EXPECT_NE(w["tiles"][0]["scale"].get<std::string>().find('.'), std::string::npos);
  // A user recipe takes its base's options.
  EXPECT_EQ(run_json("--recipe " + path + " --role x --shape 1x128 --scales fp32")["block"],
            nlohmann::json::array({1, 128}));
  // --print-recipe writes a file --recipe reads back.
  const Outcome printed = ampbench("quantize --recipe nvfp4 --print-recipe");
  ASSERT_EQ(printed.status, 0) << printed.err;
  const std::string copy =
      ampbench::cli::test::temp_file("quantize-recipe-nvfp4.toml", printed.out);
  EXPECT_NE(printed.out.find("name = \"my-nvfp4\""), std::string::npos);
  EXPECT_EQ(run_json("--recipe " + copy + " --role dy --shape 1x16")["mode"], "srp");
  // A bad file: status 2, file, line and column.
  ampbench::cli::test::temp_file("quantize-recipe.toml",
                                 "name = \"r\"\nbase = \"fp8-block\"\n[x]\nblock = 0\n");
  const Outcome bad = ampbench("quantize --recipe " + path);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find(path + ":4:9: key 'x.block': 0 is not a positive block size"),
            std::string::npos)
      << bad.err;
  EXPECT_EQ(bad.out, "");
}

TEST(QuantizeCli, HadamardOnTheWeightGradientInputs) {
  // A row 4 e_0 then e_1: (e_k D H / 4) * 4 = d_k H[k][*]; TE's signs d_0 = d_1 = +1, so the first
  // run becomes all ones and the second alternates 1, -1.
  std::string row = "[4";
  for (int i = 1; i < 16; ++i) row += ",0";
  row += ",0,4";
  for (int i = 2; i < 16; ++i) row += ",0";
  row += "]";
  const std::string file = write_tensor("hadamard", "[" + row + "]");
  const nlohmann::json q = run_json("--recipe nvfp4 --role x --gemm wgrad --inputs " + file);
  EXPECT_EQ(q["gemm"], "wgrad");
  EXPECT_EQ(q["hadamard"]["applied"], true);
  EXPECT_EQ(q["hadamard"]["signs"], "0xd7e8");
  EXPECT_EQ(q["hadamard"]["seed"], nullptr);
  EXPECT_EQ(q["elements"][0]["original"], "0x1p+2");
  EXPECT_EQ(q["elements"][1]["original"], "0x0p+0");
  for (int j = 0; j < 16; ++j) EXPECT_EQ(q["elements"][j]["input"], "0x1p+0") << j;
  EXPECT_EQ(q["elements"][16]["input"], "0x1p+0");
  EXPECT_EQ(q["elements"][17]["input"], "-0x1p+0");
  // dy too, with a seed; the forward roles are not transformed, and say where it applies.
  const nlohmann::json dy =
      run_json("--recipe nvfp4 --role dy --gemm wgrad --hadamard-seed 7 --inputs " + file);
  EXPECT_EQ(dy["hadamard"]["seed"], 7);
  EXPECT_EQ(dy["mode"], "srp");
  const nlohmann::json x = run_json("--recipe nvfp4 --role x --inputs " + file);
  EXPECT_FALSE(x.contains("hadamard"));
  EXPECT_NE(x["notes"].dump().find("goes with the weight-gradient GEMM's inputs"),
            std::string::npos);
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--recipe nvfp4 --role w --gemm wgrad", "--gemm wgrad: w is not an operand of it"},
      {"--recipe nvfp4 --role x --gemm dgrad", "--gemm dgrad: x is not an operand of it"},
      {"--recipe nvfp4 --gemm bwd", "--gemm: unknown GEMM 'bwd'"},
      {"--recipe mxfp8 --gemm wgrad --hadamard-seed 3", "--hadamard-seed goes with the Hadamard"},
      {"--recipe nvfp4 --role x --hadamard-seed 3", "--hadamard-seed goes with the Hadamard"},
      {"--recipe nvfp4 --gemm wgrad --shape 16x8",
       "--shape 16x8: the 16-wide Hadamard transform does not divide the tensor's 8 columns"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("quantize " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
  }
}

}  // namespace
