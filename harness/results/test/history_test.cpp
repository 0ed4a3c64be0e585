// The run history: case keys parsed for filtering, a run stored and read back, the same run added
// twice, writes that fail half-way (nothing of the run remains), the filters, the change against
// the previous run, the schema version, files that are not history databases, concurrent writers.
#include "harness/results/history.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/results/compare.hpp"
#include "harness/results/record.hpp"

namespace ampbench::results {
namespace {

nlohmann::json record(const std::string& key, const std::string& kind,
                      const std::map<std::string, double>& metrics, bool pass = true) {
  return {{"key", key},       {"kind", kind},       {"status", pass ? "pass" : "fail"},
          {"breaches", {}},   {"metrics", metrics}, {"seconds", 0.5},
          {"detail", nullptr}};
}

HistoryRunInput run_of(const std::string& suite, const std::string& started,
                       const nlohmann::json& records, const std::string& revision = "v0.1-3-gabc",
                       const std::string& hostname = "node1", Shard shard = {}) {
  Environment environment;
  environment.ampbench_version = "0.1.0";
  environment.git_revision = revision;
  environment.hostname = hostname;
  environment.cpu = "Test CPU";
  environment.started = started;
  environment.finished = started;
  Expected expected;
  for (const auto& r : records) expected.keys.push_back(r["key"]);
  return history_run(result_document(suite, shard, environment, records, expected, true),
                     suite + ".json");
}

constexpr const char* kGemm = "audit/gemm/64x64x64/amp-fp16/normal/seed=1";
constexpr const char* kGemmBf16 = "audit/gemm/64x64x64/amp-bf16/normal/seed=1";
constexpr const char* kSoftmax = "audit/softmax/64x64/amp-fp16/normal/seed=1";
constexpr const char* kMlp = "train/mlp/steps=20/seed=1";

// A nightly run of three audit cases and a training run with two policies, its numbers scaled.
nlohmann::json nightly_records(double scale) {
  return {record(kGemm, "audit", {{"normwise_rel_error", 1e-4 * scale}, {"max_ulp", 3 * scale}}),
          record(kGemmBf16, "audit", {{"normwise_rel_error", 8e-4 * scale}, {"max_ulp", 2}}),
          record(kSoftmax, "audit", {{"normwise_rel_error", 2e-4 * scale}, {"max_ulp", 1}}),
          record(kMlp, "train",
                 {{"amp-fp16.eval_loss_error", 0.01 * scale},
                  {"amp-fp16.eval_accuracy", 0.9},
                  {"fp16.eval_loss_error", 0.2 * scale},
                  {"reference.eval_loss", 0.5}})};
}

class HistoryStore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ampbench-history-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = (dir_ / "history.sqlite").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Straight SQL on the database, beside the store: to count rows and to plant failures.
  void sql(const std::string& statement) const {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &message);
    const std::string error = message == nullptr ? "" : message;
    sqlite3_free(message);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << statement << ": " << error;
  }
  long long count(const std::string& table) const {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* statement = nullptr;
    EXPECT_EQ(
        sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &statement, nullptr),
        SQLITE_OK);
    EXPECT_EQ(sqlite3_step(statement), SQLITE_ROW);
    const long long n = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return n;
  }

  std::filesystem::path dir_;
  std::string db_;
};

std::vector<std::string> keys_of(const std::vector<SeriesPoint>& series) {
  std::vector<std::string> keys;
  for (const auto& p : series) keys.push_back(p.key + " " + p.metric);
  return keys;
}

TEST(CaseKey, AuditKeysGiveOpAndPolicyTrainingKeysTheModel) {
  const CaseKey audit = parse_case_key("audit/gemm/128x128x128/amp-fp16/normal/seed=1/mma=hopper");
  EXPECT_EQ(audit.op, "gemm");
  EXPECT_EQ(audit.policy, "amp-fp16");
  EXPECT_EQ(audit.model, "");
  const CaseKey sampled = parse_case_key("audit/softmax/64x1024/bf16/uniform/seed=7/samples=32");
  EXPECT_EQ(sampled.op, "softmax");
  EXPECT_EQ(sampled.policy, "bf16");
  const CaseKey slashed = parse_case_key("audit/dot/16/team/fp8-policy/normal/seed=1");
  EXPECT_EQ(slashed.policy, "team/fp8-policy");
  const CaseKey training = parse_case_key("train/transformer/steps=100/seed=1/batch=32");
  EXPECT_EQ(training.model, "transformer");
  EXPECT_EQ(training.op, "");
  EXPECT_EQ(training.policy, "");
  EXPECT_EQ(parse_case_key("profile/cnn/steps=20/warmup=3/seed=1").model, "cnn");
  for (const char* odd : {"", "a", "audit", "audit/gemm", "audit/gemm/64/fp32/seed=1", "train"}) {
    const CaseKey k = parse_case_key(odd);
    EXPECT_EQ(k.op + k.policy + k.model, "") << odd;
  }
}

