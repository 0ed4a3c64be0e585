// End-to-end tests of how every command reads its values (harness/cli/options.hpp): every numeric
// option of every command, found in its --help, given hostile values; empty strings; user formats;
// Tensor Core models on ops without one; the limits of suites' training and profile runs. Each bad
// value is exit 2 with a message naming the option, before any work; nothing crashes or hangs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;

class OptionsCli : public ampbench::cli::test::TempDirTest {
 protected:
  // ampbench under `timeout`: a hang is status 124, a crash 128 + its signal.
  Outcome run_limited(const std::string& args, const std::string& input) const {
    std::ofstream(path("in")) << input;
    const std::string command = "timeout 120 " + std::string(AMPBENCH_EXE) + " " + args + " <" +
                                path("in") + " >" + path("out") + " 2>" + path("err");
    const int raw = std::system(command.c_str());
    return {slurp(path("out")), slurp(path("err")), WIFEXITED(raw) ? WEXITSTATUS(raw) : -1};
  }
};

// The commands `ampbench help` lists.
std::vector<std::string> commands() {
  std::vector<std::string> names;
  std::istringstream lines(ampbench("help").out);
  bool listing = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Subcommands:")) {
      listing = true;
    } else if (listing && line.starts_with("  ") && line.size() > 2 && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

// The options of a command whose --help shows a numeric type (UINT, INT, FLOAT or NUMBER).
std::vector<std::string> numeric_options(const std::string& command) {
  const std::regex option(R"(^\s+(?:-\w,)?(--[a-z0-9-]+) (UINT|INT|FLOAT|NUMBER)\b)");
  std::vector<std::string> names;
  std::istringstream lines(ampbench(command + " --help").out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option)) names.push_back(m[1]);
  }
  return names;
}

// Splits "--a 1 --b x" into {"--a": "1", "--b": "x"}, in order; a lone word (a positional) keeps
// its place with an empty value.
std::vector<std::pair<std::string, std::string>> arguments(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> args;
  std::istringstream words(line);
  for (std::string word; words >> word;) {
    if (word.starts_with("--")) {
      std::string value;
      words >> value;
      args.emplace_back(word, value);
    } else {
      args.emplace_back(word, "");
    }
  }
  return args;
}

TEST_F(OptionsCli, EveryNumericOptionOfEveryCommandSurvivesHostileValues) {
  // A small result record for compare.
  const std::string suite = write("s.toml", R"(name = "s"
[[audit]]
ops = ["dot"]
shapes = ["8"]
policies = ["fp32"]
)");
  ASSERT_EQ(ampbench("run " + suite + " --out " + path("r") + " --history none").status, 0);
  const std::string result = path("r/result.json");
  // What each command needs besides the option under test, kept small and fast; its stdin.
  const std::map<std::string, std::pair<std::string, std::string>> base = {
      {"round", {"--to fp16", "1\n"}},
      {"dot", {"--format fp16", R"({"a": [1, 2], "b": [3, 4]})"}},
      {"audit", {"--op dot --shape 8 --policy fp32 --budgets none", ""}},
      {"scaler", {"", "ok\ninf\n"}},
      {"train", {"--steps 2 --batch 4 --eval 8 --policy fp32 --print-every 1", ""}},
      {"profile", {"--steps 1 --warmup 0 --batch 4 --policy fp32", ""}},
      {"compare", {result + " " + result, ""}},
      {"history", {"--db " + path("absent.sqlite"), ""}},
      {"quantize", {"--recipe fp8-delayed --shape 1x32", ""}},
  };
  const std::vector<std::string> hostile = {"-1", "0", "18446744073709551616", "1e30",
                                            "1234567890123456789012345678901234567890"};
  std::set<std::string> seen;
  for (const std::string& command : commands()) {
    for (const std::string& option : numeric_options(command)) {
      seen.insert(command + " " + option);
      const auto found = base.find(command);
      // The base without the option under test.
      std::string rest;
      if (found != base.end()) {
        for (const auto& [name, value] : arguments(found->second.first)) {
          if (name != option) rest += " " + name + (value.empty() ? "" : " " + value);
        }
      }
      for (const std::string& value : hostile) {
        const std::string args = command + rest + " " + option + " " + value;
        const Outcome run = run_limited(args, found != base.end() ? found->second.second : "");
        EXPECT_TRUE(run.status == 0 || run.status == 1 || run.status == 2)
            << args << ": status " << run.status << "\n"
            << run.err;
        if (run.status == 2) {
          EXPECT_NE(run.err.find(option), std::string::npos) << args << ": " << run.err;
          EXPECT_EQ(run.out, "") << args;
        }
      }
    }
  }
  // The walk found the options: each command's numbers, as --help shows them.
  for (const char* expected : {"round --seed",
                               "dot --seed",
                               "audit --seed",
                               "audit --samples",
                               "scaler --init-scale",
                               "scaler --growth-factor",
                               "scaler --backoff-factor",
                               "scaler --growth-interval",
                               "scaler --min-scale",
                               "scaler --collapse-backoffs",
                               "scaler --collapse-window",
                               "train --reference-bits",
                               "quantize --seed",
                               "quantize --margin",
                               "quantize --amax-history-len",
                               "train --steps",
                               "train --batch",
                               "train --accumulate",
                               "train --seed",
                               "train --init-scale",
                               "train --growth-interval",
                               "train --min-scale",
                               "train --lr",
                               "train --clip-norm",
                               "train --eval",
                               "train --print-every",
                               "profile --steps",
                               "profile --warmup",
                               "profile --batch",
                               "profile --seed",
                               "compare --tolerance",
                               "compare --floor",
                               "history --last"}) {
    EXPECT_TRUE(seen.contains(expected)) << expected;
  }
}

