// End-to-end tests of `ampbench run` and `ampbench compare`: a tiny suite run whole and by shards,
// its record, a failing case, comparisons of results, and every way the input can be wrong (exit
// 2, a message naming the input, nothing run).
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
using ampbench::cli::test::slurp;

class RunCli : public ampbench::cli::test::TempDirTest {};

constexpr const char* kTiny = R"(name = "tiny"
seed = 3
[[audit]]
ops = ["dot", "sum"]
shapes = ["16"]
policies = ["fp32"]
[[train]]
model = "mlp"
policies = ["fp32"]
steps = 2
batch = 8
)";

TEST_F(RunCli, RunsEveryCaseAndWritesTheResultRecord) {
  const std::string suite = write("tiny.toml", kTiny);
  const Outcome run = ampbench("run " + suite + " --out " + path("out"));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("[1/3] audit/dot/16/fp32/normal/seed=3  PASS  normwise"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("[3/3] train/mlp/steps=2/seed=3/batch=8  PASS  worst eval_loss_error"),
            std::string::npos)
      << run.out;
  const auto result = nlohmann::json::parse(slurp(path("out/result.json")));
  EXPECT_EQ(result["schema"], "ampbench.result/1");
  EXPECT_EQ(result["suite"], "tiny");
  EXPECT_EQ(result["shard"], "0/1");
  const auto& environment = result["environment"];
  for (const char* field : {"ampbench_version", "git_revision", "compiler", "build_type", "cuda",
                            "gpu", "cuda_libraries", "cpu", "hostname", "started", "finished"}) {
    EXPECT_TRUE(environment[field].is_string() && !environment[field].get<std::string>().empty())
        << field;
  }
  EXPECT_GE(environment["cores"].get<int>(), 1);
  EXPECT_EQ(environment["seed"], 3);
  // The structured device: the CPU emulation (docs/comparing-devices.md), no Tensor Core model.
  EXPECT_EQ(environment["device"]["kind"], "cpu-emulation");
  EXPECT_EQ(environment["device"]["name"], environment["cpu"]);
  EXPECT_EQ(environment["device"]["mma"], nlohmann::json::array());
  ASSERT_EQ(result["records"].size(), 3u);
  const auto& dot = result["records"][0];
  EXPECT_EQ(dot["key"], "audit/dot/16/fp32/normal/seed=3");
  EXPECT_EQ(dot["kind"], "audit");
  EXPECT_EQ(dot["status"], "pass");
  EXPECT_TRUE(dot["metrics"]["normwise_rel_error"].is_number());
  EXPECT_EQ(dot["detail"]["op"], "dot");
  const auto& training = result["records"][2];
  EXPECT_EQ(training["kind"], "train");
  EXPECT_EQ(training["detail"]["schema"], "ampbench.train/1");
  EXPECT_TRUE(training["metrics"]["fp32.eval_loss_error"].is_number());
  for (const auto& entry : std::filesystem::directory_iterator(path("out"))) {
    EXPECT_EQ(entry.path().filename(), "result.json") << "left behind";
  }
}

TEST_F(RunCli, AShardRunsEveryNthCase) {
  const std::string suite = write("tiny.toml", kTiny);
  const Outcome run = ampbench("run " + suite + " --shard 1/2 --out " + path("shard"));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto result = nlohmann::json::parse(slurp(path("shard/result.json")));
  EXPECT_EQ(result["shard"], "1/2");
  ASSERT_EQ(result["records"].size(), 1u);
  EXPECT_EQ(result["records"][0]["key"], "audit/sum/16/fp32/normal/seed=3");
  // A shard beyond the last case runs nothing and still leaves a record.
  ASSERT_EQ(ampbench("run " + suite + " --shard 5/10 --out " + path("empty")).status, 0);
  const auto empty = nlohmann::json::parse(slurp(path("empty/result.json")));
  EXPECT_EQ(empty["shard"], "5/10");
  EXPECT_TRUE(empty["records"].empty());
}