// Each run keeps its device (device.hpp): its label for people, the structured device as JSON for
// other tools; a run recorded before the history kept devices has none.
TEST_F(HistoryStore, EachRunKeepsItsDevice) {
  HistoryRunInput h200 = run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1));
  EXPECT_EQ(label_of(h200.device), "unknown device");  // the Environment here does not say
  h200.device.kind = "gpu";
  h200.device.name = "TEST FIXTURE H200";
  h200.device.compute_capability = "9.0";
  const HistoryRunInput cpu = run_of("nightly", "2026-11-02T02:00:00Z", nightly_records(1));
  History history(db_, History::Open::create);
  history.add(h200);
  history.add(cpu);
  EXPECT_EQ(
      count("run_devices WHERE run_id = 1 AND device_json = '" + to_json(h200.device).dump() + "'"),
      1);
  sql("DELETE FROM run_devices WHERE run_id = 2");  // as if recorded before run_devices
  const auto runs = History(db_, History::Open::existing).runs({});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].device, "TEST FIXTURE H200 (sm 9.0)");
  EXPECT_FALSE(runs[1].device);
  // A history of this schema from before run_devices reads as before, no device.
  sql("DROP TABLE run_devices");
  EXPECT_FALSE(History(db_, History::Open::existing).runs({})[0].device);
}

TEST_F(HistoryStore, ARunIsStoredAndReadBack) {
  const auto input = run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1));
  EXPECT_EQ(input.records.size(), 4u);
  EXPECT_TRUE(std::filesystem::path(input.info.source).is_absolute());
  History history(db_, History::Open::create);
  const AddOutcome outcome = history.add(input);
  EXPECT_TRUE(outcome.added);
  const auto runs = history.runs({});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, outcome.run_id);
  EXPECT_EQ(runs[0].info.suite, "nightly");
  EXPECT_EQ(runs[0].info.shard, "0/1");
  EXPECT_EQ(runs[0].info.git_revision, "v0.1-3-gabc");
  EXPECT_EQ(runs[0].info.ampbench_version, "0.1.0");
  EXPECT_EQ(runs[0].info.hostname, "node1");
  EXPECT_EQ(runs[0].info.cpu, "Test CPU");
  EXPECT_EQ(runs[0].info.started, "2026-11-01T02:00:00Z");
  EXPECT_EQ(runs[0].info.source, input.info.source);
  EXPECT_FALSE(runs[0].recorded_at.empty());
  EXPECT_EQ(runs[0].records, 4u);
  EXPECT_EQ(runs[0].failed, 0u);
  EXPECT_EQ(count("metrics"), 2 + 2 + 2 + 4);

  // Reopened, as the next command would.
  const History reopened(db_, History::Open::existing);
  HistoryFilter filter;
  filter.metric = "max_ulp";
  const auto series = reopened.series(filter);
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[0].key, kGemmBf16);  // ordered by key
  EXPECT_EQ(series[1].key, kGemm);
  EXPECT_EQ(series[1].value, 3);
  EXPECT_EQ(series[1].run_id, outcome.run_id);
  EXPECT_EQ(series[1].git_revision, "v0.1-3-gabc");
  EXPECT_EQ(series[1].started, "2026-11-01T02:00:00Z");
  EXPECT_TRUE(series[1].pass);
  EXPECT_FALSE(series[1].previous.has_value());
}

TEST_F(HistoryStore, TheSameRunAddedTwiceIsStoredOnce) {
  const auto input = run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1));
  const AddOutcome first = History(db_, History::Open::create).add(input);
  History history(db_, History::Open::create);
  const AddOutcome again = history.add(input);
  EXPECT_FALSE(again.added);
  EXPECT_EQ(again.run_id, first.run_id);
  EXPECT_EQ(history.runs({}).size(), 1u);
  EXPECT_EQ(count("records"), 4);
  // Another shard, host or start time of the same suite is another run.
  EXPECT_TRUE(history.add(run_of("nightly", "2026-11-02T02:00:00Z", nightly_records(1))).added);
  EXPECT_TRUE(
      history.add(run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1), "r", "node2"))
          .added);
  EXPECT_TRUE(history
                  .add(run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1), "r", "node1",
                              Shard{1, 2}))
                  .added);
  EXPECT_EQ(history.runs({}).size(), 4u);
}

