// End-to-end tests of the ampbench command line: each runs the real binary with arguments and
// standard input, and checks standard output, standard error and the exit status. Expected values
// come from the formats' published constants (IEEE 754-2019, OCP OFP8 1.0), not from our code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;

std::vector<std::vector<std::string>> rows(const std::string& tsv) {
  return ampbench::cli::test::tsv_rows(tsv);
}

TEST(Cli, VersionAndHelp) {
  const Outcome version = ampbench("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.out.find("ampbench 0."), std::string::npos) << version.out;
  const Outcome help = ampbench("help");
  EXPECT_EQ(help.status, 0);
  for (const char* command : {"formats", "round"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << help.out;
  }
}

TEST(Cli, UsageErrorsExitWithStatus2AndNameTheProblem) {
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"", "subcommand is required"},
      {"frobnicate", "unknown command 'frobnicate'"},
      {"formats --colour", "--colour"},
      {"round", "--to FORMAT is required"},
      {"round --to fp17", "unknown format 'fp17'"},
      {"round --to fp16 --mode nearest", "unknown rounding mode 'nearest'"},
      {"round --to fp16 --subnormals maybe", "maybe"},
      {"round --to fp16 --overflow wrap", "wrap"},
      {"round --to fp16 --seed minus", "minus"},
      {"round --to user:p=60,emin=-3,emax=4", "precision 60 exceeds binary64's 53 bits"},
      {"round --to user:p=8,emin=5,emax=4", "emin 5 is greater than emax 4"},
      {"round --to user:p=8,emax=4", "p, emin and emax are all required"},
      {"round --to user:p=8,emin=x,emax=4", "'emin=x' is not KEY=INTEGER"},
  };
  for (const Case& c : cases) {
    const Outcome run = ampbench(c.args, "1\n");
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

TEST(Cli, FormatsTableHasEveryFormatAndPublishedConstants) {
  const Outcome run = ampbench("formats");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* name : {"fp64", "fp32", "tf32", "bf16", "fp16", "e4m3", "e5m2", "e3m2", "e2m3",
                           "e2m1", "ue8m0", "ue4m3"}) {
    EXPECT_NE(run.out.find(std::string("\n") + name), std::string::npos) << name;
  }
  EXPECT_NE(run.out.find("none (all finite; saturates)"), std::string::npos);
  EXPECT_NE(run.out.find("65504"), std::string::npos);
  EXPECT_NE(run.out.find(">= 65520"), std::string::npos);
  EXPECT_NE(run.out.find("> 464"), std::string::npos);  // e4m3: 464 is a tie that goes to 448
}

TEST(Cli, FormatsJsonGivesExactValues) {
  const Outcome run = ampbench("formats --json");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto list = nlohmann::json::parse(run.out);
  ASSERT_EQ(list.size(), 12u);  // 10 element formats, 2 scale formats
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& f : list) by_name[f["name"]] = f;
  const auto& fp16 = by_name.at("fp16");
  EXPECT_EQ(fp16["bits"], 16);
  EXPECT_EQ(fp16["precision"], 11);
  EXPECT_EQ(fp16["max_finite"].get<double>(), 65504.0);
  EXPECT_EQ(fp16["overflow_threshold"].get<double>(), 65520.0);
  EXPECT_EQ(fp16["min_subnormal"].get<double>(), 0x1p-24);
  EXPECT_EQ(fp16["min_normal"].get<double>(), 0x1p-14);
  EXPECT_EQ(fp16["unit_roundoff"].get<double>(), 0x1p-11);
  const auto& bf16 = by_name.at("bf16");
  EXPECT_EQ(bf16["max_finite"].get<double>(), 0x1.fep127);
  EXPECT_EQ(bf16["overflow_threshold"].get<double>(), 0x1.ffp127);
  EXPECT_EQ(bf16["min_subnormal"].get<double>(), 0x1p-133);
  const auto& e4m3 = by_name.at("e4m3");
  EXPECT_EQ(e4m3["max_finite"].get<double>(), 448.0);
  EXPECT_EQ(e4m3["infinity"], false);
  EXPECT_EQ(e4m3["overflow_threshold_inclusive"], false);
  EXPECT_EQ(by_name.at("e5m2")["max_finite"].get<double>(), 57344.0);
  EXPECT_EQ(by_name.at("tf32")["bits"], 19);
  EXPECT_EQ(by_name.at("fp32")["max_finite"].get<double>(), 0x1.fffffep127);
  EXPECT_TRUE(by_name.at("fp64")["overflow_threshold"].is_null());
  EXPECT_EQ(by_name.at("fp64")["overflow_threshold_exact"], "2^1024 - 2^970");
  // OCP MX v1.0: FP6 E3M2 max 28, E2M3 max 7.5, FP4 E2M1 max 6; none has infinity or NaN.
  for (const auto& [name, max, bits] :
       {std::tuple{"e3m2", 28.0, 6}, std::tuple{"e2m3", 7.5, 6}, std::tuple{"e2m1", 6.0, 4}}) {
    const auto& f = by_name.at(name);
    EXPECT_EQ(f["max_finite"].get<double>(), max) << name;
    EXPECT_EQ(f["bits"], bits) << name;
    EXPECT_EQ(f["infinity"], false) << name;
    EXPECT_EQ(f["nan"], false) << name;
    EXPECT_EQ(f["overflow"], "saturate") << name;
  }
  EXPECT_EQ(by_name.at("e2m1")["min_subnormal"].get<double>(), 0.5);
  EXPECT_EQ(by_name.at("e3m2")["min_subnormal"].get<double>(), 0.0625);
  const auto& ue8m0 = by_name.at("ue8m0");
  EXPECT_EQ(ue8m0["kind"], "scale");
  EXPECT_EQ(ue8m0["min_positive"].get<double>(), 0x1p-127);
  EXPECT_EQ(ue8m0["max_finite"].get<double>(), 0x1p127);
  EXPECT_EQ(ue8m0["nan_pattern"], "0xff");
  EXPECT_EQ(ue8m0["zero"], false);
  EXPECT_EQ(by_name.at("ue4m3")["max_finite"].get<double>(), 448.0);
  EXPECT_EQ(by_name.at("ue4m3")["min_positive"].get<double>(), 0x1p-9);
}

