// End-to-end tests of what ampbench reads and writes (issue 21): standard output that fails (a
// closed descriptor, a full disk, a reader that goes away) is reported and loses no file; an
// output that is an input or another output is refused before any work; inputs that are not files
// or not valid say so briefly; budgets cannot be switched off silently; `round` rounds from the
// exact text; a run that stops leaves a record that says it is partial, and merge, report and
// history say so or refuse it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::shell;
using ampbench::cli::test::slurp;

class IoCli : public ampbench::cli::test::TempDirTest {
 protected:
  nlohmann::json json(const std::string& name) const {
    return nlohmann::json::parse(slurp(path(name)));
  }
  // A complete result record of the suite kQuick (two cases), run once per test that needs one.
  std::string result() {
    const std::string out = path("result");
    if (!std::filesystem::exists(out + "/result.json")) {
      const Outcome run =
          ampbench("run " + write("quick.toml", kQuick) + " --out " + out + " --history none");
      EXPECT_EQ(run.status, 0) << run.out << run.err;
    }
    return out + "/result.json";
  }

  static constexpr const char* kQuick = R"(name = "quick"
[[audit]]
ops = ["add", "mul"]
shapes = ["4x8"]
policies = ["fp32"]
)";
};

// Bad input: status 2, the message on standard error, nothing on standard output.
void expect_bad_input(const std::string& args, const std::string& message,
                      const std::string& input = "") {
  const Outcome run = ampbench(args, input);
  EXPECT_EQ(run.status, 2) << args << "\n" << run.err;
  EXPECT_NE(run.err.find(message), std::string::npos) << args << "\n" << run.err;
  EXPECT_EQ(run.out, "") << args;
}

// ---- standard output ----------------------------------------------------------------------------

TEST_F(IoCli, AClosedStandardOutputIsReportedAndNoFileLandsOnIt) {
  // Closed at start-up, descriptor 1 would be the next file opened: the --json temporary, which
  // the table written to std::cout would then corrupt.
  const Outcome run =
      shell("$AMPBENCH audit --op add --shape 4x8 --policy fp32,fp16 --budgets none --json " +
            path("a.json") + " >&- 2>err; echo $? >status");
  EXPECT_EQ(run.status, 4) << run.err;
  EXPECT_EQ(run.err, "ampbench: standard output: it was closed when ampbench started\n");
  const auto audit = json("a.json");
  EXPECT_EQ(audit["expected"], 2);
  EXPECT_EQ(audit["complete"], true);
  EXPECT_EQ(audit["cases"].size(), 2u);
}

TEST_F(IoCli, AFullDiskIsReportedAndAFailingCommandKeepsItsStatus) {
  const Outcome formats = shell("$AMPBENCH formats >/dev/full 2>err; echo $? >status");
  EXPECT_EQ(formats.status, 4);
  EXPECT_EQ(formats.err, "ampbench: standard output: No space left on device\n");
  // The bad line is the command's own failure: its status (2), and both messages.
  const Outcome round =
      shell("printf '1\\nbanana\\n' | $AMPBENCH round --to fp16 >/dev/full 2>err; echo $? >status");
  EXPECT_EQ(round.status, 2);
  EXPECT_NE(round.err.find("line 2: 'banana' is not a number"), std::string::npos) << round.err;
  EXPECT_NE(round.err.find("ampbench: standard output: No space left on device"), std::string::npos)
      << round.err;
}