// A partial record of a run is flagged, and gives way to a later record of the same run with more
// of its cases, which keeps the run's id; never the other way round.
TEST_F(HistoryStore, APartialRunIsFlaggedAndReplacedByItsCompleteRecord) {
  HistoryRunInput complete = run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1));
  HistoryRunInput partial = complete;
  partial.records.resize(1);
  partial.partial_of = complete.records.size();
  History history(db_, History::Open::create);
  const AddOutcome first = history.add(partial);
  ASSERT_TRUE(first.added);
  EXPECT_EQ(history.runs({})[0].partial_of, complete.records.size());
  EXPECT_EQ(history.runs({})[0].records, 1u);
  EXPECT_FALSE(history.add(partial).added);
  const AddOutcome replaced = history.add(complete);
  EXPECT_TRUE(replaced.added);
  EXPECT_TRUE(replaced.replaced_partial);
  EXPECT_EQ(replaced.run_id, first.run_id);
  ASSERT_EQ(history.runs({}).size(), 1u);
  EXPECT_FALSE(history.runs({})[0].partial_of);
  EXPECT_EQ(history.runs({})[0].records, complete.records.size());
  EXPECT_EQ(count("partial_runs"), 0);
  EXPECT_EQ(count("run_devices"), 1);  // the replaced record's device gave way too
  EXPECT_EQ(count("records"), static_cast<long long>(complete.records.size()));
  const AddOutcome again = history.add(partial);
  EXPECT_FALSE(again.added);
  EXPECT_FALSE(again.replaced_partial);
  // A history of this schema from before partial_runs reads as before, nothing partial.
  sql("DROP TABLE partial_runs");
  EXPECT_FALSE(History(db_, History::Open::existing).runs({})[0].partial_of);
}

