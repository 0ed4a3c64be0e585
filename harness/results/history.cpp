#include "harness/results/history.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "harness/results/compare.hpp"
#include "harness/results/record.hpp"

namespace ampbench::results {
namespace {

// Five minutes: longer than any shard takes to write its run, so that shards finishing together
// queue up instead of failing.
constexpr int kBusyTimeoutMs = 300'000;

constexpr const char* kCreateSchema = R"(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  suite TEXT NOT NULL, shard TEXT NOT NULL,
  git_revision TEXT NOT NULL, ampbench_version TEXT NOT NULL,
  hostname TEXT NOT NULL, cpu TEXT NOT NULL,
  started TEXT NOT NULL, finished TEXT NOT NULL,
  source TEXT NOT NULL, recorded_at TEXT NOT NULL,
  UNIQUE (suite, shard, started, hostname));
CREATE TABLE records (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL, kind TEXT NOT NULL, pass INTEGER NOT NULL,
  op TEXT, policy TEXT, model TEXT,
  PRIMARY KEY (run_id, key));
CREATE TABLE metrics (
  run_id INTEGER NOT NULL, key TEXT NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (run_id, key, metric),
  FOREIGN KEY (run_id, key) REFERENCES records (run_id, key) ON DELETE CASCADE);
CREATE INDEX metrics_by_name ON metrics (metric);
)";

// Partial runs (their record says complete: false), with the number of cases they expected. Added
// to a database of ampbench.history/1 when it is opened for writing: an ampbench from before it
// ignores the table (and shows such runs unflagged).
constexpr const char* kCreatePartialRuns = R"(
CREATE TABLE IF NOT EXISTS partial_runs (
  run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  expected INTEGER NOT NULL);
)";

// The device of each run (device.hpp): its label, by which runs of one device are told from
// another's, and the structured device as JSON. Added like partial_runs, and ignored the same way
// by an ampbench from before it.
constexpr const char* kCreateRunDevices = R"(
CREATE TABLE IF NOT EXISTS run_devices (
  run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  device TEXT NOT NULL,
  device_json TEXT NOT NULL);
)";

// The filters of HistoryFilter, as SQL over runs r, records c and metrics m; an empty parameter
// matches everything. A training record holds all the policies of its run, so its policy is the
// prefix of the metric's name; and the metric names its training metrics either way.
constexpr const char* kSeriesQuery = R"(
SELECT r.id, r.started, r.git_revision, c.key, m.metric, c.pass, m.value
FROM metrics m
JOIN records c ON c.run_id = m.run_id AND c.key = m.key
JOIN runs r ON r.id = m.run_id
WHERE (?1 = '' OR c.op = ?1)
  AND (?2 = '' OR c.policy = ?2
       OR (c.kind = 'train' AND substr(m.metric, 1, length(?2) + 1) = ?2 || '.'))
  AND (?3 = '' OR c.model = ?3)
  AND (?4 = '' OR instr(c.key, ?4) > 0)
  AND (?5 = '' OR r.suite = ?5)
  AND (CASE WHEN ?6 = ''
       THEN (c.kind = 'audit' AND m.metric = 'normwise_rel_error')
            OR (c.kind = 'train' AND substr(m.metric, -16) = '.eval_loss_error')
       ELSE m.metric = ?6
            OR (c.kind = 'train' AND substr(m.metric, -length(?6) - 1) = '.' || ?6) END)
ORDER BY c.key, m.metric, r.started, r.id
)";

// The columns of HistoryRunInfo, in its order: what bind_info writes and read_info reads.
constexpr const char* kInfoColumns =
    "suite, shard, git_revision, ampbench_version, hostname, cpu, started, finished, source";