// The union of the shards is the whole run: merged, the records are those of the unsharded run,
// in its order, with the same metrics; compare finds nothing between them.
TEST_F(RunCli, MergedShardsAreTheWholeRun) {
  const std::string suite = write("tiny.toml", kTiny);
  ASSERT_EQ(ampbench("run " + suite + " --out " + path("whole")).status, 0);
  for (const char* shard : {"0/2", "1/2"}) {
    const std::string out = path(std::string("shard") + shard[0]);
    ASSERT_EQ(ampbench("run " + suite + " --shard " + shard + " --out " + out).status, 0);
  }
  const Outcome merge = ampbench("merge " + path("shard1/result.json") + " " +
                                 path("shard0/result.json") + " --out " + path("merged.json"));
  ASSERT_EQ(merge.status, 0) << merge.err;
  EXPECT_EQ(merge.out,
            "suite tiny: 2 shard(s) of 2, 3 case(s) merged into " + path("merged.json") + "\n");
  const auto whole = nlohmann::json::parse(slurp(path("whole/result.json")));
  const auto merged = nlohmann::json::parse(slurp(path("merged.json")));
  EXPECT_EQ(merged["shard"], "0/1");
  ASSERT_EQ(merged["records"].size(), whole["records"].size());
  for (std::size_t i = 0; i < whole["records"].size(); ++i) {
    const auto& a = whole["records"][i];
    const auto& b = merged["records"][i];
    EXPECT_EQ(b["key"], a["key"]);
    EXPECT_EQ(b["status"], a["status"]);
    EXPECT_EQ(b["metrics"], a["metrics"]) << a["key"];
  }
  const Outcome compare =
      ampbench("compare " + path("whole/result.json") + " " + path("merged.json"));
  EXPECT_EQ(compare.status, 0) << compare.out;
  EXPECT_NE(compare.out.find("3 case(s) matched: 0 regression(s), 0 new failure(s), 0 missing, "
                             "0 improvement(s)"),
            std::string::npos)
      << compare.out;

  // A missing shard is an error unless --partial, and then compare reports its cases missing.
  const Outcome incomplete =
      ampbench("merge " + path("shard0/result.json") + " --out " + path("partial.json"));
  EXPECT_EQ(incomplete.status, 2);
  EXPECT_NE(incomplete.err.find("ampbench merge: shard(s) 1 of 2 missing"), std::string::npos)
      << incomplete.err;
  EXPECT_FALSE(std::filesystem::exists(path("partial.json")));
  ASSERT_EQ(
      ampbench("merge " + path("shard0/result.json") + " --partial --out " + path("partial.json"))
          .status,
      0);
  const Outcome gap = ampbench("compare " + path("whole/result.json") + " " + path("partial.json"));
  EXPECT_EQ(gap.status, 1);
  EXPECT_NE(gap.out.find("1 missing"), std::string::npos) << gap.out;

  // A compact baseline: the whole run without its details compares the same.
  ASSERT_EQ(ampbench("merge " + path("whole/result.json") + " --drop-detail --out " +
                     path("baseline.json"))
                .status,
            0);
  const auto baseline = nlohmann::json::parse(slurp(path("baseline.json")));
  for (const auto& record : baseline["records"]) EXPECT_TRUE(record["detail"].is_null());
  EXPECT_EQ(ampbench("compare " + path("baseline.json") + " " + path("merged.json")).status, 0);
}

TEST_F(RunCli, MergeNamesEveryBadInput) {
  const std::string suite = write("tiny.toml", kTiny);
  ASSERT_EQ(ampbench("run " + suite + " --shard 0/3 --out " + path("s0")).status, 0);
  const std::string s0 = path("s0/result.json");
  const std::string other = write("other.json", R"({"schema": "ampbench.result/1",
    "suite": "other", "shard": "1/3", "environment": {}, "records": []})");
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {"merge --out " + path("m.json"), "ampbench merge: give the shards' result files"},
      {"merge " + s0, "--out is required"},
      {"merge " + s0 + " --out /nonexistent-ampbench-dir/m.json",
       "ampbench merge: --out /nonexistent-ampbench-dir/m.json: directory "
       "/nonexistent-ampbench-dir does not exist"},
      {"merge /nonexistent-ampbench.json --out " + path("m.json"),
       "ampbench merge: /nonexistent-ampbench.json: cannot open: No such file or directory"},
      {"merge " + s0 + " " + s0 + " --out " + path("m.json"),
       "ampbench merge: " + s0 + ": shard 0/3 is also " + s0},
      {"merge " + s0 + " " + other + " --out " + path("m.json"),
       "ampbench merge: " + other + ": suite \"other\", but " + s0 + " is of suite \"tiny\""},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << "\n" << run.err;
    EXPECT_EQ(run.out, "") << c.args;
  }
  EXPECT_FALSE(std::filesystem::exists(path("m.json")));
}