// The reader goes away before anything is written (`| true` after a second): every write to
// standard output fails with EPIPE. Each command still does all its work and writes its files,
// then exits 4 saying the output was lost; none dies of SIGPIPE (141).
TEST_F(IoCli, CommandsWhoseReaderWentAwayStillWriteTheirFiles) {
  const std::string suite = write("quick.toml", kQuick);
  const Outcome run = shell(
      "{ sleep 1;"
      " $AMPBENCH run " +
          suite + " --out " + path("r") + " --history " + path("h.sqlite") +
          " 2>err; echo $? >status;"
          " $AMPBENCH audit --op add --shape 4x8 --budgets none --json " +
          path("a.json") +
          " 2>err.audit; echo $? >status.audit;"
          " $AMPBENCH train --steps 2 --batch 8 --policy fp32 --json " +
          path("t.json") +
          " 2>err.train; echo $? >status.train;"
          " $AMPBENCH profile --steps 1 --warmup 0 --batch 8 --policy fp32 --trace " +
          path("trace.json") + " --json " + path("p.json") +
          " 2>err.profile; echo $? >status.profile;"
          " $AMPBENCH fingerprint --backend cpu --preset hopper-fp16 --json " +
          path("f.json") +
          " 2>err.fingerprint; echo $? >status.fingerprint; } | true; "
          "cat err.audit err.train err.profile err.fingerprint >>err;"
          " cat status.audit status.train status.profile status.fingerprint >out",
      120);
  EXPECT_EQ(run.status, 4) << run.err;
  EXPECT_EQ(run.out, "4\n4\n4\n4\n") << run.err;
  EXPECT_NE(run.err.find("ampbench: standard output: Broken pipe"), std::string::npos) << run.err;
  const auto record = json("r/result.json");
  EXPECT_EQ(record["complete"], true);
  EXPECT_EQ(record["records"].size(), 2u);
  const Outcome runs = ampbench("history --runs --db " + path("h.sqlite"));
  EXPECT_EQ(runs.status, 0) << runs.err;
  EXPECT_NE(runs.out.find(": 1 run(s)"), std::string::npos) << runs.out;
  EXPECT_EQ(json("a.json")["complete"], true);
  EXPECT_EQ(json("t.json")["schema"], "ampbench.train/1");
  EXPECT_TRUE(json("p.json").is_object());
  EXPECT_TRUE(json("trace.json").contains("traceEvents"));
  EXPECT_TRUE(json("f.json").is_object());
}

// A filter stops when its reader goes away instead of reading an endless input for nothing.
TEST_F(IoCli, AFilterStopsWhenItsReaderGoesAway) {
  const Outcome round =
      shell("yes 1 | { $AMPBENCH round --to fp16 2>err; echo $? >status; } | head -1 >out", 60);
  EXPECT_EQ(round.status, 4) << round.err;
  EXPECT_EQ(round.out, "1\t0x1p+0\t0x3c00\texact\n");
  EXPECT_EQ(round.err, "ampbench: standard output: Broken pipe\n");
  const Outcome scaler =
      shell("yes ok | { $AMPBENCH scaler 2>err; echo $? >status; } | head -1 >out", 60);
  EXPECT_EQ(scaler.status, 4) << scaler.err;
  EXPECT_EQ(scaler.out, "# step\tfound_inf\tscale\tskipped\tscale_after\tgrowth_tracker\n");
}

// ---- outputs: none is an input or another output ------------------------------------------------