// id, the HistoryRunInfo columns, recorded_at, the records, the failed records, the cases a
// partial run expected (NULL for a complete run; always, in a database without partial_runs), the
// device's label (NULL for a run recorded before run_devices; always, in a database without it).
std::string runs_query(bool partial_runs, bool run_devices) {
  return fmt::format(
      R"(
SELECT id, {}, recorded_at,
       (SELECT count(*) FROM records c WHERE c.run_id = r.id),
       (SELECT count(*) FROM records c WHERE c.run_id = r.id AND c.pass = 0),
       {},
       {}
FROM runs r
WHERE (?1 = '' OR r.suite = ?1)
ORDER BY r.started, r.id
)",
      kInfoColumns,
      partial_runs ? "(SELECT expected FROM partial_runs p WHERE p.run_id = r.id)" : "NULL",
      run_devices ? "(SELECT device FROM run_devices d WHERE d.run_id = r.id)" : "NULL");
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  std::size_t end = text.find(separator);
  while (end != std::string_view::npos) {
    parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
    end = text.find(separator, start);
  }
  parts.emplace_back(text.substr(start));
  return parts;
}

const std::string& string_member(const nlohmann::json& object, const char* name,
                                 const std::string& where, const std::string& source) {
  const auto it = object.find(name);
  if (it == object.end() || !it->is_string()) {
    throw ResultError(fmt::format("{}: not an {} record: {}{} is not a string", source,
                                  kResultSchema, where, name));
  }
  return it->get_ref<const std::string&>();
}

}  // namespace

// ---- the SQLite handles -------------------------------------------------------------------------

struct History::Connection {
  struct Closer {
    void operator()(sqlite3* handle) const noexcept { sqlite3_close_v2(handle); }
  };
  std::unique_ptr<sqlite3, Closer> db;
  std::string path;
  bool partial_runs = false;  // the database has the table partial_runs
  bool run_devices = false;   // and run_devices

  [[noreturn]] void fail(std::string_view doing) const {
    throw HistoryError(fmt::format("{}: {}: {}", path, doing, sqlite3_errmsg(db.get())));
  }
  void check(int rc, std::string_view doing) const {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) fail(doing);
  }
  void exec(const char* sql, std::string_view doing) const {
    check(sqlite3_exec(db.get(), sql, nullptr, nullptr, nullptr), doing);
  }
};

namespace {

// One prepared statement; every call is checked against its connection.
class Statement {
 public:
  Statement(const History::Connection& connection, const std::string& sql, std::string_view doing)
      : connection_(connection), doing_(doing) {
    sqlite3_stmt* raw = nullptr;
    connection_.check(sqlite3_prepare_v2(connection_.db.get(), sql.c_str(), -1, &raw, nullptr),
                      doing_);
    statement_.reset(raw);
  }

  Statement& bind(int index, std::string_view text) {
    connection_.check(sqlite3_bind_text(statement_.get(), index, text.data(),
                                        static_cast<int>(text.size()), SQLITE_TRANSIENT),
                      doing_);
    return *this;
  }
  // An empty text as SQL NULL: a key without an op, a policy or a model.
  Statement& bind_or_null(int index, std::string_view text) {
    if (!text.empty()) return bind(index, text);
    connection_.check(sqlite3_bind_null(statement_.get(), index), doing_);
    return *this;
  }
  Statement& bind(int index, double value) {
    connection_.check(sqlite3_bind_double(statement_.get(), index, value), doing_);
    return *this;
  }
  Statement& bind(int index, std::int64_t value) {
    connection_.check(sqlite3_bind_int64(statement_.get(), index, value), doing_);
    return *this;
  }

  // True while there is a row to read.
  bool step() {
    const int rc = sqlite3_step(statement_.get());
    connection_.check(rc, doing_);
    return rc == SQLITE_ROW;
  }
  // Ready to bind and step again.
  void reset() {
    sqlite3_reset(statement_.get());  // returns the last step's error, already reported
    connection_.check(sqlite3_clear_bindings(statement_.get()), doing_);
  }

  std::string text(int column) const {
    const auto* text = sqlite3_column_text(statement_.get(), column);
    return text == nullptr ? std::string() : reinterpret_cast<const char*>(text);
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(statement_.get(), column); }
  double real(int column) const { return sqlite3_column_double(statement_.get(), column); }
  bool is_null(int column) const {
    return sqlite3_column_type(statement_.get(), column) == SQLITE_NULL;
  }

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
  };
  const History::Connection& connection_;
  std::string doing_;
  std::unique_ptr<sqlite3_stmt, Finalizer> statement_;
};