// A profile run's record: each policy's median step time and its ratio to fp32's, with the
// ampbench.profile-run/1 document as its detail; it passes (timings are reported, not judged).
TEST_F(RunCli, AProfileEntryRecordsStepTimesPerPolicy) {
  const std::string suite = write("profile.toml", R"(name = "timed"
[[profile]]
model = "mlp"
policies = ["fp32", "amp-bf16"]
steps = 3
warmup = 1
batch = 8
)");
  const Outcome run = ampbench("run " + suite + " --out " + path("timed"));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("[1/1] profile/mlp/steps=3/warmup=1/seed=1/batch=8  PASS  step amp-bf16 "),
            std::string::npos)
      << run.out;
  const auto result = nlohmann::json::parse(slurp(path("timed/result.json")));
  const auto& record = result["records"][0];
  EXPECT_EQ(record["kind"], "profile");
  EXPECT_GT(record["metrics"]["fp32.step_ms"].get<double>(), 0.0);
  EXPECT_GT(record["metrics"]["amp-bf16.step_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(record["metrics"]["fp32.vs_fp32"].get<double>(), 1.0);
  EXPECT_EQ(record["detail"]["schema"], "ampbench.profile-run/1");
  EXPECT_EQ(record["detail"]["steps"], 3);
  EXPECT_EQ(record["detail"]["runs"].size(), 2u);
  // Timings vary from run to run: compare reports them but never calls them a regression.
  const Outcome again = ampbench("run " + suite + " --out " + path("again"));
  ASSERT_EQ(again.status, 0);
  const Outcome compare = ampbench("compare " + path("timed/result.json") + " " +
                                   path("again/result.json") + " --tolerance 0");
  EXPECT_EQ(compare.status, 0) << compare.out;
}

// --backend cuda needs a usable GPU: without one (this machine, or a build without CUDA) it stops
// with status 3 and the reason before any work; --backend all then runs the CPU alone and says
// so. With a GPU, the audit cases run on both and what the GPU cannot run is listed.
TEST_F(RunCli, TheCudaBackendRunsWhereThereIsAGpuAndSaysWhyNotElsewhere) {
  const std::string suite = write("tiny.toml", kTiny);
  const Outcome cuda = ampbench("run " + suite + " --backend cuda --out " + path("cuda"));
  const Outcome all = ampbench("run " + suite + " --backend all --out " + path("all"));
  ASSERT_EQ(all.status, 0) << all.out << all.err;
  const auto result = nlohmann::json::parse(slurp(path("all/result.json")));
  EXPECT_EQ(result["backend"], "all");
  if (cuda.status == 3) {
    EXPECT_NE(cuda.err.find("ampbench run: --backend cuda: "), std::string::npos) << cuda.err;
    EXPECT_TRUE(cuda.err.find("no CUDA backend") != std::string::npos ||
                cuda.err.find("no usable CUDA device") != std::string::npos)
        << cuda.err;
    EXPECT_EQ(cuda.out, "");
    EXPECT_FALSE(std::filesystem::exists(path("cuda")));
    EXPECT_NE(all.out.find("backends: cpu (cuda unavailable: "), std::string::npos) << all.out;
    EXPECT_TRUE(result["cuda_unavailable"].is_string());
    EXPECT_EQ(result["records"].size(), 3u);  // the CPU's cases
    EXPECT_TRUE(result["not_run"].empty());
    return;
  }
  // A GPU: dot and sum run on it too, the training run does not (listed, with the reason).
  ASSERT_EQ(cuda.status, 0) << cuda.out << cuda.err;
  EXPECT_NE(all.out.find("audit/dot/16/fp32/normal/seed=3/backend=cuda  PASS"), std::string::npos)
      << all.out;
  bool training_listed = false;
  for (const auto& entry : result["not_run"]) {
    training_listed =
        training_listed || entry["key"] == "train/mlp/steps=2/seed=3/batch=8/backend=cuda";
  }
  EXPECT_TRUE(training_listed) << result["not_run"].dump();
}

// A fingerprint entry runs the preset's model on the CPU: the record keeps the inferred parameters
// as features, and compare names a changed one. On the same device it fails the gate; beside a
// record of another device it is a difference the gate lets through.
TEST_F(RunCli, AFingerprintRecordsItsFeaturesAndCompareNamesAChangedOne) {
  const std::string suite =
      write("f.toml", "name = \"f\"\n[[fingerprint]]\npresets = [\"ampere-bf16\"]\n");
  const Outcome run = ampbench("run " + suite + " --out " + path("f") + " --history none");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("[1/1] fingerprint/ampere-bf16  PASS  10 parameter(s), 0 off the preset"),
            std::string::npos)
      << run.out;
  const std::string base = path("f/result.json");
  auto record = nlohmann::json::parse(slurp(base));
  const auto& fingerprint = record["records"][0];
  EXPECT_EQ(fingerprint["kind"], "fingerprint");
  EXPECT_EQ(fingerprint["metrics"], nlohmann::json::object());
  EXPECT_EQ(fingerprint["features"]["fraction_bits"], "24");
  EXPECT_EQ(fingerprint["detail"]["schema"], "ampbench.fingerprint/1");
  EXPECT_EQ(ampbench("compare " + base + " " + base).status, 0);

  record["records"][0]["features"]["fraction_bits"] = "25";
  const std::string changed = write("changed.json", record.dump());
  const Outcome same = ampbench("compare " + base + " " + changed);
  EXPECT_EQ(same.status, 1) << same.out << same.err;
  EXPECT_NE(same.out.find("regression   fraction_bits                           24            25"
                          "  fingerprint/ampere-bf16"),
            std::string::npos)
      << same.out;
  EXPECT_NE(same.out.find("1 fingerprint feature regression(s) (same device). FAIL"),
            std::string::npos)
      << same.out;

  record["environment"]["device"]["name"] = "another CPU";
  const std::string other = write("other.json", record.dump());
  const Outcome two = ampbench("compare " + base + " " + other);
  EXPECT_EQ(two.status, 0) << two.out << two.err;
  EXPECT_NE(two.out.find("differs      fraction_bits"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("1 fingerprint feature(s) differing between the devices. PASS"),
            std::string::npos)
      << two.out;
}

TEST_F(RunCli, AnUnknownBackendIsNamed) {
  const std::string suite = write("tiny.toml", kTiny);
  const Outcome run = ampbench("run " + suite + " --backend tpu --out " + path("x"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("ampbench run: --backend: unknown backend 'tpu' (available: cpu, cuda, "
                         "all)"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(path("x")));
}

// A suite's tolerance travels in its records: compare judges against the baseline's unless told.
TEST_F(RunCli, CompareTakesTheBaselineSuitesTolerance) {
  const auto result = [&](const std::string& name, const std::string& tolerance, double error) {
    return write(name, R"({"schema": "ampbench.result/1", "suite": "s", )" + tolerance +
                           R"("records": [{"key": "k", "status": "pass", "metrics":
                           {"normwise_rel_error": )" +
                           std::to_string(error) + "}}]}");
  };
  const std::string loose = result("loose.json", R"("tolerance": 0.5, )", 1.0);
  const std::string plain = result("plain.json", "", 1.0);
  const std::string worse = result("worse.json", "", 1.3);
  const Outcome by_suite = ampbench("compare " + loose + " " + worse);
  EXPECT_EQ(by_suite.status, 0) << by_suite.out;
  EXPECT_NE(by_suite.out.find("tolerance 0.5 (the baseline suite's)"), std::string::npos)
      << by_suite.out;
  EXPECT_EQ(ampbench("compare " + loose + " " + worse + " --tolerance 0.1").status, 1);
  const Outcome by_default = ampbench("compare " + plain + " " + worse);
  EXPECT_EQ(by_default.status, 1);
  EXPECT_NE(by_default.out.find("tolerance 0.1 (the default)"), std::string::npos)
      << by_default.out;
  const std::string bad = result("bad.json", R"("tolerance": "ten", )", 1.0);
  const Outcome refused = ampbench("compare " + bad + " " + worse);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find(bad + ": not an ampbench.result/1 record: tolerance is not a number"),
            std::string::npos)
      << refused.err;
  // A suite run records its tolerance.
  const std::string suite =
      write("t.toml", std::string(kTiny).replace(0, 13, "name = \"t\"\ntolerance = 0.3"));
  ASSERT_EQ(ampbench("run " + suite + " --out " + path("t")).status, 0);
  EXPECT_EQ(nlohmann::json::parse(slurp(path("t/result.json")))["tolerance"], 0.3);
}

TEST_F(RunCli, ACaseOverItsBudgetFailsTheRunWithStatusOne) {
  write("strict.toml",
        "[[budget]]\nop = \"dot\"\npolicy = \"*\"\nmetric = \"max_ulp\"\n"
        "limit = -1\nsource = \"impossible\"\n");
  const std::string suite = write("strict-suite.toml",
                                  "name = \"strict\"\nbudgets = \"strict.toml\"\n[[audit]]\n"
                                  "ops = [\"dot\"]\nshapes = [\"16\"]\npolicies = [\"fp16\"]\n");
  const Outcome run = ampbench("run " + suite + " --out " + path("strict"));
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("FAIL"), std::string::npos) << run.out;
  const auto result = nlohmann::json::parse(slurp(path("strict/result.json")));
  EXPECT_EQ(result["records"][0]["status"], "fail");
  EXPECT_EQ(result["records"][0]["breaches"].size(), 1u);
}

TEST_F(RunCli, CompareFindsRegressionsAndMissingCases) {
  const std::string suite =
      write("a.toml",
            "name = \"a\"\n[[audit]]\nops = [\"dot\", \"sum\"]\nshapes = [\"64\"]\n"
            "policies = [\"fp16\"]\n");
  ASSERT_EQ(ampbench("run " + suite + " --out " + path("base")).status, 0);
  const std::string base = path("base/result.json");

  const Outcome same = ampbench("compare " + base + " " + base);
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("2 case(s) matched: 0 regression(s), 0 new failure(s), 0 missing"),
            std::string::npos)
      << same.out;

  auto worse = nlohmann::json::parse(slurp(base));
  worse["records"][0]["metrics"]["normwise_rel_error"] =
      worse["records"][0]["metrics"]["normwise_rel_error"].get<double>() * 1.5;
  const std::string worse_path = write("worse.json", worse.dump());
  const Outcome regression = ampbench("compare " + base + " " + worse_path);
  EXPECT_EQ(regression.status, 1) << regression.out << regression.err;
  EXPECT_NE(regression.out.find("regression"), std::string::npos);
  EXPECT_NE(regression.out.find("audit/dot/64/fp16/normal/seed=1"), std::string::npos);
  EXPECT_EQ(ampbench("compare " + base + " " + worse_path + " --tolerance 0.6").status, 0);
  // The other way round it is an improvement.
  EXPECT_EQ(ampbench("compare " + worse_path + " " + base).status, 0);

  auto fewer = nlohmann::json::parse(slurp(base));
  fewer["records"].erase(1);
  fewer["complete"] = false;  // a run that stopped before its second case
  const std::string fewer_path = write("fewer.json", fewer.dump());
  const Outcome missing = ampbench("compare " + base + " " + fewer_path);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.out.find("missing"), std::string::npos) << missing.out;
  const Outcome added = ampbench("compare " + fewer_path + " " + base);
  EXPECT_EQ(added.status, 0) << added.out;
  EXPECT_NE(added.out.find("1 added"), std::string::npos) << added.out;
}

