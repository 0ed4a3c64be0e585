// The run history (docs/results.md): every result record of `ampbench run` (and every file given to
// `ampbench history --add`) stored in an SQLite database, so that a metric can be followed over
// runs and revisions. The schema is versioned ("ampbench.history/1" in its meta table); a database
// of another version is refused rather than misread. Recording a run is one transaction, and a
// run is known by its suite, shard, start time and host, so recording the same result twice adds
// it once. A partial run (its record says complete: false) is stored flagged, in the table
// partial_runs, and is replaced when the same run is recorded again with more of its cases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/device.hpp"

namespace ampbench::results {

inline constexpr std::string_view kHistorySchema = "ampbench.history/1";

// Anything that goes wrong with the database; what() names its file and SQLite's message.
class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a case key says, for filtering: "audit/OP/SHAPE/POLICY/DIST/seed=S[/mma=..][/samples=..]"
// gives op and policy, "train/MODEL/..." and "profile/MODEL/..." the model (such a record holds
// every policy of its run: its metrics are named POLICY.metric). Empty where the key has none.
struct CaseKey {
  std::string op;
  std::string policy;
  std::string model;
};
CaseKey parse_case_key(std::string_view key);

// A result record as the history keeps it.
struct HistoryRecord {
  std::string key;
  std::string kind;  // "audit" or "train"
  bool pass = false;
  std::vector<std::pair<std::string, double>> metrics;
};
// What the history knows of a run: its result's suite, shard and environment, and where it came
// from. Suite, shard, started and hostname tell runs apart.
struct HistoryRunInfo {
  std::string suite;
  std::string shard;
  std::string git_revision;
  std::string ampbench_version;
  std::string hostname;
  std::string cpu;
  std::string started;  // UTC, ISO 8601, as in the result's environment
  std::string finished;
  std::string source;  // the result file, as an absolute path
};
struct HistoryRunInput {
  HistoryRunInfo info;
  std::vector<HistoryRecord> records;
  // A partial run's: the number of cases it expected. Nothing for a complete run, or a record
  // that does not say (completeness unknown).
  std::optional<std::size_t> partial_of;
  bool completeness_known = false;
  Device device;  // the result's (compare.hpp's ResultFile::device)
};
// The run of an ampbench.result/1 document; throws ResultError naming `source` and the member.
HistoryRunInput history_run(const nlohmann::json& document, const std::string& source);

struct HistoryRun {
  std::int64_t id = 0;
  HistoryRunInfo info;
  std::string recorded_at;  // UTC, ISO 8601
  std::size_t records = 0;
  std::size_t failed = 0;
  std::optional<std::size_t> partial_of;  // a partial run: the cases it expected
  // label_of its device; nothing for a run recorded before the history kept devices
  std::optional<std::string> device;
};

// Which values a query selects; an empty string matches everything.
// (Initialized members, so that designated initializers may name only the filters they set.)
struct HistoryFilter {
  std::string op{};
  std::string policy{};  // an audit record's policy, or the POLICY. prefix of a training metric
  std::string model{};
  std::string key_substring{};
  // A metric's full name, or for training records its name after POLICY. (eval_loss_error).
  // Empty: normwise_rel_error of audit records and POLICY.eval_loss_error of training records.
  std::string metric{};
  std::string suite{};
  std::size_t last = 0;  // the last N values of each series (runs() : the last N runs); 0: all
};

// One value of a metric in one run, with the value of the same key and metric in the run before
// (ordered by start time) that has one.
struct SeriesPoint {
  std::int64_t run_id = 0;
  std::string started;
  std::string git_revision;
  std::string key;
  std::string metric;
  bool pass = false;
  double value = 0;
  std::optional<double> previous;
};

struct AddOutcome {
  std::int64_t run_id = 0;
  bool added = false;  // false: the run was already recorded (under run_id)
  // The run was recorded partial (under run_id), and this record of it, with more of its cases,
  // replaced that one.
  bool replaced_partial = false;
};

class History {
 public:
  enum class Open { create, existing };
  // Opens (or, with Open::create, creates) the database at `path` and checks its schema version.
  // Writers wait for each other (WAL journal, busy timeout) instead of failing at once. An
  // existing database is opened read-only; where its write-ahead log needs write access the user
  // lacks (a database in a directory they may not write), it is read as immutable: see note().
  History(const std::string& path, Open mode);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  const std::string& path() const { return path_; }
  // What a reader should know of how the database was opened ("read as immutable: ..."), or
  // empty.
  const std::string& note() const { return note_; }

  // Records a run in one transaction: all of it, or nothing when anything fails.
  AddOutcome add(const HistoryRunInput& run);

  // The runs that `filter.suite` selects, oldest first; filter.last keeps the most recent N.
  std::vector<HistoryRun> runs(const HistoryFilter& filter) const;
  // The values of the selected metric for the selected records, by key and metric, oldest first.
  std::vector<SeriesPoint> series(const HistoryFilter& filter) const;
  // Whether any record has `metric`, by either of the names HistoryFilter::metric takes.
  bool knows_metric(const std::string& metric) const;

  struct Connection;  // the SQLite handle, defined (with the statements over it) in history.cpp

 private:
  std::string path_;
  std::string note_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace ampbench::results