// The MX element formats saturate in every mode and have no NaN: a NaN becomes +max (as NVIDIA's
// cvt .satfinite gives), with the event saying so; asking them to overflow to infinity is bad
// input, as is rounding to a scale format.
TEST(Cli, RoundMxElementFormats) {
  EXPECT_EQ(ampbench("round --to e2m1", "2.5\n2.6\n5\n7\n-100\ninf\nnan\n-nan\n0.25\n0.26\n").out,
            "2.5\t0x1p+1\t0x4\tinexact\n2.6\t0x1.8p+1\t0x5\tinexact\n"
            "5\t0x1p+2\t0x6\tinexact\n7\t0x1.8p+2\t0x7\tsaturation\n"
            "-100\t-0x1.8p+2\t0xf\tsaturation\ninf\t0x1.8p+2\t0x7\tsaturation\n"
            "nan\t0x1.8p+2\t0x7\tnan\n-nan\t0x1.8p+2\t0x7\tnan\n"
            "0.25\t0x0p+0\t0x0\tflush_to_zero\n0.26\t0x1p-1\t0x1\tunderflow\n");
  EXPECT_EQ(ampbench("round --to fp6-e3m2 --mode ru", "28.5\n0x1p-5\n").out,
            "28.5\t0x1.cp+4\t0x1f\tsaturation\n0x1p-5\t0x1p-4\t0x01\tunderflow\n");
  EXPECT_EQ(ampbench("round --to e2m3", "7.75\n0.0625\n").out,
            "7.75\t0x1.ep+2\t0x1f\tsaturation\n0.0625\t0x0p+0\t0x00\tflush_to_zero\n");
  const Outcome inf = ampbench("round --to e2m1 --overflow inf", "1\n");
  EXPECT_EQ(inf.status, 2);
  EXPECT_NE(inf.err.find("overflow must be saturate"), std::string::npos) << inf.err;
  const Outcome scale = ampbench("round --to ue8m0", "1\n");
  EXPECT_EQ(scale.status, 2);
  EXPECT_NE(scale.err.find("ue8m0 is a scale format"), std::string::npos) << scale.err;
  EXPECT_EQ(ampbench("round --to user:p=2,emin=0,emax=2,specials=none", "7\n").out,
            "7\t0x1.8p+2\t0x7\tsaturation\n");
}

TEST(Cli, RoundFp16BoundariesAndEvents) {
  const Outcome run = ampbench("round --to fp16",
                               "65519.99\n65520\n-65520\n0x1p-25\n0x1.0000000000001p-25\n"
                               "0x1p-24\n1\n0.1\n-inf\nnan\n");
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::vector<std::string>> expected = {
      {"65519.99", "0x1.ffcp+15", "0x7bff", "inexact"},
      {"65520", "inf", "0x7c00", "overflow"},
      {"-65520", "-inf", "0xfc00", "overflow"},
      {"0x1p-25", "0x0p+0", "0x0000", "flush_to_zero"},
      {"0x1.0000000000001p-25", "0x1p-24", "0x0001", "underflow"},
      {"0x1p-24", "0x1p-24", "0x0001", "exact"},
      {"1", "0x1p+0", "0x3c00", "exact"},
      {"0.1", "0x1.998p-4", "0x2e66", "inexact"},
      {"-inf", "-inf", "0xfc00", "exact"},
      {"nan", "nan", "0x7e00", "nan"},
  };
  EXPECT_EQ(rows(run.out), expected);
}

TEST(Cli, RoundModesSubnormalsAndOverflowPolicies) {
  // 1 + 2^-11 is the midpoint between 1 and 1 + 2^-10 in fp16.
  const std::string tie = "0x1.002p+0\n-0x1.002p+0\n";
  EXPECT_EQ(ampbench("round --to fp16 --mode rne", tie).out,
            "0x1.002p+0\t0x1p+0\t0x3c00\tinexact\n-0x1.002p+0\t-0x1p+0\t0xbc00\tinexact\n");
  EXPECT_EQ(ampbench("round --to fp16 --mode rna", tie).out,
            "0x1.002p+0\t0x1.004p+0\t0x3c01\tinexact\n-0x1.002p+0\t-0x1.004p+0\t0xbc01\tinexact\n");
  EXPECT_EQ(ampbench("round --to fp16 --mode ru", tie).out,
            "0x1.002p+0\t0x1.004p+0\t0x3c01\tinexact\n-0x1.002p+0\t-0x1p+0\t0xbc00\tinexact\n");
  EXPECT_EQ(ampbench("round --to fp16 --mode rd", tie).out,
            "0x1.002p+0\t0x1p+0\t0x3c00\tinexact\n-0x1.002p+0\t-0x1.004p+0\t0xbc01\tinexact\n");
  EXPECT_EQ(ampbench("round --to fp16 --mode rz", "70000\n").out,
            "70000\t0x1.ffcp+15\t0x7bff\tsaturation\n");
  EXPECT_EQ(ampbench("round --to fp16 --mode rto", "0x1.002p+0\n").out,
            "0x1.002p+0\t0x1.004p+0\t0x3c01\tinexact\n");
  // Without subnormals the neighbours of tiny values are 0 and 2^-14; 2^-15 is a tie to 0.
  EXPECT_EQ(ampbench("round --to fp16 --subnormals off", "0x1p-15\n0x1.8p-15\n").out,
            "0x1p-15\t0x0p+0\t0x0000\tflush_to_zero\n0x1.8p-15\t0x1p-14\t0x0400\tunderflow\n");
  // OCP e4m3: no infinity; overflow gives NaN, or 448 when saturating.
  EXPECT_EQ(ampbench("round --to e4m3", "464\n465\ninf\n").out,
            "464\t0x1.cp+8\t0x7e\tinexact\n465\tnan\t0x7f\toverflow\ninf\tnan\t0x7f\tnan\n");
  EXPECT_EQ(ampbench("round --to fp8-e4m3 --overflow saturate", "465\n-inf\n").out,
            "465\t0x1.cp+8\t0x7e\tsaturation\n-inf\t-0x1.cp+8\t0xfe\tsaturation\n");
  EXPECT_EQ(ampbench("round --to e5m2", "61440\n61439\n").out,
            "61440\tinf\t0x7c\toverflow\n61439\t0x1.cp+15\t0x7b\tinexact\n");
  EXPECT_EQ(ampbench("round --to bf16", "0x1.ffp+127\n0x1p-134\n").out,
            "0x1.ffp+127\tinf\t0x7f80\toverflow\n0x1p-134\t0x0p+0\t0x0000\tflush_to_zero\n");
  // tf32 keeps 10 fraction bits: 1 + 0.75 * 2^-10 rounds up; the 19-bit pattern is 0x1fc01.
  EXPECT_EQ(ampbench("round --to tf32", "0x1.003p+0\n").out,
            "0x1.003p+0\t0x1.004p+0\t0x1fc01\tinexact\n");
  // A user format with 3 significant bits, bias 3, 3 exponent bits (6 in all): 1.2 rounds to
  // 1.25 (field 3, fraction 01); 20 is past the overflow threshold 2^4 - 2^0 = 15.
  EXPECT_EQ(ampbench("round --to user:p=3,emin=-2,emax=3", "1.2\n20\n").out,
            "1.2\t0x1.4p+0\t0x0d\tinexact\n20\tinf\t0x1c\toverflow\n");
}