TEST_F(IoCli, AnOutputThatIsAnInputOrAnotherOutputIsRefusedBeforeAnyWork) {
  const std::string r = result();
  const std::string before = slurp(r);
  const std::string x = path("x.md");
  std::filesystem::create_symlink(r, path("link.json"));
  const std::string budgets = write("b.toml", "");
  const std::string data = write("d.csv", "1,2,0\n3,4,1\n");
  const std::string wal = path("h.sqlite-wal");
  std::filesystem::copy_file(r, wal);
  expect_bad_input("report " + r + " --md " + r, "ampbench report: --md " + r +
                                                     ": the same file as the result file " + r +
                                                     "; an output never replaces an input");
  expect_bad_input("report " + r + " --md " + path("link.json"),
                   "--md " + path("link.json") + ": the same file as the result file " + r);
  expect_bad_input("report " + r + " --html " + x + " --md " + x,
                   "ampbench report: --html " + x + " and --md " + x +
                       ": the same file; give each output its own");
  expect_bad_input("profile --trace " + x + " --json " + x,
                   "ampbench profile: --trace " + x + " and --json " + x + ": the same file");
  expect_bad_input("merge " + r + " --out " + r,
                   "ampbench merge: --out " + r + ": the same file as the shard " + r);
  expect_bad_input("history --add " + r + " --db " + r,
                   "ampbench history: --db " + r + ": the same file as --add " + r);
  expect_bad_input("history --add " + wal + " --db " + path("h.sqlite"),
                   "ampbench history: --db " + path("h.sqlite") + " (its journal " + wal +
                       "): the same file as --add " + wal);
  expect_bad_input("audit --op add --budgets " + budgets + " --json " + budgets,
                   "ampbench audit: --json " + budgets + ": the same file as --budgets " + budgets);
  expect_bad_input("train --data " + data + " --json " + data,
                   "ampbench train: --json " + data + ": the same file as --data " + data);
  expect_bad_input("run " + write("quick.toml", kQuick) + " --out " + path("r2") + " --history " +
                       path("r2/result.json"),
                   "ampbench run: the result record " + path("r2/result.json") + " and --history " +
                       path("r2/result.json") + ": the same file");
  expect_bad_input("audit --op add --json " + dir_.string(),
                   "ampbench audit: --json " + dir_.string() + ": is a directory");
  expect_bad_input("fingerprint --backend cpu --preset hopper-fp16 --json /dev/null",
                   "ampbench fingerprint: --json /dev/null: is not a regular file (a character "
                   "device; an output is written as a new file)");
  EXPECT_EQ(slurp(r), before);
  EXPECT_FALSE(std::filesystem::exists(x));
  EXPECT_FALSE(std::filesystem::exists(path("h.sqlite")));
  EXPECT_EQ(slurp(budgets), "");
}

// ---- inputs
// ---------------------------------------------------------------------------------------

TEST_F(IoCli, AnInputThatIsNotAReadableFileSaysWhy) {
  const std::string r = result();
  const std::string dir = dir_.string();
  expect_bad_input("compare " + r + " " + dir, "ampbench compare: " + dir + ": is a directory");
  expect_bad_input("compare " + r + " /proc/self/mem",
                   "ampbench compare: /proc/self/mem: cannot read: Input/output error");
  expect_bad_input("compare " + r + " /dev/zero",
                   "ampbench compare: /dev/zero: is not a regular file (a character device)");
  expect_bad_input("report " + dir, "ampbench report: " + dir + ": is a directory");
  expect_bad_input("merge " + dir + " --out " + path("m.json"),
                   "ampbench merge: " + dir + ": is a directory");
  expect_bad_input("history --add " + dir + " --db " + path("h.sqlite"),
                   "ampbench history: " + dir + ": is a directory");
  expect_bad_input("run " + dir, "ampbench run: " + dir + ": is a directory");
  expect_bad_input("dot --format fp16 --inputs " + dir,
                   "ampbench dot: --inputs " + dir + ": is a directory");
  expect_bad_input("eval --op add --inputs " + dir,
                   "ampbench eval: --inputs " + dir + ": is a directory");
  expect_bad_input("policies --policy " + dir + "/",
                   "ampbench policies: --policy: " + dir + "/: is a directory");
  expect_bad_input("train --data /proc/self/mem",
                   "ampbench train: --data: /proc/self/mem: cannot read: Input/output error");
  const Outcome dist = ampbench("audit --op add --dist file:" + dir + "/x.npy");
  EXPECT_EQ(dist.status, 2);
  EXPECT_NE(dist.err.find(dir + "/x.npy: cannot open: No such file or directory"),
            std::string::npos)
      << dist.err;
  // A directory on standard input is a read error, not an empty input.
  const Outcome dot = shell("$AMPBENCH dot --format fp16 <" + dir + " >out 2>err; echo $? >status");
  EXPECT_EQ(dot.status, 2);
  EXPECT_EQ(dot.err, "ampbench dot: standard input: cannot read: Is a directory\n");
  const Outcome round = shell("$AMPBENCH round --to fp16 <" + dir + " >out 2>err; echo $? >status");
  EXPECT_EQ(round.status, 2);
  EXPECT_EQ(round.err, "ampbench round: standard input: cannot read: Is a directory\n");
}

