// End-to-end tests of `ampbench scaler`: each runs the real binary with arguments and standard
// input, and checks standard output, standard error and the exit status. Expected scales come
// from PyTorch's own GradScaler tests (test/test_cuda.py) and from binary32 facts stated beside
// them, not from our code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;

using Row = std::vector<std::string>;

// The data rows of the output, without the '#' header.
std::vector<Row> rows(const std::string& tsv) {
  return ampbench::cli::test::tsv_rows(tsv, true);
}

std::string repeat(const std::string& line, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += line;
  return text;
}

const char* const kHeader = "# step\tfound_inf\tscale\tskipped\tscale_after\tgrowth_tracker\n";

TEST(ScalerCli, HelpListsTheCommand) {
  const Outcome help = ampbench("help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("scaler"), std::string::npos) << help.out;
  const Outcome own = ampbench("scaler --help");
  EXPECT_EQ(own.status, 0);
  EXPECT_NE(own.out.find("--min-scale"), std::string::npos) << own.out;
}

// PyTorch test_grad_scaling_update_scale: growth 2, backoff 0.25, interval 2, from 4.
TEST(ScalerCli, PyTorchUpdateScaleSequence) {
  const Outcome run =
      ampbench("scaler --init-scale 4 --growth-factor 2 --backoff-factor 0.25 --growth-interval 2",
               "ok\nok\ninf\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(run.out.starts_with(kHeader)) << run.out;
  EXPECT_EQ(rows(run.out), (std::vector<Row>{{"0", "0", "4", "0", "4", "1"},
                                             {"1", "0", "4", "0", "8", "0"},
                                             {"2", "1", "8", "1", "2", "0"}}));
  EXPECT_NE(run.err.find("1 of 3 steps skipped (steps 2)"), std::string::npos) << run.err;
}

// PyTorch _run_scaling_case: init 128, growth 2, interval 1, an inf at iteration 2: the scale
// ends at 128 * 2^3 * 0.5 = 512.
TEST(ScalerCli, PyTorchScalingCase) {
  const Outcome run = ampbench("scaler --init-scale 128 --growth-interval 1", "ok\nok\ninf\nok\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(rows(run.out), (std::vector<Row>{{"0", "0", "128", "0", "256", "0"},
                                             {"1", "0", "256", "0", "512", "0"},
                                             {"2", "1", "512", "1", "256", "0"},
                                             {"3", "0", "256", "0", "512", "0"}}));
}

TEST(ScalerCli, DefaultsArePyTorchs) {
  const Outcome run = ampbench("scaler --hex", "nan\n" + repeat("ok\n", 2000));
  ASSERT_EQ(run.status, 0) << run.err;
  const auto r = rows(run.out);
  ASSERT_EQ(r.size(), 2001u);
  EXPECT_EQ(r[0], (Row{"0", "1", "0x1p+16", "1", "0x1p+15", "0"}));
  EXPECT_EQ(r[1999], (Row{"1999", "0", "0x1p+15", "0", "0x1p+15", "1999"}));
  EXPECT_EQ(r[2000], (Row{"2000", "0", "0x1p+15", "0", "0x1p+16", "0"}));
}

TEST(ScalerCli, BlankLinesCommentsAndSurroundingWhitespaceAreIgnored) {
  const Outcome run = ampbench("scaler", "# a comment\n\n  ok  \r\n\t\n\tinf\t\n   # indented\n");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto r = rows(run.out);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0][1], "0");
  EXPECT_EQ(r[1][1], "1");
}

TEST(ScalerCli, EmptyInputGivesTheHeaderOnly) {
  const Outcome run = ampbench("scaler", "");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.out, kHeader);
  EXPECT_EQ(run.err, "");
}

// Scales print exactly: the shortest decimal that reads back as the same binary32 value, or a
// C99 hex float.
TEST(ScalerCli, ScalesPrintExactly) {
  const Outcome decimal =
      ampbench("scaler --init-scale 0.1 --growth-factor 3 --growth-interval 1", "ok\n");
  ASSERT_EQ(decimal.status, 0) << decimal.err;
  // 0.1 is 0x1.99999ap-4 in binary32; times 3 it is 0x1.3333338p-2, which rounds to
  // 0x1.333334p-2 = 0.30000001192092896, whose shortest binary32 decimal is 0.3.
  EXPECT_EQ(rows(decimal.out)[0], (Row{"0", "0", "0.1", "0", "0.3", "0"}));
  const Outcome hex =
      ampbench("scaler --init-scale 0.1 --growth-factor 3 --growth-interval 1 --hex", "ok\n");
  ASSERT_EQ(hex.status, 0) << hex.err;
  EXPECT_EQ(rows(hex.out)[0], (Row{"0", "0", "0x1.99999ap-4", "0", "0x1.333334p-2", "0"}));
}

// Growth that would overflow binary32 is not stored; the tracker restarts.
TEST(ScalerCli, GrowthStopsBelowInfinity) {
  const Outcome run =
      ampbench("scaler --init-scale 1.7014118346046923e38 --growth-interval 1 --hex", "ok\nok\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(rows(run.out), (std::vector<Row>{{"0", "0", "0x1p+127", "0", "0x1p+127", "0"},
                                             {"1", "0", "0x1p+127", "0", "0x1p+127", "0"}}));
}