struct BadInput {
  std::string args;
  std::string message;
};

TEST_F(RunCli, EveryBadInputIsNamedBeforeAnyWork) {
  const std::string good = write("good.toml", kTiny);
  const std::string typo =
      write("typo.toml", "name = \"t\"\n[[audit]]\nops = [\"gemmm\"]\npolicies = [\"fp32\"]\n");
  const std::string audit_record = write("audit.json", R"({"schema": "ampbench.audit/1"})");
  const std::string not_json = write("text.json", "hello");
  const BadInput cases[] = {
      {"run " + path("absent.toml"), "ampbench run: " + path("absent.toml") + ": cannot open"},
      {"run " + typo, "ampbench run: " + typo + ":3:8: [[audit]] ops: unknown op 'gemmm'"},
      {"run " + good + " --shard 2/2", "ampbench run: --shard '2/2'"},
      {"run " + good + " --shard x", "ampbench run: --shard 'x' is not I/N"},
      {"run " + good + " --out " + path("no/such/dir"), "ampbench run: --out " +
                                                            path("no/such/dir") + ": directory " +
                                                            path("no/such") + " does not exist"},
      {"run " + good + " --out " + typo, "ampbench run: --out " + typo + ": cannot create"},
      {"compare " + audit_record + " " + audit_record,
       "ampbench compare: " + audit_record + ": not an ampbench.result/1 record: schema is"},
      {"compare " + not_json + " " + audit_record,
       "ampbench compare: " + not_json + ": line 1, column 1: syntax error while parsing value"},
      {"compare " + path("absent.json") + " " + audit_record,
       "ampbench compare: " + path("absent.json") + ": cannot open"},
      {"compare a b --tolerance -1", "ampbench compare: --tolerance: -1 is not"},
      {"run", "ampbench: suite is required"},
  };
  for (const auto& c : cases) {
    const Outcome run = ampbench(c.args);
    EXPECT_EQ(run.status, 2) << c.args << "\n" << run.out << run.err;
    EXPECT_TRUE(run.err.starts_with(c.message)) << c.args << "\ngot: " << run.err;
    EXPECT_TRUE(run.out.empty()) << c.args << "\n" << run.out;
  }
  EXPECT_FALSE(std::filesystem::exists(path("no")));
}

}  // namespace