TEST(Cli, StochasticRoundingIsSeededAndPicksANeighbour) {
  std::string input;
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9 in fp16.
  for (int i = 0; i < 200; ++i) input += "0x1.006p+0\n";
  const Outcome a = ampbench("round --to fp16 --mode sr --seed 7", input);
  const Outcome b = ampbench("round --to fp16 --mode sr --seed 7", input);
  const Outcome c = ampbench("round --to fp16 --mode srp --seed 8", input);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  int up = 0;
  for (const auto& row : rows(a.out)) {
    ASSERT_EQ(row.size(), 4u);
    EXPECT_TRUE(row[2] == "0x3c01" || row[2] == "0x3c02") << row[2];
    up += row[2] == "0x3c02";
  }
  // P(up) = 1/2: 200 draws give 100 +- 5 standard deviations (5 * sqrt(50) ~ 35).
  EXPECT_GT(up, 65);
  EXPECT_LT(up, 135);
}

TEST(Cli, BadLineStopsWithStatus2AfterEarlierLinesWereWritten) {
  const Outcome run = ampbench("round --to fp16", "1\n# a comment\n\n2.5\nbanana\n3\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.out, "1\t0x1p+0\t0x3c00\texact\n2.5\t0x1.4p+1\t0x4100\texact\n");
  EXPECT_NE(run.err.find("line 5: 'banana' is not a number"), std::string::npos) << run.err;
  const Outcome trailing = ampbench("round --to fp16", "1.5x\n");
  EXPECT_EQ(trailing.status, 2);
  EXPECT_NE(trailing.err.find("line 1: '1.5x'"), std::string::npos) << trailing.err;
}

TEST(Cli, WarningsGoToStderrAndDoNotStopTheRun) {
  // 30 bits in a binary64 container: 53 < 2*30+2, so emulated arithmetic may double-round.
  const Outcome run = ampbench("round --to user:p=30,emin=-100,emax=100", "1\n");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.err.find("warning: double rounding possible"), std::string::npos) << run.err;
  // bias 101, so 1.0 has exponent field 101 = 0x65 above 29 fraction bits; 38 bits in all.
  EXPECT_EQ(run.out, "1\t0x1p+0\t0x0ca0000000\texact\n");
}

// ---- dot
// ------------------------------------------------------------------------------------------

nlohmann::json dot_json(const std::string& args, const std::string& input) {
  const Outcome run = ampbench("dot --json " + args, input);
  EXPECT_EQ(run.status, 0) << run.err;
  return nlohmann::json::parse(run.out);
}

TEST(CliDot, CancellationLosesEverythingInTheNaiveLoop) {
  // 2^100 * 2^100 + 1 * 1 - 2^100 * 2^100 = 1 exactly; in binary64 the 1 is absorbed by 2^200.
  const auto r = dot_json("--format fp64",
                          R"({"a": ["0x1p100", 1, "-0x1p100"], "b": ["0x1p100", 1, "0x1p100"]})");
  EXPECT_EQ(r["exact"], "1e+00");
  EXPECT_EQ(r["exact_hex"], "0x1p+0");
  EXPECT_EQ(r["rounded"], "0x1p+0");
  EXPECT_EQ(r["naive"], "0x0p+0");
  // From 0 to 1 in binary64: 1.0's encoding, 0x3FF0000000000000, counts the steps.
  EXPECT_EQ(r["naive_ulp_error"], 0x3FF0000000000000u);
  EXPECT_EQ(r["length"], 3);
  EXPECT_EQ(r["inputs_rounded"], 0);
}

TEST(CliDot, Fp16AccumulationStagnatesAt2048) {
  std::string ones = "[1";
  for (int i = 1; i < 4096; ++i) ones += ",1";
  ones += "]";
  const std::string input = R"({"a": )" + ones + R"(, "b": )" + ones + "}";
  const auto r = dot_json("--format fp16", input);
  EXPECT_EQ(r["exact"], "4.096e+03");
  EXPECT_EQ(r["rounded"], "0x1p+12");
  EXPECT_EQ(r["naive"], "0x1p+11");       // 2048 + 1 is a tie, and 2048 is even
  EXPECT_EQ(r["naive_ulp_error"], 1024);  // fp16 has 1024 values in [2^11, 2^12)
  // Accumulating in fp32 is exact here; the result is then already the correct rounding.
  const auto wide = dot_json("--format fp16 --accumulate fp32", input);
  EXPECT_EQ(wide["naive"], "0x1p+12");
  EXPECT_EQ(wide["naive_ulp_error"], 0);
  EXPECT_EQ(wide["accumulate"], "fp32");
}