TEST_F(IoCli, NumbersBeyondBinary64InJsonAreNamedNotCrashes) {
  auto record = nlohmann::json::parse(slurp(result()));
  std::string text = record.dump();
  text.replace(text.find("\"seconds\":") + 10, 0, "1e400, \"x\": ");
  const std::string huge = write("huge.json", text);
  const Outcome compare = ampbench("compare " + result() + " " + huge);
  EXPECT_EQ(compare.status, 2) << compare.err;
  EXPECT_NE(compare.err.find("ampbench compare: " + huge + ": line 1, column "), std::string::npos)
      << compare.err;
  EXPECT_NE(compare.err.find(": the number 1e400 is beyond the range of a binary64 (about "
                             "1.8e308)\n"),
            std::string::npos)
      << compare.err;
  const std::string digits(1000, '9');
  const std::string integer = write("integer.json", "{\"schema\": " + digits + "}");
  expect_bad_input("report " + integer,
                   "ampbench report: " + integer + ": line 1, column 12: the number " +
                       digits.substr(0, 60) + "… is beyond the range of a binary64");
  // Where numbers are read from their text, written as a string the number is read exactly.
  expect_bad_input("dot --format fp16",
                   "ampbench dot: <stdin>: line 1, column 8: the number 1e400 "
                   "is beyond the range of a binary64 (about 1.8e308); as a string, \"1e400\", "
                   "it is rounded from its exact value",
                   R"({"a": [1e400], "b": [1]})");
  const Outcome exact = ampbench("dot --format fp16", R"({"a": ["1e400"], "b": [1]})");
  EXPECT_EQ(exact.status, 0) << exact.err;
}

TEST_F(IoCli, ABadLineIsQuotedBriefly) {
  const std::string line(1 << 20, 'x');  // a megabyte: echoed whole it would be the message
  const std::string quoted = "'" + std::string(60, 'x') + "…'";
  const struct {
    std::string args;
    std::string input;
    std::string quoted;
  } cases[] = {
      {"round --to fp16", line + "\n", quoted},
      {"scaler", line + "\n", quoted},
      {"dot --format fp16", R"({"a": [")" + line + R"("], "b": [1]})", quoted},
      // nlohmann's 'last read': an unterminated string.
      {"dot --format fp16", R"({"a": [")" + line, "'\"" + std::string(59, 'x') + "…'"},
      {"eval --op add --inputs /dev/stdin", R"({"a": [")" + line + R"("], "b": [1]})", quoted},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args, c.input);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_LT(run.err.size(), 400u) << c.args << "\n" << run.err.substr(0, 400);
    EXPECT_NE(run.err.find(c.quoted), std::string::npos) << c.args << "\n"
                                                         << run.err.substr(0, 400);
  }
}

// ---- budgets cannot be switched off silently
// -----------------------------------------------------