TEST_F(OptionsCli, SeedsAreBase10AndDoNotWrap) {
  // 2^64 - 1 is a seed; -1, 2^64 and 2^70 are not (they once all meant 2^64 - 1); 010 is ten.
  const Outcome top = ampbench("round --to fp16 --mode sr --seed 18446744073709551615", "0.3\n");
  EXPECT_EQ(top.status, 0) << top.err;
  for (const char* seed : {"-1", "18446744073709551616", "1180591620717411303424"}) {
    const Outcome run = ampbench(std::string("round --to fp16 --mode sr --seed ") + seed, "0.3\n");
    EXPECT_EQ(run.status, 2) << seed;
    EXPECT_EQ(run.err, std::string("ampbench round: --seed: ") + seed +
                           " is not in [0, 18446744073709551615]\n");
  }
  const Outcome octal = ampbench("round --to fp16 --mode sr --seed 010", "0.3\n");
  const Outcome ten = ampbench("round --to fp16 --mode sr --seed 10", "0.3\n");
  EXPECT_EQ(octal.status, 0) << octal.err;
  EXPECT_EQ(octal.out, ten.out);
  const Outcome hex = ampbench("dot --format fp16 --seed 0x40", R"({"a": [1], "b": [1]})");
  EXPECT_EQ(hex.status, 2);
  EXPECT_EQ(hex.err, "ampbench dot: --seed: '0x40' is not a base-10 integer (digits only)\n");
  const Outcome samples = ampbench("audit --op dot --shape 8 --samples -1 --budgets none");
  EXPECT_EQ(samples.status, 2);
  EXPECT_EQ(samples.err, "ampbench audit: --samples: -1 is not in [0, 134217728]\n");
  const Outcome tolerance = ampbench("compare a.json b.json --tolerance nan");
  EXPECT_EQ(tolerance.status, 2);
  EXPECT_EQ(tolerance.err, "ampbench compare: --tolerance: nan is not a finite number\n");
}

TEST_F(OptionsCli, EmptyValuesAreRefusedNotTakenForTheDefault) {
  const std::string suite = write("s.toml",
                                  "name = \"s\"\n[[audit]]\nops = [\"dot\"]\n"
                                  "policies = [\"fp32\"]\n");
  const std::string result = write("r.json", "{}");
  const std::map<std::string, std::string> cases = {
      {"run " + suite + " --out ''", "run: --out"},
      {"run " + suite + " --history ''", "run: --history"},
      {"run ''", "run: suite"},
      {"report " + result + " --md ''", "report: --md"},
      {"report " + result + " --junit ''", "report: --junit"},
      {"report " + result + " --html ''", "report: --html"},
      {"merge " + result + " --out ''", "merge: --out"},
      {"compare '' " + result, "compare: base"},
      {"audit --op dot --policy ''", "audit: --policy"},
      {"audit --op dot --budgets ''", "audit: --budgets"},
      {"audit --op dot --json ''", "audit: --json"},
      {"audit --op dot --shape ''", "audit: --shape"},
      {"audit --op dot --mma ''", "audit: --mma"},
      {"audit --op ''", "audit: --op"},
      {"dot --format fp16 --inputs ''", "dot: --inputs"},
      {"dot --format fp16 --accumulate ''", "dot: --accumulate"},
      {"eval --op dot --inputs ''", "eval: --inputs"},
      {"policies --policy ''", "policies: --policy"},
      {"round --to ''", "round: --to"},
      {"train --targets ''", "train: --targets"},
      {"profile --trace ''", "profile: --trace"},
      {"fingerprint --arch ''", "fingerprint: --arch"},
      {"fingerprint --json ''", "fingerprint: --json"},
      {"history --op ''", "history: --op"},
      {"history --add ''", "history: --add"},
  };
  for (const auto& [args, named] : cases) {
    const Outcome run = ampbench(args, "1\n");
    EXPECT_EQ(run.status, 2) << args;
    EXPECT_EQ(run.err,
              "ampbench " + named + ": the value is empty (leave the option out for its default)\n")
        << args;
    EXPECT_EQ(run.out, "") << args;
  }
  EXPECT_FALSE(std::filesystem::exists("results/s")) << "run --out '' wrote the default directory";
}