TEST(CliDot, InputsAreRoundedFromTheirDecimalValueAndCounted) {
  // 1.00048828125000000000000001 is just above the fp16 midpoint 1 + 2^-11: it rounds up, though
  // its nearest binary64 is the midpoint itself (which would round to even, down).
  const Outcome run =
      ampbench("dot --json --format fp16", R"({"a": [1.00048828125000000000000001], "b": [1]})");
  EXPECT_EQ(run.status, 0);
  const auto r = nlohmann::json::parse(run.out);
  EXPECT_EQ(r["exact_hex"], "0x1.004p+0");
  EXPECT_EQ(r["inputs_rounded"], 1);
  EXPECT_NE(run.err.find("a[0] = 1.00048828125000000000000001 became 0x1.004p+0"),
            std::string::npos)
      << run.err;
}

TEST(CliDot, TextOutputAndInputsFile) {
  char dir_template[] = "/tmp/ampbench-dot-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::ofstream(dir + "/v.json") << R"({"a": [3, "0x1.8p0"], "b": [0.5, -1]})";
  const Outcome run = ampbench("dot --format bf16 --inputs " + dir + "/v.json");
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_NE(run.out.find("exact            0\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("naive ulp error  0 "), std::string::npos) << run.out;
}

TEST(CliDot, BadInputExitsWith2NamingTheProblemAndPrintsNoResult) {
  const std::string good = R"({"a": [1], "b": [1]})";
  const struct {
    std::string args;
    std::string input;
    std::string message;
  } cases[] = {
      {"", good, "--format FORMAT is required"},
      {"--format fp17", good, "--format: unknown format 'fp17'"},
      {"--format fp16 --accumulate x", good, "--accumulate: unknown format 'x'"},
      {"--format fp16 --mode up", good, "--mode: unknown rounding mode 'up'"},
      {"--format fp16 --inputs /nonexistent/v.json", good,
       "--inputs /nonexistent/v.json: cannot open: No such file or directory"},
      {"--format fp16", "{\"a\": [1,\n 2,, 3], \"b\": []}",
       "<stdin>: line 2, column 4: syntax error while parsing value - unexpected ','"},
      {"--format fp16", R"({"a": [1]})", "<stdin>: missing member 'b'"},
      {"--format fp16", R"({"a": [1, {}], "b": [1, 2]})",
       "<stdin>: a[1]: expected a number or a hex-float string, got an object"},
      {"--format fp16", R"({"a": [1], "b": ["banana"]})",
       "<stdin>: b[0]: 'banana' is not a number"},
      {"--format fp16", R"({"a": [1, 2], "b": [1]})",
       "<stdin>: a has 2 elements and b has 1: they must have the same length"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("dot " + c.args, c.input);
    EXPECT_EQ(run.status, 2) << c.args << " " << c.input;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_NE(run.err.find("ampbench dot: " + c.message), std::string::npos) << c.args << "\n"
                                                                             << run.err;
  }
}

// ---- ampbench policies -------------------------------------------------------------------------
// Expected classifications come from PyTorch's CUDA autocast lists
// (aten/src/ATen/autocast_mode.cpp).

// Writes `files` (name -> text) into a fresh directory and returns its path.
std::string temp_files(const std::map<std::string, std::string>& files) {
  char dir_template[] = "/tmp/ampbench-policies-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  for (const auto& [name, text] : files) std::ofstream(dir + "/" + name) << text;
  return dir;
}

TEST(CliPolicies, TableHasEveryBuiltinPolicyAndOpClass) {
  const Outcome run = ampbench("policies");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  for (const char* name :
       {"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16", "half-model", "bf16-model"}) {
    EXPECT_NE(run.out.find(std::string(name) + ": "), std::string::npos) << name;
  }
  for (const char* c : {"matmul", "convolution", "attention", "elementwise", "activation",
                        "softmax", "normalization", "loss", "reduction"}) {
    EXPECT_NE(run.out.find(std::string("\n  ") + c + " "), std::string::npos) << c;
  }
  // amp-bf16: mm/linear lowered with fp32 accumulation; softmax in fp32; dot on the promote list.
  const std::size_t amp = run.out.find("amp-bf16: ");
  ASSERT_NE(amp, std::string::npos);
  const std::string section = run.out.substr(amp);
  EXPECT_NE(section.find("  matmul                  fixed    bf16   fp32     fp32        bf16"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("  softmax                 fixed    fp32   fp32     fp32        fp32"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("    dot (op)              promote  bf16"), std::string::npos) << section;
}

TEST(CliPolicies, JsonOfOnePolicyHasEveryClassWithItsSource) {
  const Outcome run = ampbench("policies --json --policy amp-fp16");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto p = nlohmann::json::parse(run.out);
  EXPECT_EQ(p["name"], "amp-fp16");
  EXPECT_EQ(p["classes"].size(), 9u);
  const auto& conv = p["classes"]["convolution"];
  EXPECT_EQ(conv["input"], "fp16");
  EXPECT_EQ(conv["accumulate"], "fp32");
  EXPECT_EQ(conv["output"], "fp16");
  EXPECT_EQ(conv["promote"], false);
  EXPECT_NE(conv["source"].get<std::string>().find("autocast_mode.cpp"), std::string::npos);
  EXPECT_EQ(p["classes"]["loss"]["output"], "fp32");
  EXPECT_EQ(p["classes"]["activation"]["promote"], true);
  EXPECT_EQ(p["ops"]["batch_norm"]["class"], "normalization");
  EXPECT_EQ(p["ops"]["batch_norm"]["promote"], true);
  EXPECT_EQ(p["ops"]["dot"]["promote"], true);

  const Outcome all = ampbench("policies --json");
  ASSERT_EQ(all.status, 0) << all.err;
  const auto list = nlohmann::json::parse(all.out);
  ASSERT_EQ(list.size(), 8u);
  EXPECT_EQ(list[1]["name"], "tf32");
  EXPECT_EQ(list[1]["classes"]["matmul"]["input"], "tf32");
  EXPECT_EQ(list[1]["classes"]["matmul"]["output"], "fp32");
}

TEST(CliPolicies, UserTomlFile) {
  const std::string dir = temp_files({{"mine.toml",
                                       "name = \"mine\"\nbase = \"amp-bf16\"\n[softmax]\n"
                                       "output = \"bf16\"\nmode = \"rz\"\n"}});
  const Outcome text = ampbench("policies --policy " + dir + "/mine.toml");
  const Outcome json = ampbench("policies --json --policy " + dir + "/mine.toml");
  std::system(("rm -rf " + dir).c_str());
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out.rfind("mine\n", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("  softmax                 fixed    fp32   fp32     fp32        bf16    "
                          "rne        rz\n"),
            std::string::npos)
      << text.out;
  ASSERT_EQ(json.status, 0) << json.err;
  const auto p = nlohmann::json::parse(json.out);
  EXPECT_EQ(p["classes"]["softmax"]["output"], "bf16");
  EXPECT_EQ(p["classes"]["softmax"]["mode"], "rz");
  EXPECT_EQ(p["classes"]["matmul"]["input"], "bf16");
  EXPECT_EQ(p["classes"]["softmax"]["source"], dir + "/mine.toml:3:1 [softmax]");
}

TEST(CliPolicies, ExamplePolicyLoadsAndHelpListsTheCommand) {
  const Outcome run =
      ampbench("policies --json --policy " AMPBENCH_SOURCE_DIR "/suites/policies/example.toml");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["name"], "amp-bf16-fp32-attention");
  EXPECT_NE(ampbench("help").out.find("policies"), std::string::npos);
}

TEST(CliPolicies, ErrorsExitWith2NameTheProblemAndPrintNothing) {
  const std::string dir = temp_files({
      {"syntax.toml", "name = \"x\"\n[matmul\n"},
      {"format.toml", "name = \"x\"\n[matmul]\ninput = \"fp17\"\n"},
      {"class.toml", "name = \"x\"\n\n[matmult]\n"},
      {"key.toml", "name = \"x\"\n[loss]\nouput = \"fp32\"\n"},
      {"type.toml", "name = \"x\"\n[loss]\npromote = 1\n"},
  });
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--policy amp",
       "ampbench policies: --policy: unknown policy 'amp' (built-in: fp32, tf32, fp16, bf16, "
       "amp-fp16, amp-bf16, half-model, bf16-model; or a FILE.toml)"},
      {"--policy " + dir + "/none.toml", "ampbench policies: --policy: " + dir +
                                             "/none.toml: cannot open: No such file or directory"},
      {"--policy " + dir + "/syntax.toml",
       "ampbench policies: --policy: " + dir + "/syntax.toml:2:8: not valid TOML"},
      {"--policy " + dir + "/format.toml",
       "ampbench policies: --policy: " + dir +
           "/format.toml:3:9: key 'matmul.input': unknown format 'fp17' (known: fp64, fp32, tf32, "
           "bf16, fp16, e4m3, e5m2"},
      {"--policy " + dir + "/class.toml",
       dir + "/class.toml:3:2: unknown key 'matmult' (expected name, description, base, ops, or "
             "an op class: matmul,"},
      {"--policy " + dir + "/key.toml", dir + "/key.toml:3:1: unknown key 'loss.ouput'"},
      {"--policy " + dir + "/type.toml",
       dir + "/type.toml:3:11: key 'loss.promote': expected true or false, got an integer"},
      {"--policy", "--policy: 1 required TEXT missing"},
      {"--colour", "--colour"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("policies " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
  }
  std::system(("rm -rf " + dir).c_str());
}

// ---- audit
// ----------------------------------------------------------------------------------------

TEST(CliAudit, GemmUnderAmpIsCloseToCorrectlyRoundedAndWritesReplayableRecords) {
  char dir_template[] = "/tmp/ampbench-audit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const Outcome run = ampbench(
      "audit --op gemm --shape 32x16x64 --policy amp-fp16,fp16 --seed 7 "
      "--budgets none --json " +
      dir + "/a.json");
  const Outcome again = ampbench(
      "audit --op gemm --shape 32x16x64 --policy amp-fp16,fp16 --seed 7 "
      "--budgets none --json " +
      dir + "/b.json");
  const std::string a = slurp(dir + "/a.json"), b = slurp(dir + "/b.json");
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(a, b);  // seeded runs are bit-reproducible
  const auto records = nlohmann::json::parse(a);
  EXPECT_EQ(records["schema"], "ampbench.audit/1");
  ASSERT_EQ(records["cases"].size(), 2u);
  const auto& amp = records["cases"][0];
  EXPECT_EQ(amp["op"], "gemm");
  EXPECT_EQ(amp["policy"], "amp-fp16");
  EXPECT_EQ(amp["shape"], "32x16x64");
  EXPECT_EQ(amp["seed"], 7);
  EXPECT_EQ(amp["formats"]["accumulate"], "fp32");
  EXPECT_EQ(amp["formats"]["output"], "fp16");
  EXPECT_EQ(amp["status"], "PASS");
  EXPECT_EQ(amp["inputs"].size(), 2u);
  EXPECT_TRUE(amp["inputs"][0].contains("seed"));
  // fp32 accumulation of 64 fp16 products, rounded once to fp16: at most an ulp or two.
  EXPECT_LE(amp["max_ulp"].get<int>(), 2);
  // Pure fp16 accumulation is measurably worse.
  EXPECT_GT(records["cases"][1]["mean_ulp"].get<double>(), 4 * amp["mean_ulp"].get<double>());
  EXPECT_LE(records["cases"][1]["bound_ratio"].get<double>(), 1.0);
}

TEST(CliAudit, TensorCoreModelReplacesTheAccumulation) {
  char dir_template[] = "/tmp/ampbench-audit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const Outcome run = ampbench(
      "audit --op gemm --shape 16x16x128 --policy fp16 --mma hopper "
      "--budgets none --json " +
      dir + "/r.json");
  const Outcome plain = ampbench(
      "audit --op gemm --shape 16x16x128 --policy fp16 --budgets none "
      "--json " +
      dir + "/p.json");
  const auto mma = nlohmann::json::parse(slurp(dir + "/r.json"))["cases"][0];
  const auto pure = nlohmann::json::parse(slurp(dir + "/p.json"))["cases"][0];
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(mma["mma"], "hopper-fp16");
  EXPECT_TRUE(mma["bound_ratio"].is_null());
  EXPECT_FALSE(pure.contains("mma"));
  // fp32 accumulation inside the model, one rounding to fp16: far closer than fp16 accumulation.
  EXPECT_LE(mma["max_ulp"].get<int>(), 2);
  EXPECT_LT(mma["mean_ulp"].get<double>(), pure["mean_ulp"].get<double>() / 4);
}

TEST(CliAudit, ARecordsFileThatCannotBeReplacedStopsWithStatus2) {
  char dir_template[] = "/tmp/ampbench-audit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::system(("mkdir -p " + dir + "/r.json/inside").c_str());  // a non-empty directory in the way
  const Outcome run =
      ampbench("audit --op dot --shape 16 --budgets none --json " + dir + "/r.json");
  std::system(("rm -rf " + dir).c_str());
  // Found before any work, not when the first record is written.
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "ampbench audit: --json " + dir + "/r.json: is a directory\n");
  EXPECT_EQ(run.out, "");
}

TEST(CliAudit, ABudgetBreachFailsTheCaseWithExitStatus1) {
  char dir_template[] = "/tmp/ampbench-audit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  std::ofstream(dir + "/budgets.toml") << "[[budget]]\nop = \"softmax\"\npolicy = \"bf16\"\n"
                                          "metric = \"max_ulp\"\nlimit = 1\nsource = \"test\"\n";
  const Outcome run = ampbench("audit --op softmax --shape 4x256 --policy bf16,fp32 --budgets " +
                               dir + "/budgets.toml");
  std::system(("rm -rf " + dir).c_str());
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_NE(run.out.find("FAIL softmax bf16: max_ulp"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("> 1 (test; "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("softmax" + std::string(24 - 7, ' ') + "fp32"), std::string::npos);
}

TEST(CliAudit, BadInputExitsWith2BeforeAnyWork) {
  char dir_template[] = "/tmp/ampbench-audit-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  // A policy rounding matmuls toward zero: the CPU backend emulates round-to-nearest-even only.
  std::ofstream(dir + "/rz.toml")
      << "name = \"rz-matmul\"\nbase = \"fp32\"\n[matmul]\nmode = \"rz\"\n";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"", "give exactly one of --op OP and --all"},
      {"--all --shape 8x8", "--shape goes with --op (--all uses each op's default shape)"},
      {"--op gemm --policy " + dir + "/rz.toml",
       "--policy: policy rz-matmul, op gemm: rounding mode rz: binary64 containers emulate only "
       "round-to-nearest-even exactly"},
      {"--op gemm --all", "give exactly one of --op OP and --all"},
      {"--op conv9d", "--op: unknown op 'conv9d' (known: gemm, bmm, dot"},
      {"--op gemm --shape 64x64", "--shape: gemm shape '64x64': expected MxNxK (3 sizes), got 2"},
      {"--op gemm --shape 100000x100000x100000", "too large"},
      {"--op gemm --policy fp17", "--policy: unknown policy 'fp17'"},
      {"--op gemm --policy /nonexistent/p.toml", "--policy: /nonexistent/p.toml: cannot open"},
      {"--op gemm --dist gauss", "--dist: "},
      {"--op gemm --backend tpu", "--backend: unknown backend 'tpu' (available: cpu, cuda, all)"},
      {"--op gemm --summation kahan", "--summation: unknown order 'kahan'"},
      {"--op gemm --budgets /nonexistent/b.toml", "--budgets: /nonexistent/b.toml: cannot open"},
      {"--op gemm --json /nonexistent/dir/r.json", "--json /nonexistent/dir/r.json: directory"},
      {"--op gemm --policy bf16 --mma volta",
       "--mma volta: no Tensor Core model of that name, or "
       "none for bf16 inputs (policy bf16)"},
      {"--op gemm --policy bf16 --mma ampere-fp16",
       "--mma ampere-fp16: the preset takes fp16 inputs; policy bf16 gives gemm bf16"},
      {"--op gemm --mma pascal", "--mma pascal: no Tensor Core model of that name"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("audit " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
  }
  std::system(("rm -rf " + dir).c_str());
}

// ---- ops and eval -------------------------------------------------------------------------------

TEST(CliOps, ListsTheCatalog) {
  const Outcome run = ampbench("ops --json");
  EXPECT_EQ(run.status, 0);
  const auto list = nlohmann::json::parse(run.out);
  EXPECT_EQ(list.size(), 47u);
  EXPECT_EQ(list[0]["op"], "gemm");
  EXPECT_EQ(list[0]["shape"], "MxNxK");
  EXPECT_EQ(list[0]["reference"], "exact");
  EXPECT_EQ(list[0]["operands"][2]["held_in"], "accumulation");  // C
  // linear's bias: a parameter, held in the output format as addmm's epilogue adds it.
  const auto linear = std::find_if(list.begin(), list.end(),
                                   [](const auto& entry) { return entry["op"] == "linear"; });
  ASSERT_NE(linear, list.end());
  EXPECT_EQ((*linear)["operands"][2]["name"], "bias");
  EXPECT_EQ((*linear)["operands"][2]["held_in"], "output");
  EXPECT_EQ((*linear)["operands"][2]["parameter"], true);
  EXPECT_EQ((*linear)["operands"][0]["held_in"], "input");
  // batch norm's gamma: the input format, or its own fp32 under a promote entry (autocast).
  const auto batch_norm = std::find_if(
      list.begin(), list.end(), [](const auto& entry) { return entry["op"] == "batch_norm"; });
  ASSERT_NE(batch_norm, list.end());
  EXPECT_EQ((*batch_norm)["operands"][1]["name"], "gamma");
  EXPECT_EQ((*batch_norm)["operands"][1]["held_in"], "input_or_own");
  // Every column starts where its heading does, after two blanks, whatever its longest entry
  // (layer_norm_backward_gamma once ran into its class).
  const Outcome text = ampbench("ops");
  std::istringstream lines(text.out);
  std::string header;
  std::getline(lines, header);
  std::size_t rows = 0;
  for (std::string line; std::getline(lines, line) && !line.empty(); ++rows) {
    for (const char* heading : {"class", "shape", "default", "operands", "reference", "a-priori"}) {
      const std::size_t column = header.find(heading);
      ASSERT_NE(column, std::string::npos) << heading;
      EXPECT_EQ(line.substr(column - 2, 2), "  ") << heading << " in\n" << line;
      EXPECT_NE(line.at(column), ' ') << heading << " in\n" << line;
    }
  }
  EXPECT_EQ(rows, 47u);
}

TEST(CliAudit, ColumnsAreAsWideAsTheirLongestEntry) {
  const std::string policy = "/tmp/ampbench-" + std::to_string(getpid()) + "-policy.toml";
  std::ofstream(policy) << "name = \"a-policy-with-a-long-name\"\nbase = \"fp32\"\n";
  const Outcome run =
      ampbench("audit --op dot --shape 64 --policy fp32," + policy + " --budgets none");
  std::remove(policy.c_str());
  ASSERT_EQ(run.status, 0) << run.err;
  std::istringstream lines(run.out);
  std::string header;
  while (std::getline(lines, header) && header.rfind("op ", 0) != 0) {
  }
  const std::size_t shape = header.find("shape");
  ASSERT_NE(shape, std::string::npos) << run.out;
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.substr(shape - 2, 4), "  64") << run.out;
  std::getline(lines, line);
  EXPECT_EQ(line.substr(shape - 2, 4), "  64") << run.out;
  EXPECT_NE(line.find("a-policy-with-a-long-name  "), std::string::npos) << run.out;
}

std::string write_temp(const std::string& name, const std::string& text) {
  return ampbench::cli::test::temp_file("eval-" + name, text);
}

TEST(CliEval, ThePolicysInputModeConvertsTheOperands) {
  // 1 + 2^-11 is a tie between two tf32 values: tf32 (nearest even) reads it as 1, a policy with
  // input_mode = "ru" as 1 + 2^-10; the products' sum is 2 or 2 + 2^-9, exactly.
  const std::string inputs =
      write_temp("tie.json", R"({"a": [["0x1.002p0", 1]], "b": [[1], ["0x1.002p0"]]})");
  const std::string policy = write_temp("ru.toml", R"(name = "tf32-ru"
base = "tf32"
[matmul]
input_mode = "ru"
)");
  const Outcome nearest = ampbench("eval --op gemm --policy tf32 --json --inputs " + inputs);
  const Outcome up = ampbench("eval --op gemm --policy " + policy + " --json --inputs " + inputs);
  std::remove(inputs.c_str());
  std::remove(policy.c_str());
  ASSERT_EQ(nearest.status, 0) << nearest.err;
  ASSERT_EQ(up.status, 0) << up.err;
  EXPECT_EQ(nlohmann::json::parse(nearest.out)["output"][0][0], "0x1p+1");
  EXPECT_EQ(nlohmann::json::parse(up.out)["output"][0][0], "0x1.004p+1");
  EXPECT_EQ(nlohmann::json::parse(up.out)["inputs_rounded"], 2);
}

TEST(CliEval, LinearsBiasIsReadInTheOutputFormat) {
  // Under tf32 x and W are read as tf32 (1 + 2^-20 is 1), the bias as fp32 (1 + 2^-20 stays):
  // 1 * 1 + (1 + 2^-20) = 2 + 2^-20, an fp32 value.
  const std::string path =
      write_temp("linear.json",
                 R"({"x": [["0x1.00001p0"]], "w": [["0x1.00001p0"]], "bias": ["0x1.00001p0"]})");
  const Outcome run = ampbench("eval --op linear --policy tf32 --json --inputs " + path);
  std::remove(path.c_str());
  ASSERT_EQ(run.status, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["output"][0][0], "0x1.000008p+1");
  EXPECT_EQ(j["reference"][0][0], "0x1.000008p+1");
  EXPECT_EQ(j["inputs_rounded"], 2);
}

TEST(CliEval, Fp16AccumulationIsOneUlpOffWhereTheAmpPolicyIsNot) {
  // 2048 + 1 + 1 in fp16: each + 1 is a tie that rounds to even, 2048; the exact 2050 is an fp16.
  const std::string path = write_temp("dot.json", R"({"a": [2048, 1, 1], "b": [1, 1, "0x1p0"]})");
  const Outcome pure = ampbench("eval --op dot --policy fp16 --json --inputs " + path);
  const Outcome amp = ampbench("eval --op dot --policy amp-fp16 --json --inputs " + path);
  const Outcome text = ampbench("eval --op dot --policy fp16 --inputs " + path);
  std::remove(path.c_str());
  ASSERT_EQ(pure.status, 0) << pure.err;
  const auto p = nlohmann::json::parse(pure.out);
  EXPECT_EQ(p["output"], "0x1p+11");
  EXPECT_EQ(p["reference"], "0x1.004p+11");
  EXPECT_EQ(p["ulp_error"], 1);
  EXPECT_EQ(p["shape"], "3");
  const auto a = nlohmann::json::parse(amp.out);
  EXPECT_EQ(a["output"], "0x1.004p+11");
  EXPECT_EQ(a["ulp_error"], 0);
  EXPECT_NE(text.out.find("0         0x1p+11                   0x1.004p+11               1"),
            std::string::npos)
      << text.out;
}

// gemm's accumulator input C on the Hopper Tensor Core model: 1 * 1 + 3 * 2^-25 keeps its 25
// fractional bits in the fused sum, then is truncated to fp32: 1, where the correctly rounded sum
// is 1 + 2^-23. Without the model, the fp32 addition rounds to nearest and is right.
TEST(CliEval, GemmAccumulatorInputOnATensorCoreModelIsTruncated) {
  const std::string path =
      write_temp("c.json", R"({"a": [[1]], "b": [[1]], "c": [["0x1.8p-24"]]})");
  const Outcome mma = ampbench("eval --op gemm --policy tf32 --mma hopper --json --inputs " + path);
  const Outcome plain = ampbench("eval --op gemm --policy tf32 --json --inputs " + path);
  const Outcome wrong =
      ampbench("eval --op gemm --inputs " +
               write_temp("w.json", R"({"a": [[1]], "b": [[1]], "c": [[1, 2]]})"));
  std::remove(path.c_str());
  ASSERT_EQ(mma.status, 0) << mma.err;
  const auto m = nlohmann::json::parse(mma.out);
  EXPECT_EQ(m["mma"], "hopper-tf32");
  EXPECT_EQ(m["output"][0][0], "0x1p+0");
  EXPECT_EQ(m["reference"][0][0], "0x1.000002p+0");
  EXPECT_EQ(m["ulp_error"][0][0], 1);
  const auto p = nlohmann::json::parse(plain.out);
  EXPECT_EQ(p["output"][0][0], "0x1.000002p+0");
  EXPECT_EQ(p["ulp_error"][0][0], 0);
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.err.find("gemm: operand c has shape 1x2, expected 1x1"), std::string::npos)
      << wrong.err;
}

// With one key, softmax is exactly 1 and attention returns V's row: the reference must say so
// exactly (it once failed to round, its inexact flag raised by a score it does not need).
TEST(CliEval, AttentionWithOneKeyReturnsItsValueRow) {
  const std::string path = write_temp(
      "attention.json", R"({"q": [[0.1, 0.2], [0.3, 0.4]], "k": [[0.5, 0.6]], "v": [[0.125, 3]]})");
  const Outcome run = ampbench("eval --op attention --policy bf16 --json --inputs " + path);
  std::remove(path.c_str());
  ASSERT_EQ(run.status, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["reference"],
            nlohmann::json::parse(R"([["0x1p-3", "0x1.8p+1"], ["0x1p-3", "0x1.8p+1"]])"));
  EXPECT_EQ(j["ulp_error"], nlohmann::json::parse("[[0, 0], [0, 0]]"));
}

TEST(CliEval, OutputsAreNestedLikeTheOpsOutput) {
  const std::string path = write_temp("softmax.json", R"({"x": [[0, 0], [1, 1], [2, 2]]})");
  const Outcome run = ampbench("eval --op softmax --policy fp32 --json --inputs " + path);
  std::remove(path.c_str());
  ASSERT_EQ(run.status, 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["output"].size(), 3u);
  EXPECT_EQ(j["output"][2][1], "0x1p-1");
  EXPECT_EQ(j["reference"][0][0], "0x1p-1");
  EXPECT_EQ(j["ulp_error"][1][0], 0);
}

TEST(CliEval, BadInputExitsWith2) {
  const std::string gemm =
      write_temp("g.json", R"({"a": [[1, 2, 3], [4, 5, 6]], "b": [[1, 2], [3, 4]]})");
  const std::string extra = write_temp("x.json", R"({"x": [[1]], "y": [[1]]})");
  const std::string missing = write_temp("m.json", R"({"a": [1, 2]})");
  const std::string targets = write_temp("t.json", R"({"logits": [[1, 2]], "targets": [2]})");
  const std::string broken = write_temp("b.json", R"({"a": [1, 2)");
  const std::string rz =
      write_temp("rz.toml", "name = \"rz-matmul\"\nbase = \"fp32\"\n[matmul]\nmode = \"rz\"\n");
  const std::string with_c =
      write_temp("c.json", R"({"a": [[1, 2]], "b": [[1], [2]], "c": [[1]]})");
  const std::string cross = write_temp(
      "cross.json", R"({"q": [[0.1, 0.2], [0.3, 0.4]], "k": [[0.5, 0.6]], "v": [[0.125, 3]]})");
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"--inputs " + gemm, "--op: required"},
      {"--op conv9d --inputs " + gemm, "--op: unknown op 'conv9d'"},
      {"--op gemm", "--inputs FILE is required"},
      {"--op gemm --inputs /nonexistent/x.json", "--inputs /nonexistent/x.json: cannot open"},
      {"--op gemm --inputs " + gemm, "gemm: operand b has shape 2x2, expected 3x2 (from a)"},
      {"--op softmax --inputs " + extra, "unknown operand 'y' (softmax takes x)"},
      {"--op gemm --inputs " + extra, "unknown operand 'x' (gemm takes a, b, c)"},
      {"--op dot --inputs " + missing, "missing operand 'b'"},
      {"--op cross_entropy --inputs " + targets, "targets[0] = 2 is not below the 2 classes"},
      {"--op dot --inputs " + broken, "--inputs " + broken + ": "},
      {"--op softmax --policy fp16 --mma hopper --inputs " + extra,
       "--mma: softmax has no Tensor Core model"},
      {"--op gemm --policy fp17 --inputs " + gemm, "--policy: unknown policy 'fp17'"},
      {"--op gemm --policy " + rz + " --inputs " + gemm,
       "--policy: policy rz-matmul, op gemm: rounding mode rz"},
      {"--op dot --backend tpu --inputs " + missing,
       "--backend: unknown backend 'tpu' (available: cpu, cuda, all)"},
      {"--op gemm --policy tf32 --backend cuda --mma hopper --inputs " + gemm,
       "--mma models Tensor Cores on the CPU; on the GPU the hardware runs"},
      {"--op attention --backend all --inputs " + cross,
       "--backend all: attention (fp32 inputs, fp32 accumulation, fp32 output): the device's "
       "attention is the trainer's self-attention, with as many keys as queries (L = S), not 2 "
       "queries and 1 keys"},
      {"--op gemm --backend cuda --inputs " + with_c,
       "--backend cuda: the CUDA backend computes A B without C"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("eval " + c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_EQ(run.out, "") << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
  }
  for (const auto& path : {gemm, extra, missing, targets, broken, rz, with_c, cross}) {
    std::remove(path.c_str());
  }
}

}  // namespace