TEST_F(IoCli, BudgetGatesCannotBeSwitchedOffSilently) {
  const std::string dir = dir_.string();
  expect_bad_input("audit --op add --budgets " + dir,
                   "ampbench audit: --budgets: " + dir + ": is a directory");
  const auto budget = [&](const std::string& name, const std::string& op, const std::string& limit,
                          const std::string& policy = "fp32") {
    return write(name, "[[budget]]\nop = \"" + op + "\"\npolicy = \"" + policy +
                           "\"\nmetric = \"max_ulp\"\nlimit = " + limit + "\nsource = \"x\"\n");
  };
  const std::string nan = budget("nan.toml", "add", "nan");
  expect_bad_input("audit --op add --budgets " + nan,
                   "ampbench audit: --budgets: " + nan + ":5:9: limit nan is not a finite number");
  const std::string misspelt = budget("op.toml", "gemmm", "4");
  expect_bad_input("audit --op add --budgets " + misspelt,
                   "ampbench audit: --budgets: " + misspelt +
                       ":2:6: op 'gemmm' is no op of the catalog (known: gemm, ");
  const std::string policy = budget("policy.toml", "add", "4", "fp61");
  expect_bad_input("audit --op add --budgets " + policy, "ampbench audit: --budgets: " + policy +
                                                             ":1:1: policy 'fp61' is no policy of "
                                                             "this run");
  // A suite's budgets: a directory is an error at the key, with its line and column.
  const std::string suite =
      write("s.toml",
            "name = \"s\"\nbudgets = \".\"\n[[audit]]\nops = [\"add\"]\npolicies = "
            "[\"fp32\"]\n");
  const Outcome run = ampbench("run " + suite + " --out " + path("r") + " --history none");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(suite + ":2:11: budgets: " + dir + "/.: is a directory"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(path("r")));
  // Suite errors name the line and the column.
  const std::string typo = write("typo.toml", "name = \"t\"\n[[audit]]\n  opz = [\"add\"]\n");
  expect_bad_input("run " + typo, typo + ":3:9: [[audit]] opz: unknown key");
}

// ---- round from the exact text
// -------------------------------------------------------------------