TEST_F(OptionsCli, UserFormatsTakeEachKeyOnceAsAPlainInteger) {
  const std::map<std::string, std::string> cases = {
      {"user:p=11,p=12,emin=-14,emax=15",
       "ampbench round: --to: format 'user:p=11,p=12,emin=-14,emax=15': p is given twice\n"},
      {"user:p=11,emin=-14,emax=15,emax=16",
       "ampbench round: --to: format 'user:p=11,emin=-14,emax=15,emax=16': emax is given twice\n"},
      {"user:p=+11,emin=-14,emax=15",
       "ampbench round: --to: format 'user:p=+11,emin=-14,emax=15': 'p=+11' is not "
       "KEY=INTEGER\n"},
      {"'user:p= 11,emin=-14,emax=15'",
       "ampbench round: --to: format 'user:p= 11,emin=-14,emax=15': 'p= 11' is not "
       "KEY=INTEGER\n"},
      {"'user: p=11,emin=-14,emax=15'",
       "ampbench round: --to: format 'user: p=11,emin=-14,emax=15': unknown key ' p' (expected p, "
       "emin, emax, specials)\n"},
  };
  for (const auto& [format, message] : cases) {
    const Outcome run = ampbench("round --to " + format, "1\n");
    EXPECT_EQ(run.status, 2) << format;
    EXPECT_EQ(run.err, message) << format;
    EXPECT_EQ(run.out, "") << format;
  }
  EXPECT_EQ(ampbench("round --to user:p=11,emin=-14,emax=15", "1\n").status, 0);
}

TEST_F(OptionsCli, TensorCoreModelsOnlyOnOpsThatHaveOne) {
  const std::string ops_with_one =
      "(the ops with one: gemm, bmm, dot, gemm_backward_a, gemm_backward_b, conv2d, "
      "conv2d_backward_data, conv2d_backward_filter, linear)";
  const Outcome audit = ampbench("audit --op softmax --policy amp-fp16 --mma hopper");
  EXPECT_EQ(audit.status, 2);
  EXPECT_EQ(audit.err, "ampbench audit: --mma hopper: softmax has no Tensor Core model " +
                           ops_with_one + "\n");
  EXPECT_EQ(audit.out, "");
  const Outcome mixed = ampbench("audit --op gemm,layer_norm --policy amp-fp16 --mma hopper");
  EXPECT_EQ(mixed.status, 2);
  EXPECT_NE(mixed.err.find("--mma hopper: layer_norm has no Tensor Core model"), std::string::npos)
      << mixed.err;
  const std::string suite = write("mma.toml", R"(name = "mma"
[[audit]]
ops = ["gemm", "softmax"]
policies = ["amp-fp16"]
mma = "hopper"
)");
  const Outcome run = ampbench("run " + suite + " --out " + path("out") + " --history none");
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "ampbench run: " + suite +
                         ":5:7: [[audit]] mma: softmax has no Tensor Core model " + ops_with_one +
                         "\n");
  EXPECT_FALSE(std::filesystem::exists(path("out")));
  // Where there is one, it runs.
  EXPECT_EQ(
      ampbench("audit --op dot --shape 64 --policy amp-fp16 --mma hopper --budgets none").status,
      0);
}

TEST_F(OptionsCli, SuiteRunsHaveTheCommandLinesLimits) {
  const std::map<std::string, std::string> cases = {
      {"[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nbatch = 100000000\n",
       ":5:9: [[train]] batch: 100000000 is not in [1, 65536]"},
      {"[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nbatch = 4097\n",
       ":5:9: [[train]] batch: 4097 is more than the 4096 samples of the training split (the data "
       "set less the 512 held out)"},
      {"[[train]]\nmodel = \"cnn\"\npolicies = [\"fp32\"]\nbatch = 2049\n",
       ":5:9: [[train]] batch: 2049 is more than the 2048 samples of the training split (the data "
       "set less the 512 held out)"},
      {"[[train]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nsteps = 100001\n",
       ":5:9: [[train]] steps: 100001 is not in [1, 100000]"},
      {"[[profile]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nbatch = 4609\n",
       ":5:9: [[profile]] batch: 4609 is more than the 4608 samples of the data set"},
      {"[[profile]]\nmodel = \"mlp\"\npolicies = [\"fp32\"]\nwarmup = 100001\n",
       ":5:10: [[profile]] warmup: 100001 is not in [0, 100000]"},
  };
  for (const auto& [table, message] : cases) {
    const std::string suite = write("limits.toml", "name = \"limits\"\n" + table);
    const Outcome run = ampbench("run " + suite + " --out " + path("out") + " --history none");
    EXPECT_EQ(run.status, 2) << table;
    EXPECT_EQ(run.err, "ampbench run: " + suite + message + "\n") << table;
    EXPECT_FALSE(std::filesystem::exists(path("out"))) << table;
  }
  // At the limit, the suite is taken (and the batch of 4608 fits the profile's whole set).
  const std::string fits = write("fits.toml", R"(name = "fits"
[[profile]]
model = "mlp"
policies = ["fp32"]
steps = 1
warmup = 0
batch = 4608
)");
  const Outcome run = ampbench("run " + fits + " --out " + path("fits") + " --history none");
  EXPECT_EQ(run.status, 0) << run.out << run.err;
}

}  // namespace
