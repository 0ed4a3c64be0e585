// End-to-end tests of `ampbench history` and of `ampbench run` recording its runs: a suite run
// twice seen as two runs with the change between them, result files added once, a history that
// fails after the run (the result survives), and every way the input can be wrong (exit 2, a
// message naming the input, nothing written).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "harness/cli/test/run_ampbench.hpp"

namespace {

using ampbench::cli::test::ampbench;
using ampbench::cli::test::Outcome;
using ampbench::cli::test::slurp;

constexpr const char* kTiny = R"(name = "tiny"
seed = 3
[[audit]]
ops = ["dot", "sum"]
shapes = ["16"]
policies = ["fp16"]
[[train]]
model = "mlp"
policies = ["fp32", "amp-fp16"]
steps = 2
batch = 8
)";

class HistoryCli : public ampbench::cli::test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::filesystem::create_directories(dir_ / "results");
    suite_ = write("tiny.toml", kTiny);
  }

  // A run of the tiny suite into results/NAME.
  Outcome run(const std::string& name, const std::string& options = "") const {
    return ampbench("run " + suite_ + " --out " + path("results/" + name) + " " + options);
  }
  nlohmann::json query(const std::string& options) const {
    const Outcome outcome = ampbench("history --json " + options);
    EXPECT_EQ(outcome.status, 0) << options << "\n" << outcome.err;
    return nlohmann::json::parse(outcome.out);
  }

  std::string suite_;
};

TEST_F(HistoryCli, EveryRunIsRecordedNextToItsResults) {
  const std::string db = path("results/history.sqlite");
  const Outcome first = run("tiny");
  ASSERT_EQ(first.status, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("History: run 1 in " + db), std::string::npos) << first.out;
  const Outcome second = run("tiny");
  ASSERT_EQ(second.status, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("History: run 2 in " + db), std::string::npos) << second.out;

  const auto runs = query("--db " + db + " --runs")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["suite"], "tiny");
  EXPECT_EQ(runs[0]["records"], 3);
  EXPECT_EQ(runs[0]["failed"], 0);
  EXPECT_EQ(runs[1]["source"], path("results/tiny/result.json"));
  EXPECT_LT(runs[0]["started"].get<std::string>(), runs[1]["started"].get<std::string>());
  const auto result = nlohmann::json::parse(slurp(path("results/tiny/result.json")));
  EXPECT_EQ(runs[1]["started"], result["environment"]["started"]);
  EXPECT_EQ(runs[1]["git_revision"], result["environment"]["git_revision"]);
  EXPECT_EQ(runs[1]["device"],
            "CPU emulation on " + result["environment"]["cpu"].get<std::string>());

  // By default: each audit case's normwise error and each policy's eval-loss error, per run.
  const auto series = query("--db " + db)["series"];
  ASSERT_EQ(series.size(), 2u * (2 + 2));
  for (std::size_t i = 0; i < series.size(); i += 2) {
    EXPECT_EQ(series[i]["key"], series[i + 1]["key"]);
    EXPECT_EQ(series[i]["run"], 1);
    EXPECT_TRUE(series[i]["previous"].is_null());
    EXPECT_EQ(series[i + 1]["run"], 2);
    // The suite is deterministic: the same value, no change.
    EXPECT_EQ(series[i + 1]["previous"], series[i]["value"]);
    EXPECT_EQ(series[i + 1]["change"], 0.0);
  }
  const auto dot_ulps = query("--db " + db + " --op dot --metric max_ulp --last 1")["series"];
  ASSERT_EQ(dot_ulps.size(), 1u);
  EXPECT_EQ(dot_ulps[0]["key"], "audit/dot/16/fp16/normal/seed=3");
  EXPECT_EQ(dot_ulps[0]["run"], 2);
  EXPECT_EQ(dot_ulps[0]["value"], result["records"][0]["metrics"]["max_ulp"]);
  const auto amp = query("--db " + db + " --model mlp --policy amp-fp16")["series"];
  ASSERT_EQ(amp.size(), 2u);
  EXPECT_EQ(amp[0]["metric"], "amp-fp16.eval_loss_error");

  const Outcome table = ampbench("history --db " + db + " --key sum/16");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("2 value(s) of 1 case(s) in 2 run(s)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("normwise_rel_error            audit/sum/16/fp16/normal/seed=3"),
            std::string::npos)
      << table.out;
  const Outcome none = ampbench("history --db " + db + " --op softmax");
  EXPECT_EQ(none.status, 0);
  EXPECT_NE(none.out.find("No recorded value matches these filters"), std::string::npos)
      << none.out;

  // Elsewhere on request, or nowhere.
  ASSERT_EQ(run("other", "--history " + path("mine.sqlite")).status, 0);
  EXPECT_EQ(query("--db " + path("mine.sqlite") + " --runs")["runs"].size(), 1u);
  ASSERT_EQ(run("third", "--history none").status, 0);
  EXPECT_EQ(query("--db " + db + " --runs")["runs"].size(), 2u);
}