// HistoryRunInfo's fields in the order of kInfoColumns.
constexpr std::array<std::string HistoryRunInfo::*, 9> kInfoFields{
    &HistoryRunInfo::suite,        &HistoryRunInfo::shard,
    &HistoryRunInfo::git_revision, &HistoryRunInfo::ampbench_version,
    &HistoryRunInfo::hostname,     &HistoryRunInfo::cpu,
    &HistoryRunInfo::started,      &HistoryRunInfo::finished,
    &HistoryRunInfo::source};

// The fields as the parameters 1 ... 9.
Statement& bind_info(Statement& statement, const HistoryRunInfo& info) {
  int index = 1;
  for (const auto field : kInfoFields) statement.bind(index++, info.*field);
  return statement;
}
// The fields from the columns first ... first + 8.
HistoryRunInfo read_info(const Statement& statement, int first) {
  HistoryRunInfo info;
  int column = first;
  for (const auto field : kInfoFields) info.*field = statement.text(column++);
  return info;
}

// BEGIN IMMEDIATE: the write lock is taken (or waited for) up front, so that two writers never
// both read and then collide when they write, which SQLite answers with an immediate "busy".
// Rolled back unless committed.
class WriteTransaction {
 public:
  explicit WriteTransaction(const History::Connection& connection) : connection_(connection) {
    connection_.exec("BEGIN IMMEDIATE", "cannot start a write");
  }
  void commit() {
    connection_.exec("COMMIT", "cannot commit");
    committed_ = true;
  }
  ~WriteTransaction() {
    if (!committed_) sqlite3_exec(connection_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

 private:
  const History::Connection& connection_;
  bool committed_ = false;
};

// Whether the database has the table `name`.
bool has_table(const History::Connection& connection, const char* name) {
  Statement query(connection, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                  "cannot read the database");
  query.bind(1, name);
  return query.step();
}

// The schema version of the database; nothing for a database without tables (a new one).
std::optional<std::string> schema_version(const History::Connection& connection) {
  Statement tables(connection,
                   "SELECT count(*), count(CASE WHEN name = 'meta' THEN 1 END) "
                   "FROM sqlite_master WHERE type = 'table'",
                   "cannot read the database");
  tables.step();
  if (tables.integer(0) == 0) return std::nullopt;
  if (tables.integer(1) == 0) {
    throw HistoryError(fmt::format("{}: not an ampbench history database (it has no meta table)",
                                   connection.path));
  }
  Statement meta(connection, "SELECT value FROM meta WHERE key = 'schema'",
                 "cannot read the schema version");
  if (!meta.step()) {
    throw HistoryError(
        fmt::format("{}: not an ampbench history database (no schema version)", connection.path));
  }
  return meta.text(0);
}

void check_version(const History::Connection& connection, const std::string& version) {
  if (version != kHistorySchema) {
    throw HistoryError(fmt::format(
        "{}: history schema '{}' is not {}, the one this ampbench reads (written by a newer "
        "ampbench?); use that ampbench, or another --db",
        connection.path, version, kHistorySchema));
  }
}

// Switches the database to its write-ahead log. The switch needs the database to itself, and
// SQLite answers "busy" at once, without its busy handler, while another connection uses it: as
// when shards open the same new history together. So the switch is retried until it is done (by
// this connection, or by another, after which it is a no-op) or the busy timeout has passed.
void use_write_ahead_log(const History::Connection& connection) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    const int rc =
        sqlite3_exec(connection.db.get(), "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
      connection.check(rc, "cannot choose the journal mode");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

// ---- keys and documents -------------------------------------------------------------------------

CaseKey parse_case_key(std::string_view key) {
  const std::vector<std::string> parts = split(key, '/');
  CaseKey parsed;
  if ((parts[0] == "train" || parts[0] == "profile") && parts.size() >= 2) {
    parsed.model = parts[1];
    return parsed;
  }
  if (parts[0] != "audit") return parsed;
  // audit/OP/SHAPE/POLICY.../DIST/seed=S...: the policy is what lies between the shape and the
  // distribution, so that a policy name with a '/' in it still comes out whole.
  std::size_t seed = 0;
  while (seed < parts.size() && !parts[seed].starts_with("seed=")) ++seed;
  if (seed == parts.size() || seed < 5) return parsed;
  parsed.op = parts[1];
  for (std::size_t i = 3; i + 1 < seed; ++i) {
    parsed.policy += (i == 3 ? "" : "/") + parts[i];
  }
  return parsed;
}

HistoryRunInput history_run(const nlohmann::json& document, const std::string& source) {
  const ResultFile file = parse_result(document, source);  // the schema and the records
  HistoryRunInput run;
  HistoryRunInfo& info = run.info;
  info.suite = file.suite;
  info.shard = string_member(document, "shard", "", source);
  if (!document.contains("environment") || !document["environment"].is_object()) {
    throw ResultError(
        fmt::format("{}: not an {} record: environment is not an object", source, kResultSchema));
  }
  const auto& environment = document["environment"];
  const auto env = [&](const char* name) {
    return string_member(environment, name, "environment.", source);
  };
  info.git_revision = env("git_revision");
  info.ampbench_version = env("ampbench_version");
  info.hostname = env("hostname");
  info.cpu = env("cpu");
  info.started = env("started");
  info.finished = env("finished");
  info.source = std::filesystem::absolute(source).lexically_normal().string();
  run.device = file.device;
  run.completeness_known = file.completeness.has_value();
  if (file.completeness && !file.completeness->complete) {
    run.partial_of = file.completeness->expected.size();
  }
  const auto& records = document["records"];
  for (std::size_t i = 0; i < file.records.size(); ++i) {
    const auto& r = file.records[i];
    HistoryRecord record{r.key,
                         string_member(records[i], "kind", fmt::format("records[{}].", i), source),
                         r.pass,
                         {r.metrics.begin(), r.metrics.end()}};
    run.records.push_back(std::move(record));
  }
  return run;
}

// ---- the store ----------------------------------------------------------------------------------

namespace {

// `path` as an SQLite URI that opens it read-only and immutable: no locks, no -shm or -wal files
// (https://sqlite.org/uri.html).
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri + "?mode=ro&immutable=1";
}

// Opens `name` with `flags` on `connection` (closing what it had), with the busy timeout and
// foreign keys every use needs.
void connect(History::Connection& connection, const std::string& name, int flags) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  connection.db.reset(raw);  // closed by the destructor even when the open failed
  if (raw == nullptr) {
    throw HistoryError(fmt::format("{}: cannot open: out of memory", connection.path));
  }
  connection.check(rc, "cannot open");
  connection.check(sqlite3_busy_timeout(raw, kBusyTimeoutMs), "cannot set the busy timeout");
  connection.exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys");
}

}  // namespace

History::History(const std::string& path, Open mode)
    : path_(path), connection_(std::make_unique<Connection>()) {
  connection_->path = path;
  std::error_code ec;  // a path that cannot be looked at is SQLite's to report
  if (std::filesystem::is_directory(path, ec)) {
    throw HistoryError(fmt::format("{}: is a directory, not a history database", path));
  }
  if (mode == Open::existing && !std::filesystem::exists(path, ec) && !ec) {
    throw HistoryError(fmt::format(
        "{}: no such history database (ampbench run writes one next to its results directory; "
        "ampbench history --add RESULT.json fills one)",
        path));
  }

  if (mode == Open::existing) {
    // Read-only: a query needs no write access to the database.
    connect(*connection_, path, SQLITE_OPEN_READONLY);
    std::optional<std::string> version;
    try {
      version = schema_version(*connection_);
    } catch (const HistoryError&) {
      // In WAL mode a reader maps the -shm file and may have to create it and the -wal: without
      // write access to the directory SQLite cannot open them. Read as immutable instead.
      const int code = sqlite3_errcode(connection_->db.get());
      if (code != SQLITE_CANTOPEN && code != SQLITE_READONLY) throw;
      connect(*connection_, immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
      version = schema_version(*connection_);
      note_ = fmt::format(
          "{}: read as immutable (no write access for the -shm and -wal files its write-ahead "
          "log needs): a run being recorded now, or not yet checkpointed, may be missing",
          path);
    }
    if (!version) {
      throw HistoryError(
          fmt::format("{}: not an ampbench history database (it has no tables)", path));
    }
    check_version(*connection_, *version);
    connection_->partial_runs = has_table(*connection_, "partial_runs");
    connection_->run_devices = has_table(*connection_, "run_devices");
    return;
  }
  connect(*connection_, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  {
    // Inside the write lock, so that two shards creating the database at once create it once.
    WriteTransaction transaction(*connection_);
    if (const auto version = schema_version(*connection_)) {
      check_version(*connection_, *version);
    } else {
      connection_->exec(kCreateSchema, "cannot create the history tables");
      Statement(*connection_, "INSERT INTO meta (key, value) VALUES ('schema', ?1)",
                "cannot write the schema version")
          .bind(1, kHistorySchema)
          .step();
    }
    connection_->exec(kCreatePartialRuns, "cannot create the table of partial runs");
    connection_->exec(kCreateRunDevices, "cannot create the table of the runs' devices");
    transaction.commit();
  }
  connection_->partial_runs = true;
  connection_->run_devices = true;
  // Readers and one writer at a time without blocking each other; persistent in the file. On a
  // file system without shared memory (NFS) SQLite keeps its rollback journal, and the busy
  // timeout alone makes writers wait.
  use_write_ahead_log(*connection_);
}

History::~History() = default;

AddOutcome History::add(const HistoryRunInput& run) {
  const HistoryRunInfo& info = run.info;
  const std::string doing = fmt::format("cannot record {}", info.source);
  WriteTransaction transaction(*connection_);
  Statement existing(*connection_,
                     "SELECT id FROM runs WHERE suite = ?1 AND shard = ?2 AND started = ?3 AND "
                     "hostname = ?4",
                     doing);
  existing.bind(1, info.suite).bind(2, info.shard).bind(3, info.started).bind(4, info.hostname);
  std::int64_t run_id = 0;
  bool replaced = false;
  if (existing.step()) {
    run_id = existing.integer(0);
    // A partial record of this run gives way to a later one with more of its cases: the run keeps
    // its id, and its records are the new ones.
    Statement partial(*connection_,
                      "SELECT (SELECT count(*) FROM records c WHERE c.run_id = ?1) FROM "
                      "partial_runs WHERE run_id = ?1",
                      doing);
    partial.bind(1, run_id);
    const bool more =
        partial.step() &&
        (!run.partial_of || run.records.size() > static_cast<std::size_t>(partial.integer(0)));
    if (!more) return {run_id, false, false};
    for (const char* table : {"records", "partial_runs", "run_devices"}) {
      Statement(*connection_, fmt::format("DELETE FROM {} WHERE run_id = ?1", table), doing)
          .bind(1, run_id)
          .step();
    }
    Statement update(*connection_,
                     fmt::format("UPDATE runs SET ({}, recorded_at) = "
                                 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) WHERE id = ?11",
                                 kInfoColumns),
                     doing);
    bind_info(update, info).bind(10, utc_now()).bind(11, run_id).step();
    replaced = true;
  } else {
    Statement insert_run(*connection_,
                         fmt::format("INSERT INTO runs ({}, recorded_at) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                                     kInfoColumns),
                         doing);
    bind_info(insert_run, info).bind(10, utc_now()).step();
    run_id = sqlite3_last_insert_rowid(connection_->db.get());
  }

  Statement insert_record(*connection_,
                          "INSERT INTO records (run_id, key, kind, pass, op, policy, model) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                          doing);
  Statement insert_metric(
      *connection_, "INSERT INTO metrics (run_id, key, metric, value) VALUES (?1, ?2, ?3, ?4)",
      doing);
  for (const auto& record : run.records) {
    const CaseKey key = parse_case_key(record.key);
    insert_record.bind(1, run_id)
        .bind(2, record.key)
        .bind(3, record.kind)
        .bind(4, std::int64_t{record.pass ? 1 : 0})
        .bind_or_null(5, key.op)
        .bind_or_null(6, key.policy)
        .bind_or_null(7, key.model)
        .step();
    insert_record.reset();
    for (const auto& [metric, value] : record.metrics) {
      insert_metric.bind(1, run_id).bind(2, record.key).bind(3, metric).bind(4, value).step();
      insert_metric.reset();
    }
  }
  Statement(*connection_,
            "INSERT INTO run_devices (run_id, device, device_json) VALUES (?1, ?2, ?3)", doing)
      .bind(1, run_id)
      .bind(2, label_of(run.device))
      .bind(3, to_json(run.device).dump())
      .step();
  if (run.partial_of) {
    Statement(*connection_, "INSERT INTO partial_runs (run_id, expected) VALUES (?1, ?2)", doing)
        .bind(1, run_id)
        .bind(2, static_cast<std::int64_t>(*run.partial_of))
        .step();
  }
  transaction.commit();
  return {run_id, true, replaced};
}

std::vector<HistoryRun> History::runs(const HistoryFilter& filter) const {
  Statement query(*connection_, runs_query(connection_->partial_runs, connection_->run_devices),
                  "cannot list the runs");
  query.bind(1, filter.suite);
  std::vector<HistoryRun> runs;
  while (query.step()) {
    HistoryRun run;
    run.id = query.integer(0);
    run.info = read_info(query, 1);
    run.recorded_at = query.text(10);
    run.records = static_cast<std::size_t>(query.integer(11));
    run.failed = static_cast<std::size_t>(query.integer(12));
    if (!query.is_null(13)) run.partial_of = static_cast<std::size_t>(query.integer(13));
    if (!query.is_null(14)) run.device = query.text(14);
    runs.push_back(std::move(run));
  }
  if (filter.last != 0 && runs.size() > filter.last) {
    runs.erase(runs.begin(), runs.end() - static_cast<std::ptrdiff_t>(filter.last));
  }
  return runs;
}

std::vector<SeriesPoint> History::series(const HistoryFilter& filter) const {
  Statement query(*connection_, kSeriesQuery, "cannot read the series");
  query.bind(1, filter.op)
      .bind(2, filter.policy)
      .bind(3, filter.model)
      .bind(4, filter.key_substring)
      .bind(5, filter.suite)
      .bind(6, filter.metric);
  std::vector<SeriesPoint> all;
  while (query.step()) {
    SeriesPoint point;
    point.run_id = query.integer(0);
    point.started = query.text(1);
    point.git_revision = query.text(2);
    point.key = query.text(3);
    point.metric = query.text(4);
    point.pass = query.integer(5) != 0;
    point.value = query.real(6);
    const bool same_series =
        !all.empty() && all.back().key == point.key && all.back().metric == point.metric;
    if (same_series) point.previous = all.back().value;
    all.push_back(std::move(point));
  }
  if (filter.last == 0) return all;
  // The last N of each series: a point is kept when fewer than N of its series follow it.
  std::vector<SeriesPoint> kept;
  for (std::size_t i = 0; i < all.size(); ++i) {
    std::size_t following = 0;
    for (std::size_t j = i + 1; j < all.size() && all[j].key == all[i].key &&
                                all[j].metric == all[i].metric && following < filter.last;
         ++j) {
      ++following;
    }
    if (following < filter.last) kept.push_back(all[i]);
  }
  return kept;
}

bool History::knows_metric(const std::string& metric) const {
  Statement query(*connection_,
                  "SELECT 1 FROM metrics WHERE metric = ?1 "
                  "OR substr(metric, -length(?1) - 1) = '.' || ?1 LIMIT 1",
                  "cannot read the metrics");
  query.bind(1, metric);
  return query.step();
}

}  // namespace ampbench::results