TEST_F(HistoryStore, ARunWhoseRecordsCannotAllBeWrittenLeavesNothing) {
  History history(db_, History::Open::create);
  // Two records with one key: the second insert fails after the run and the first record.
  auto input = run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1));
  input.records.push_back(input.records[0]);
  try {
    history.add(input);
    FAIL() << "a repeated key was recorded";
  } catch (const HistoryError& e) {
    EXPECT_NE(std::string(e.what()).find(db_ + ": cannot record"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("UNIQUE constraint failed"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(history.runs({}).empty());
  EXPECT_EQ(count("records"), 0);
  EXPECT_EQ(count("metrics"), 0);

  // A failure deep inside: the sixth metric written aborts the run.
  sql("CREATE TRIGGER sixth BEFORE INSERT ON metrics WHEN (SELECT count(*) FROM metrics) >= 5 "
      "BEGIN SELECT RAISE(ABORT, 'planted failure'); END");
  const auto good = run_of("nightly", "2026-11-02T02:00:00Z", nightly_records(1));
  EXPECT_THROW(history.add(good), HistoryError);
  EXPECT_TRUE(history.runs({}).empty());
  EXPECT_EQ(count("runs"), 0);
  EXPECT_EQ(count("records"), 0);
  EXPECT_EQ(count("metrics"), 0);

  // The store stays usable: the same run, once the trigger is gone, is recorded whole.
  sql("DROP TRIGGER sixth");
  EXPECT_TRUE(history.add(good).added);
  EXPECT_EQ(count("metrics"), 10);
}

TEST_F(HistoryStore, FiltersSelectOpPolicyModelKeySuiteAndMetric) {
  History history(db_, History::Open::create);
  history.add(run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1)));
  history.add(
      run_of("quick", "2026-11-01T03:00:00Z",
             nlohmann::json::array({record(kGemm, "audit", {{"normwise_rel_error", 5e-4}})})));
  const auto select = [&](HistoryFilter f) { return keys_of(history.series(f)); };

  using Keys = std::vector<std::string>;
  const std::string gemm = std::string(kGemm) + " normwise_rel_error";
  const std::string gemm_bf16 = std::string(kGemmBf16) + " normwise_rel_error";
  const std::string softmax = std::string(kSoftmax) + " normwise_rel_error";
  const std::string mlp_amp = std::string(kMlp) + " amp-fp16.eval_loss_error";
  const std::string mlp_fp16 = std::string(kMlp) + " fp16.eval_loss_error";
  // No filter: each audit record's normwise error, each policy's eval-loss error.
  EXPECT_EQ(select({}), (Keys{gemm_bf16, gemm, gemm, softmax, mlp_amp, mlp_fp16}));
  EXPECT_EQ(select({.op = "gemm"}), (Keys{gemm_bf16, gemm, gemm}));
  EXPECT_EQ(select({.op = "gemm", .suite = "nightly"}), (Keys{gemm_bf16, gemm}));
  // A policy picks audit records by their key and training metrics by their prefix.
  EXPECT_EQ(select({.policy = "amp-fp16"}), (Keys{gemm, gemm, softmax, mlp_amp}));
  EXPECT_EQ(select({.policy = "fp16"}), (Keys{mlp_fp16}));
  EXPECT_EQ(select({.model = "mlp"}), (Keys{mlp_amp, mlp_fp16}));
  EXPECT_EQ(select({.key_substring = "softmax/64x64"}), (Keys{softmax}));
  EXPECT_EQ(select({.key_substring = "%"}), Keys{});  // a substring, not a pattern
  EXPECT_EQ(select({.suite = "quick"}), (Keys{gemm}));
  // A training metric by its full name or by the part after the policy.
  EXPECT_EQ(select({.metric = "eval_accuracy"}),
            (Keys{std::string(kMlp) + " amp-fp16.eval_accuracy"}));
  EXPECT_EQ(select({.policy = "fp16", .metric = "eval_loss_error"}), (Keys{mlp_fp16}));
  EXPECT_EQ(select({.metric = "fp16.eval_loss_error"}), (Keys{mlp_fp16}));
  EXPECT_EQ(select({.metric = "reference.eval_loss"}),
            (Keys{std::string(kMlp) + " reference.eval_loss"}));
  EXPECT_EQ(select({.op = "softmax", .metric = "max_ulp"}),
            (Keys{std::string(kSoftmax) + " max_ulp"}));
  EXPECT_EQ(select({.metric = "no_such_metric"}), Keys{});
  EXPECT_EQ(select({.op = "no_such_op"}), Keys{});

  EXPECT_TRUE(history.knows_metric("max_ulp"));
  EXPECT_TRUE(history.knows_metric("eval_loss_error"));
  EXPECT_TRUE(history.knows_metric("amp-fp16.eval_accuracy"));
  EXPECT_FALSE(history.knows_metric("ulp"));
  EXPECT_FALSE(history.knows_metric("no_such_metric"));
  EXPECT_EQ(history.runs({.suite = "quick"}).size(), 1u);
}

TEST_F(HistoryStore, EachValueCarriesTheOneOfThePreviousRunOfItsKey) {
  History history(db_, History::Open::create);
  // Added out of order: the series follows the runs' start times, not the order they came in.
  history.add(run_of("nightly", "2026-11-03T02:00:00Z", nightly_records(4), "rev3"));
  history.add(run_of("nightly", "2026-11-01T02:00:00Z", nightly_records(1), "rev1"));
  history.add(run_of("nightly", "2026-11-02T02:00:00Z", nightly_records(2), "rev2"));
  // A run without the softmax case: the softmax series skips it.
  history.add(run_of(
      "nightly", "2026-11-04T02:00:00Z",
      nlohmann::json::array({record(kGemm, "audit", {{"normwise_rel_error", 4e-4}})}), "rev4"));
  const auto gemm = history.series({.key_substring = kGemm});
  ASSERT_EQ(gemm.size(), 4u);
  EXPECT_EQ(gemm[0].git_revision, "rev1");
  EXPECT_FALSE(gemm[0].previous);
  EXPECT_EQ(gemm[1].git_revision, "rev2");
  EXPECT_DOUBLE_EQ(*gemm[1].previous, 1e-4);
  EXPECT_DOUBLE_EQ(gemm[1].value, 2e-4);
  EXPECT_DOUBLE_EQ(*gemm[2].previous, 2e-4);
  EXPECT_DOUBLE_EQ(*gemm[3].previous, 4e-4);
  EXPECT_DOUBLE_EQ(gemm[3].value, 4e-4);

  const auto softmax = history.series({.op = "softmax"});
  ASSERT_EQ(softmax.size(), 3u);
  EXPECT_EQ(softmax[2].git_revision, "rev3");
  EXPECT_DOUBLE_EQ(*softmax[2].previous, 4e-4);

  // The last two of each series, the first of them still compared with the run before it.
  const auto last = history.series({.op = "gemm", .policy = "amp-fp16", .last = 2});
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].git_revision, "rev3");
  EXPECT_DOUBLE_EQ(*last[0].previous, 2e-4);
  EXPECT_EQ(last[1].git_revision, "rev4");
  const auto last_of_each = history.series({.op = "gemm", .last = 1});
  EXPECT_EQ(keys_of(last_of_each),
            (std::vector<std::string>{std::string(kGemmBf16) + " normwise_rel_error",
                                      std::string(kGemm) + " normwise_rel_error"}));
  EXPECT_EQ(last_of_each[0].git_revision, "rev3");
  EXPECT_EQ(last_of_each[1].git_revision, "rev4");

  const auto last_runs = history.runs({.last = 2});
  ASSERT_EQ(last_runs.size(), 2u);
  EXPECT_EQ(last_runs[0].info.git_revision, "rev3");
  EXPECT_EQ(last_runs[1].info.git_revision, "rev4");
  EXPECT_EQ(history.runs({.last = 10}).size(), 4u);
}