TEST_F(HistoryCli, AnEmptyHistorySaysSo) {
  ASSERT_EQ(run("empty", "--shard 7/8").status, 0);  // a shard without cases
  const Outcome outcome = ampbench("history --db " + path("results/history.sqlite"));
  EXPECT_EQ(outcome.status, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("0 value(s) of 0 case(s) in 0 run(s)\nNo value is recorded yet"),
            std::string::npos)
      << outcome.out;
}

TEST_F(HistoryCli, ResultFilesFromElsewhereAreAddedOnce) {
  ASSERT_EQ(run("tiny", "--history none").status, 0);
  EXPECT_FALSE(std::filesystem::exists(path("results/history.sqlite")));
  const std::string result = path("results/tiny/result.json");
  auto other = nlohmann::json::parse(slurp(result));
  other["environment"]["hostname"] = "gpu-node-7";
  other["environment"]["git_revision"] = "v0.2-1-g1234abcd-dirty";
  other["shard"] = "1/4";
  auto& dot_error = other["records"][0]["metrics"]["normwise_rel_error"];
  dot_error = dot_error.get<double>() * 1.5;
  const std::string elsewhere = write("elsewhere.json", other.dump());
  const std::string db = path("h.sqlite");

  const Outcome added = ampbench("history --add " + result + " " + elsewhere + " --db " + db);
  ASSERT_EQ(added.status, 0) << added.err;
  EXPECT_NE(added.out.find(result + ": recorded as run 1 (suite tiny, shard 0/1, 3 record(s))"),
            std::string::npos)
      << added.out;
  EXPECT_NE(added.out.find(elsewhere + ": recorded as run 2 (suite tiny, shard 1/4"),
            std::string::npos)
      << added.out;
  const Outcome again = ampbench("history --add " + result + " --db " + db);
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, result + ": already recorded as run 1 in " + db + "; not added again\n");
  const auto runs = query("--db " + db + " --runs")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1]["hostname"], "gpu-node-7");
  EXPECT_EQ(query("--db " + db + " --runs --last 1")["runs"].size(), 1u);

  // The change against the previous run, judged by compare's rule; the commit of the revision.
  const Outcome table = ampbench("history --db " + db + " --op dot");
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("  1234abcd-dirty "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("  +50.0% worse "), std::string::npos) << table.out;
}