// Each expected result is derived by hand from the exact decimal or hex value (no binary64 step):
// fp16 has p = 11, emin = -14, largest finite 65504 = 0x1.ffcp+15, smallest subnormal 2^-24;
// fp32 has p = 24 and smallest subnormal 2^-149.
TEST_F(IoCli, RoundRoundsFromTheExactText) {
  const struct {
    std::string args;
    std::string input;
    std::string output;
  } cases[] = {
      // 1e400 is finite and beyond 65504: toward zero gives the largest finite value, an overflow
      // clamped to it, event saturation (read as binary64 it was inf, "exact").
      {"--to fp16 --mode rz", "1e400", "1e400\t0x1.ffcp+15\t0x7bff\tsaturation"},
      {"--to fp16 --mode rz", "-1e400", "-1e400\t-0x1.ffcp+15\t0xfbff\tsaturation"},
      {"--to fp16 --mode rd", "-1e400", "-1e400\t-inf\t0xfc00\toverflow"},
      // 2^-1080 > 0 lies below half the smallest subnormal: upward gives 2^-24, to nearest 0, a
      // nonzero value flushed (read as binary64 it was 0, "exact").
      {"--to fp16 --mode ru", "0x1p-1080", "0x1p-1080\t0x1p-24\t0x0001\tunderflow"},
      {"--to fp16 --mode rne", "0x1p-1080", "0x1p-1080\t0x0p+0\t0x0000\tflush_to_zero"},
      {"--to fp32 --mode ru", "1e-400", "1e-400\t0x1p-149\t0x00000001\tunderflow"},
      // 65520 - 1e-20 is below the overflow threshold 65520 (half an ulp above 65504): it rounds
      // to 65504. Its nearest binary64 is 65520 itself, which overflows.
      {"--to fp16", "65519.99999999999999999999",
       "65519.99999999999999999999\t0x1.ffcp+15\t0x7bff\t"
       "inexact"},
      // 1 + 2^-11 + 1e-26 is just above the midpoint of 1 and 1 + 2^-10: up. Its nearest binary64
      // is the midpoint, which ties to even, 1.
      {"--to fp16", "1.00048828125000000000000001",
       "1.00048828125000000000000001\t0x1.004p+0\t0x3c01\tinexact"},
      // 2^-25 (1 + 2^-80) is just above half the smallest subnormal: 2^-24. Its nearest binary64
      // is 2^-25, which ties to even, 0.
      {"--to fp16", "0x1.00000000000000000001p-25",
       "0x1.00000000000000000001p-25\t0x1p-24\t0x0001\tunderflow"},
      // Values of the format are exact whatever their spelling.
      {"--to fp16", "65504.000000000000000000000",
       "65504.000000000000000000000\t0x1.ffcp+15\t"
       "0x7bff\texact"},
      {"--to fp16", "-nan", "-nan\t-nan\t0xfe00\tnan"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench("round " + c.args, c.input + "\n");
    EXPECT_EQ(run.status, 0) << c.args << " " << c.input << "\n" << run.err;
    EXPECT_EQ(run.out, c.output + "\n") << c.args << " " << c.input;
  }
}

// ---- partial records
// ------------------------------------------------------------------------------

// A run killed after its first case: its record says it is partial and which cases it lacks;
// report shows it, JUnit has an error per missing case, history --add and merge refuse it unless
// told, and then flag it.
TEST_F(IoCli, AKilledRunLeavesARecordThatSaysItIsPartial) {
  const std::string suite = write("slow.toml", std::string(kQuick) + R"(
[[train]]
model = "mlp"
policies = ["fp32"]
steps = 400
batch = 8
)");
  const std::string r = path("r/result.json");
  const Outcome killed = shell("$AMPBENCH run " + suite + " --out " + path("r") +
                                   " --history none >out 2>err &\n"
                                   "pid=$!\n"
                                   "until grep -q '\"key\": \"audit/mul' " +
                                   r +
                                   " 2>/dev/null; do sleep 0.05; done\n"
                                   "kill -9 $pid; wait $pid; echo $? >status\n",
                               120);
  ASSERT_EQ(killed.status, 137) << killed.out << killed.err;
  const auto record = json("r/result.json");
  EXPECT_EQ(record["complete"], false);
  EXPECT_EQ(record["expected"]["cases"], 3);
  EXPECT_EQ(record["records"].size(), 2u);
  EXPECT_EQ(record["missing"], nlohmann::json::array({"train/mlp/steps=400/seed=1/batch=8"}));

  const Outcome report = ampbench("report " + r + " --junit " + path("junit.xml"));
  EXPECT_EQ(report.status, 0) << report.err;
  const Outcome md = ampbench("report " + r);
  EXPECT_NE(md.out.find("(shard 0/1) — PARTIAL RUN — "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("**PARTIAL: 2 of 3 cases ran, 1 missing: "
                        "train/mlp/steps=400/seed=1/batch=8**"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("2 case(s), 0 failed, 1 not run (the run stopped before them)."),
            std::string::npos)
      << md.out;
  const std::string junit = slurp(path("junit.xml"));
  EXPECT_NE(junit.find("<testsuites tests=\"3\" failures=\"0\" errors=\"1\">"), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"ampbench.train\" "
                       "name=\"train/mlp/steps=400/seed=1/batch=8\" time=\"0\">\n      <error "
                       "message=\"not run: the run stopped before this case (a partial "
                       "record)\"/>"),
            std::string::npos)
      << junit;

  expect_bad_input("history --add " + r + " --db " + path("h.sqlite"),
                   "ampbench history: " + r + ": a partial run (PARTIAL: 2 of 3 cases ran");
  EXPECT_FALSE(std::filesystem::exists(path("h.sqlite")));
  const Outcome added = ampbench("history --add " + r + " --partial --db " + path("h.sqlite"));
  EXPECT_EQ(added.status, 0) << added.err;
  EXPECT_NE(added.out.find("(suite quick, shard 0/1, 2 record(s) of 3, PARTIAL)"),
            std::string::npos)
      << added.out;
  const Outcome runs = ampbench("history --runs --db " + path("h.sqlite"));
  EXPECT_NE(runs.out.find("(PARTIAL: the run stopped)"), std::string::npos) << runs.out;

  expect_bad_input("merge " + r + " --out " + path("m.json"),
                   "ampbench merge: " + r +
                       " (shard 0/1) stopped early: 2 of 3 cases ran, "
                       "missing: train/mlp/steps=400/seed=1/batch=8");
  EXPECT_FALSE(std::filesystem::exists(path("m.json")));
  const Outcome merged = ampbench("merge " + r + " --partial --out " + path("m.json"));
  EXPECT_EQ(merged.status, 0) << merged.err;
  EXPECT_NE(merged.out.find("(PARTIAL: 1 shard(s) stopped early; 1 case(s) missing: "
                            "train/mlp/steps=400/seed=1/batch=8)"),
            std::string::npos)
      << merged.out;
  EXPECT_EQ(json("m.json")["complete"], false);
  EXPECT_EQ(json("m.json")["missing"].size(), 1u);
}

// Shards merge in the suite's order; a shard that stopped early is refused with its missing
// cases; a missing shard's cases are named; records from before keep merging, said to be of
// unknown completeness.
TEST_F(IoCli, MergeRefusesAnIncompleteSuiteUnlessPartial) {
  const std::string suite = write("three.toml", R"(name = "three"
[[audit]]
ops = ["add", "mul", "relu", "gelu", "silu"]
shapes = ["4x8"]
policies = ["fp32"]
)");
  for (const char* shard : {"0", "1"}) {
    ASSERT_EQ(ampbench("run " + suite + " --shard " + shard + "/2 --out " + path(shard) +
                       " --history none")
                  .status,
              0);
  }
  const std::string s0 = path("0/result.json");
  const std::string s1 = path("1/result.json");
  const Outcome whole = ampbench("merge " + s1 + " " + s0 + " --out " + path("m.json"));
  ASSERT_EQ(whole.status, 0) << whole.err;
  const auto merged = json("m.json");
  EXPECT_EQ(merged["complete"], true);
  EXPECT_EQ(merged["expected"]["cases"], 5);
  std::vector<std::string> keys;
  for (const auto& r : merged["records"]) keys.push_back(r["key"]);
  EXPECT_EQ(keys, merged["expected"]["keys"].get<std::vector<std::string>>());
  EXPECT_EQ(keys[1], "audit/mul/4x8/fp32/normal/seed=1");

  // Shard 0 stopped after its first case (cases 0, 2, 4 of the suite: add, relu, silu).
  auto partial = json("0/result.json");
  auto& records = partial["records"];
  records.erase(records.begin() + 1, records.end());
  partial["complete"] = false;
  const std::string p0 = write("p0.json", partial.dump());
  expect_bad_input(
      "merge " + p0 + " " + s1 + " --out " + path("p.json"),
      "ampbench merge: " + p0 +
          " (shard 0/2) stopped early: 1 of 3 cases ran, "
          "missing: audit/relu/4x8/fp32/normal/seed=1, audit/silu/4x8/fp32/normal/seed=1");
  expect_bad_input("merge " + s1 + " --out " + path("p.json"),
                   "ampbench merge: the suite is incomplete; 3 case(s) missing: "
                   "audit/add/4x8/fp32/normal/seed=1, audit/relu/4x8/fp32/normal/seed=1, "
                   "audit/silu/4x8/fp32/normal/seed=1; give every shard's complete result");
  ASSERT_EQ(ampbench("merge " + p0 + " " + s1 + " --partial --out " + path("p.json")).status, 0);
  const auto p = json("p.json");
  EXPECT_EQ(p["complete"], false);
  EXPECT_EQ(p["missing"], nlohmann::json::array({"audit/relu/4x8/fp32/normal/seed=1",
                                                 "audit/silu/4x8/fp32/normal/seed=1"}));
  EXPECT_EQ(p["records"].size(), 3u);
  // A record that says it is complete but lacks a case is refused as it is read.
  partial["complete"] = true;
  const std::string liar = write("liar.json", partial.dump());
  expect_bad_input("report " + liar, liar +
                                         ": not an ampbench.result/1 record: complete is true, "
                                         "but 2 expected case(s) have no record");

  // Records from before these members: merged as before, with a note; report says so.
  for (const char* name : {"0", "1"}) {
    auto old = json(std::string(name) + "/result.json");
    for (const char* member : {"expected", "complete", "missing"}) old.erase(member);
    write(std::string("old") + name + ".json", old.dump());
  }
  const Outcome old =
      ampbench("merge " + path("old0.json") + " " + path("old1.json") + " --out " + path("o.json"));
  EXPECT_EQ(old.status, 0) << old.err;
  EXPECT_NE(old.err.find("note: " + path("old0.json") + " does not say which cases it expects"),
            std::string::npos)
      << old.err;
  EXPECT_FALSE(json("o.json").contains("complete"));
  EXPECT_EQ(json("o.json")["records"].size(), 5u);
  const Outcome md = ampbench("report " + path("o.json"));
  EXPECT_NE(md.out.find("completeness unknown (a record from before ampbench recorded which "
                        "cases a run expects)"),
            std::string::npos)
      << md.out;
}

// A partial record added while the run goes on is replaced by the run's complete record; the run
// says so (and "History: run N" only when it added the run).
TEST_F(IoCli, TheCompleteRunReplacesItsPartialRecordInTheHistory) {
  const std::string suite = write("slow.toml", std::string(kQuick) + R"(
[[train]]
model = "mlp"
policies = ["fp32"]
steps = 10
batch = 8
)");
  const std::string r = path("r/result.json");
  const std::string db = path("h.sqlite");
  const Outcome run = shell("$AMPBENCH run " + suite + " --out " + path("r") + " --history " + db +
                                " >out 2>err &\n"
                                "pid=$!\n"
                                "until grep -q '\"key\": \"audit/mul' " +
                                r +
                                " 2>/dev/null; do sleep 0.05; done\n"
                                "$AMPBENCH history --add " +
                                r + " --partial --db " + db +
                                " >>err 2>&1\n"
                                "wait $pid; echo $? >status\n",
                            120);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("PARTIAL"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("History: run 1 in " + db +
                         " (replacing the partial record of this run added before)"),
            std::string::npos)
      << run.out;
  const Outcome runs = ampbench("history --runs --db " + db);
  EXPECT_NE(runs.out.find(": 1 run(s)"), std::string::npos) << runs.out;
  EXPECT_EQ(runs.out.find("PARTIAL"), std::string::npos) << runs.out;
  // Added again: not added, and said so.
  const Outcome again = ampbench("history --add " + r + " --db " + db);
  EXPECT_NE(again.out.find("already recorded as run 1"), std::string::npos) << again.out;
}

// A user who may read the history but not write it (nor its directory) can still query it.
TEST_F(IoCli, AHistoryTheUserCannotWriteIsReadAsImmutable) {
  const std::string db = path("h/history.sqlite");
  std::filesystem::create_directories(path("h"));
  ASSERT_EQ(ampbench("history --add " + result() + " --db " + db).status, 0);
  std::filesystem::permissions(path("h"), std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::remove);
  std::filesystem::permissions(db, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::remove);
  // Root may write anything: run the query as nobody.
  const std::string as_user =
      getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const Outcome query =
      shell(as_user + "$AMPBENCH history --runs --db " + db + " >out 2>err; echo $? >status");
  std::filesystem::permissions(path("h"), std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(query.status, 0) << query.err;
  EXPECT_NE(query.out.find(": 1 run(s)"), std::string::npos) << query.out << query.err;
  EXPECT_NE(query.err.find("note: " + db + ": read as immutable"), std::string::npos) << query.err;
}

}  // namespace