TEST_F(HistoryStore, ADatabaseOfAnotherSchemaVersionIsRefused) {
  { History created(db_, History::Open::create); }
  sql("UPDATE meta SET value = 'ampbench.history/2' WHERE key = 'schema'");
  for (const auto mode : {History::Open::create, History::Open::existing}) {
    try {
      History history(db_, mode);
      FAIL() << "a newer schema was opened";
    } catch (const HistoryError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(db_ + ": history schema 'ampbench.history/2' is not "
                                                  "ampbench.history/1",
                                            0),
                0u)
          << e.what();
    }
  }
}

TEST_F(HistoryStore, WhatIsNotAHistoryDatabaseIsRefusedAndLeftAlone) {
  const auto message_of = [](const std::string& path, History::Open mode) -> std::string {
    try {
      History history(path, mode);
    } catch (const HistoryError& e) {
      return e.what();
    }
    return "opened";
  };
  const std::string text = (dir_ / "notes.txt").string();
  std::ofstream(text) << "not a database, but someone's notes\n";
  EXPECT_EQ(message_of(text, History::Open::create),
            text + ": cannot start a write: file is not a database");
  EXPECT_EQ(message_of(text, History::Open::existing),
            text + ": cannot read the database: file is not a database");
  std::ifstream notes(text);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(notes), {}),
            "not a database, but someone's notes\n");

  EXPECT_EQ(message_of(dir_.string(), History::Open::create),
            dir_.string() + ": is a directory, not a history database");
  const std::string absent = (dir_ / "absent.sqlite").string();
  EXPECT_TRUE(message_of(absent, History::Open::existing)
                  .starts_with(absent + ": no such history database"));
  EXPECT_FALSE(std::filesystem::exists(absent));  // a query creates nothing
  EXPECT_TRUE(message_of((dir_ / "no/such/dir/h.sqlite").string(), History::Open::create)
                  .ends_with("unable to open database file"));

  sql("CREATE TABLE other (x)");  // some other program's database
  EXPECT_EQ(message_of(db_, History::Open::create),
            db_ + ": not an ampbench history database (it has no meta table)");
}

TEST_F(HistoryStore, ResultDocumentsWithoutTheEnvironmentOrKindAreNamed) {
  auto document = result_document("s", Shard{}, Environment{},
                                  nlohmann::json::array({record(kGemm, "audit", {})}),
                                  Expected{{kGemm}, {}}, true);
  EXPECT_NO_THROW(history_run(document, "r.json"));
  auto no_kind = document;
  no_kind["records"][0].erase("kind");
  EXPECT_THROW(
      {
        try {
          history_run(no_kind, "r.json");
        } catch (const ResultError& e) {
          EXPECT_STREQ(e.what(),
                       "r.json: not an ampbench.result/1 record: records[0].kind is not a string");
          throw;
        }
      },
      ResultError);
  auto no_start = document;
  no_start["environment"].erase("started");
  EXPECT_THROW(history_run(no_start, "r.json"), ResultError);
  auto no_environment = document;
  no_environment.erase("environment");
  EXPECT_THROW(history_run(no_environment, "r.json"), ResultError);
  EXPECT_THROW(history_run({{"schema", "ampbench.audit/1"}}, "r.json"), ResultError);
}

TEST_F(HistoryStore, ShardsWritingAtOnceAllGetRecorded) {
  constexpr int kWriters = 4;
  constexpr int kRunsEach = 15;
  std::vector<std::thread> writers;
  std::vector<std::string> errors(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      try {
        History history(db_, History::Open::create);
        for (int i = 0; i < kRunsEach; ++i) {
          history.add(run_of("nightly", "2026-11-01T02:00:" + std::to_string(10 + i) + "Z",
                             nightly_records(i + 1), "r", "node1",
                             Shard{static_cast<std::size_t>(w), kWriters}));
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(w)] = e.what();
      }
    });
  }
  for (auto& t : writers) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(History(db_, History::Open::existing).runs({}).size(),
            static_cast<std::size_t>(kWriters * kRunsEach));
}

}  // namespace
}  // namespace ampbench::results