TEST_F(HistoryCli, ShardsRunningAtOnceShareOneHistory) {
  const std::string db = path("results/history.sqlite");
  Outcome shards[2];
  std::thread second([&] { shards[1] = run("s1", "--shard 1/2"); });
  shards[0] = run("s0", "--shard 0/2");
  second.join();
  for (const auto& shard : shards) ASSERT_EQ(shard.status, 0) << shard.out << shard.err;
  const auto runs = query("--db " + db + " --runs")["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(runs[0]["shard"], runs[1]["shard"]);
  EXPECT_EQ(runs[0]["records"].get<int>() + runs[1]["records"].get<int>(), 3);
}

TEST_F(HistoryCli, AHistoryThatCannotTakeTheRunLeavesTheResultWhole) {
  const std::string db = path("results/history.sqlite");
  ASSERT_EQ(run("first").status, 0);
  // The database opens (the run checks it before any case) but refuses every new run.
  sqlite3* handle = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &handle), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(handle,
                         "CREATE TRIGGER full BEFORE INSERT ON runs "
                         "BEGIN SELECT RAISE(ABORT, 'planted failure'); END",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(handle);

  const Outcome outcome = run("tiny");
  EXPECT_EQ(outcome.status, 2) << outcome.out << outcome.err;
  EXPECT_NE(outcome.err.find("ampbench run: " + db + ": cannot record " +
                             path("results/tiny/result.json") + ": planted failure"),
            std::string::npos)
      << outcome.err;
  EXPECT_NE(outcome.err.find("add it with 'ampbench history --add"), std::string::npos);
  const auto result = nlohmann::json::parse(slurp(path("results/tiny/result.json")));
  EXPECT_EQ(result["records"].size(), 3u);
  EXPECT_EQ(query("--db " + db + " --runs")["runs"].size(), 1u);
}

struct BadInput {
  std::string args;
  std::string message;
};

TEST_F(HistoryCli, EveryBadInputIsNamedAndNothingIsWritten) {
  ASSERT_EQ(run("tiny").status, 0);
  const std::string db = path("results/history.sqlite");
  const std::string result = path("results/tiny/result.json");
  const std::string notes_text = "someone's notes\n";
  const std::string notes = write("notes.txt", notes_text);
  const std::string audit = write("audit.json", R"({"schema": "ampbench.audit/1"})");
  const std::string fresh = path("fresh.sqlite");
  const BadInput cases[] = {
      {"history --db " + notes,
       "ampbench history: " + notes + ": cannot read the database: file is not a database\n"},
      {"history --add " + result + " --db " + notes,
       "ampbench history: " + notes + ": cannot start a write: file is not a database\n"},
      {"history --db " + path("results"),
       "ampbench history: " + path("results") + ": is a directory, not a history database\n"},
      {"history --db " + path("absent.sqlite"),
       "ampbench history: " + path("absent.sqlite") + ": no such history database"},
      {"history --add " + result + " " + path("absent.json") + " --db " + fresh,
       "ampbench history: " + path("absent.json") + ": cannot open: No such file or directory\n"},
      {"history --add " + audit + " --db " + fresh,
       "ampbench history: " + audit + ": not an ampbench.result/1 record: schema is"},
      {"history --add " + notes + " --db " + fresh,
       "ampbench history: " + notes + ": line 1, column 1: syntax error while parsing value"},
      {"history --add " + result + " --db " + path("no/such/h.sqlite"),
       "ampbench history: --db " + path("no/such/h.sqlite") + ": directory " + path("no/such") +
           " does not exist\n"},
      {"history --db " + db + " --metric max_ulps",
       "ampbench history: --metric max_ulps: no record in " + db + " has this metric"},
      {"history --db " + db + " --last 0",
       "ampbench history: --last: 0 is not in [1, 1000000000]\n"},
      {"history --db " + db + " --last -2", "ampbench history: --last: -2 is not in [1, "},
      {"history --db " + db + " --last 3x",
       "ampbench history: --last: '3x' is not a base-10 integer"},
      {"history --db " + db + " --last ''",
       "ampbench history: --last: the value is empty (leave the option out for its default)"},
      {"history --db '' --runs",
       "ampbench history: --db: the value is empty (leave the option out for its default)"},
      {"history --add " + result + " --op dot",
       "ampbench history: --add records result files; it takes no query options\n"},
      {"history --db " + db + " --runs --metric max_ulp", "ampbench history: --runs lists runs"},
      {"run " + suite_ + " --out " + path("results/x") + " --history " + notes,
       "ampbench run: --history " + notes + ": " + notes +
           ": cannot start a write: file is not a database\n"},
      {"run " + suite_ + " --out " + path("results/y") + " --history " + path("no/such/h.sqlite"),
       "ampbench run: --history " + path("no/such/h.sqlite") + ": directory " + path("no/such") +
           " does not exist\n"},
  };
  for (const auto& c : cases) {
    const Outcome outcome = ampbench(c.args);
    EXPECT_EQ(outcome.status, 2) << c.args << "\n" << outcome.out << outcome.err;
    EXPECT_TRUE(outcome.err.starts_with(c.message)) << c.args << "\ngot: " << outcome.err;
    EXPECT_TRUE(outcome.out.empty()) << c.args << "\n" << outcome.out;
  }
  EXPECT_EQ(slurp(notes), notes_text);
  EXPECT_FALSE(std::filesystem::exists(fresh));  // files are checked before the database is made
  EXPECT_FALSE(std::filesystem::exists(path("absent.sqlite")));
  EXPECT_FALSE(std::filesystem::exists(path("no")));
  EXPECT_FALSE(std::filesystem::exists(path("results/x/result.json")));  // nothing ran
  EXPECT_EQ(query("--db " + db + " --runs")["runs"].size(), 1u);
}

}  // namespace