// From 2^16, halving 166 times: 2^-149 (printed 1e-45) after 165, then 2^-150 rounds to 0. The
// next clean step is not skipped, although its gradient unscaled to NaN (0 * inf).
TEST(ScalerCli, ScaleCollapsesToZero) {
  const Outcome run = ampbench("scaler", repeat("inf\n", 166) + "ok\n");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto r = rows(run.out);
  ASSERT_EQ(r.size(), 167u);
  EXPECT_EQ(r[143][4], "2.938736e-39");  // 2^-128 as the shortest binary32 decimal
  EXPECT_EQ(r[164], (Row{"164", "1", "3e-45", "1", "1e-45", "0"}));
  EXPECT_EQ(r[165], (Row{"165", "1", "1e-45", "1", "0", "0"}));
  EXPECT_EQ(r[166], (Row{"166", "0", "0", "0", "0", "1"}));
  EXPECT_NE(run.err.find("166 of 167 steps skipped (steps 0, 1, 2,"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("step 16: the scale fell below 1"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("step 143: the scale 2.938736e-39 has no finite binary32 inverse"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("step 9: the scale backed off 10 times within 100 steps"),
            std::string::npos)
      << run.err;
}

TEST(ScalerCli, MinimumScaleStopsTheCollapse) {
  const Outcome run = ampbench("scaler --min-scale 1", repeat("inf\n", 200) + "ok\n");
  ASSERT_EQ(run.status, 0) << run.err;
  const auto r = rows(run.out);
  ASSERT_EQ(r.size(), 201u);
  EXPECT_EQ(r[15][4], "1");
  EXPECT_EQ(r[199], (Row{"199", "1", "1", "1", "1", "0"}));
  EXPECT_EQ(r[200], (Row{"200", "0", "1", "0", "1", "1"}));
  EXPECT_EQ(run.err.find("below 1"), std::string::npos) << run.err;
}

TEST(ScalerCli, CollapseRuleIsConfigurable) {
  const Outcome run =
      ampbench("scaler --collapse-backoffs 2 --collapse-window 3", "inf\nok\nok\ninf\nok\ninf\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find("step 5: the scale backed off 2 times within 3 steps"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("step 3:"), std::string::npos) << run.err;
}

TEST(ScalerCli, NoSummaryWhenNothingWasSkipped) {
  const Outcome run = ampbench("scaler", "ok\nok\n");
  EXPECT_EQ(run.status, 0);
  EXPECT_EQ(run.err, "");
}

// A bad line stops the run with status 2; the lines before it are already on stdout.
TEST(ScalerCli, BadLineNamesItsNumberAndKeepsEarlierOutput) {
  const Outcome run = ampbench("scaler", "ok\n# comment\ninf\n\nfoo bar \nok\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "ampbench scaler: line 5: expected ok, inf or nan, got 'foo bar'\n");
  EXPECT_TRUE(run.out.starts_with(kHeader)) << run.out;
  EXPECT_EQ(rows(run.out).size(), 2u);

  for (const char* word : {"OK", "Inf", "NaN", "1", "ok ok"}) {
    const Outcome bad = ampbench("scaler", std::string(word) + "\n");
    EXPECT_EQ(bad.status, 2) << word;
    EXPECT_NE(bad.err.find("line 1: expected ok, inf or nan, got '" + std::string(word) + "'"),
              std::string::npos)
        << bad.err;
  }
}

TEST(ScalerCli, BadOptionsExitWithStatus2AndNameTheOption) {
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"--growth-factor 1", "ampbench scaler: --growth-factor: 1 is not a finite number > 1"},
      {"--growth-factor 0.5", "--growth-factor"},
      {"--growth-factor abc", "--growth-factor: 'abc' is not a decimal number"},
      {"--growth-factor inf", "--growth-factor: inf is not a finite number"},
      {"--growth-factor nan", "--growth-factor: nan is not a finite number"},
      {"--growth-factor 1e400", "--growth-factor: 1e400 is beyond the range of a binary64 number"},
      {"--backoff-factor 1", "ampbench scaler: --backoff-factor: 1 is not in (0, 1)"},
      {"--backoff-factor 0", "--backoff-factor"},
      {"--backoff-factor -0.5", "--backoff-factor"},
      {"--growth-interval 0", "ampbench scaler: --growth-interval: 0 is not in [1, 2147483647]"},
      {"--growth-interval 2147483648", "--growth-interval: 2147483648 is not in [1, 2147483647]"},
      {"--growth-interval 1.5", "--growth-interval: '1.5' is not a base-10 integer"},
      {"--growth-interval 0x10", "--growth-interval: '0x10' is not a base-10 integer"},
      {"--init-scale 0", "ampbench scaler: --init-scale: 0 is not a finite number > 0"},
      {"--init-scale -2", "--init-scale"},
      {"--init-scale 1e39", "--init-scale: must be finite and > 0 as a binary32 value"},
      {"--min-scale -1", "--min-scale: -1 is not a finite number >= 0"},
      {"--min-scale 1e6",
       "--min-scale: must be finite and in [0, init_scale = 65536], got 1000000"},
      {"--collapse-backoffs 0", "--collapse-backoffs: 0 is not in [1, 2147483647]"},
      {"--collapse-window 5", "--collapse-window: must be >= collapse.backoffs = 10, got 5"},
      {"--colour", "--colour"},
  };
  for (const Case& c : cases) {
    const Outcome run = ampbench("scaler " + c.args, "ok\n");
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

}  // namespace
