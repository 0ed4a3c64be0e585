// ampbench history: how a metric moved over the recorded runs (harness/results/history.hpp), the
// runs themselves, or result files added to the history (shards run on other machines).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/history.hpp"
#include "harness/results/report.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench history";

// The commit of a `git describe --always --dirty` revision ("v0.1-3-gabc1234-dirty" ->
// "abc1234-dirty"): what tells two builds apart in a narrow column.
std::string short_revision(const std::string& revision) {
  const bool dirty = revision.ends_with("-dirty");
  const std::string clean = dirty ? revision.substr(0, revision.size() - 6) : revision;
  const auto g = clean.rfind("-g");
  const bool described = g != std::string::npos && g + 2 < clean.size() &&
                         clean.find_first_not_of("0123456789abcdef", g + 2) == std::string::npos;
  const std::string commit = described ? clean.substr(g + 2) : clean;
  return commit.substr(0, 12) + (dirty ? "-dirty" : "");
}

// The change against the previous run of the same key: relative where the previous value is not
// zero, and whether it is for the better or the worse by the rule compare uses.
std::string change_text(const results::SeriesPoint& p) {
  if (!p.previous) return "-";
  if (p.value == *p.previous) return "0";
  const std::string change =
      *p.previous == 0
          ? fmt::format("{:+.3g}", p.value - *p.previous)
          : fmt::format("{:+.1f}%", 100 * (p.value - *p.previous) / std::abs(*p.previous));
  const auto direction = results::direction_of(p.metric);
  if (direction == results::Direction::unjudged) return change;
  const bool worse = (p.value > *p.previous) == (direction == results::Direction::lower_is_better);
  return change + (worse ? " worse" : " better");
}

// --op, --policy, --model, --key or --metric: options that choose values, not runs.
bool selects_values(const HistoryArgs& args) {
  return !args.op.empty() || !args.policy.empty() || !args.model.empty() || !args.key.empty() ||
         !args.metric.empty();
}

int add_results(const HistoryArgs& args, std::ostream& out, std::ostream& err) {
  FilePlan files;
  for (const auto& path : args.add) files.input("--add", path);
  files.database("--db", args.db);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  // Every file is read and checked before the database is touched.
  std::vector<results::HistoryRunInput> runs;
  for (const auto& path : args.add) {
    try {
      const results::ResultDocument document = results::load_result_document(path);
      const auto completeness = results::completeness_of(document);
      // A run that stopped would pass for a normal run in the history's series.
      if (completeness && !completeness->complete && !args.partial) {
        err << fmt::format(
            "{}: {}: a partial run ({}); the history keeps it only with --partial, flagged as "
            "partial until the complete record of the run replaces it\n",
            kCommand, path, results::completeness_text(completeness));
        return kExitUsage;
      }
      runs.push_back(results::history_run(document.document, path));
    } catch (const results::ResultError& e) {
      err << fmt::format("{}: {}\n", kCommand, e.what());
      return kExitUsage;
    }
  }
  try {
    results::History history(args.db, results::History::Open::create);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto outcome = history.add(runs[i]);
      if (outcome.added) {
        out << fmt::format(
            "{}: recorded as run {} (suite {}, shard {}, {} record(s){}{}) in {}\n", args.add[i],
            outcome.run_id, runs[i].info.suite, runs[i].info.shard, runs[i].records.size(),
            runs[i].partial_of ? fmt::format(" of {}, PARTIAL", *runs[i].partial_of) : "",
            runs[i].completeness_known ? ""
                                       : "; completeness unknown: a record from before "
                                         "ampbench recorded it",
            args.db);
        if (outcome.replaced_partial) {
          out << fmt::format("{}: it replaces the partial record of the same run\n", args.add[i]);
        }
      } else {
        out << fmt::format("{}: already recorded as run {} in {}; not added again\n", args.add[i],
                           outcome.run_id, args.db);
      }
    }
  } catch (const results::HistoryError& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  return kExitOk;
}

void print_runs(const std::vector<results::HistoryRun>& runs, const HistoryArgs& args,
                std::ostream& out) {
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : runs) {
      const auto& i = r.info;
      list.push_back({{"id", r.id},
                      {"suite", i.suite},
                      {"shard", i.shard},
                      {"git_revision", i.git_revision},
                      {"ampbench_version", i.ampbench_version},
                      {"hostname", i.hostname},
                      {"cpu", i.cpu},
                      {"started", i.started},
                      {"finished", i.finished},
                      {"source", i.source},
                      {"recorded_at", r.recorded_at},
                      {"records", r.records},
                      {"failed", r.failed},
                      {"complete", !r.partial_of.has_value()},
                      {"expected", r.partial_of ? nlohmann::json(*r.partial_of) : nullptr},
                      {"device", r.device ? nlohmann::json(*r.device) : nullptr}});
    }
    out << nlohmann::json{{"db", args.db}, {"runs", list}}.dump(2) << "\n";
    return;
  }
  out << fmt::format("history {}: {} run(s)\n", args.db, runs.size());
  if (runs.empty()) return;
  static constexpr char kRow[] =
      "{:>5}  {:<20}  {:<12}  {:<13}  {:<7}  {:>8}  {:>6}  {:<16}  {:<24}  {}\n";
  out << "\n"
      << fmt::format(kRow, "run", "started", "suite", "revision", "shard", "records", "failed",
                     "host", "device", "source");
  for (const auto& r : runs) {
    const auto& i = r.info;
    out << fmt::format(
        kRow, r.id, i.started, i.suite, short_revision(i.git_revision), i.shard,
        r.partial_of ? fmt::format("{}/{}", r.records, *r.partial_of) : std::to_string(r.records),
        r.failed, i.hostname, r.device.value_or("-"),
        r.partial_of ? i.source + "  (PARTIAL: the run stopped)" : i.source);
  }
}

void print_series(const std::vector<results::SeriesPoint>& series, const HistoryArgs& args,
                  std::ostream& out) {
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : series) {
      list.push_back({{"run", p.run_id},
                      {"started", p.started},
                      {"git_revision", p.git_revision},
                      {"key", p.key},
                      {"metric", p.metric},
                      {"status", p.pass ? "pass" : "fail"},
                      {"value", p.value},
                      {"previous", p.previous ? nlohmann::json(*p.previous) : nullptr},
                      {"change", p.previous ? nlohmann::json(p.value - *p.previous) : nullptr}});
    }
    out << nlohmann::json{{"db", args.db}, {"series", list}}.dump(2) << "\n";
    return;
  }
  std::set<std::string> cases;
  std::set<std::int64_t> runs;
  for (const auto& p : series) {
    cases.insert(p.key);
    runs.insert(p.run_id);
  }
  out << fmt::format("history {}: {}; {} value(s) of {} case(s) in {} run(s)\n", args.db,
                     args.metric.empty()
                         ? "normwise_rel_error of audit cases, POLICY.eval_loss_error of training"
                         : "metric " + args.metric,
                     series.size(), cases.size(), runs.size());
  if (series.empty()) {
    const bool filtered = selects_values(args) || !args.suite.empty();
    out << (filtered ? "No recorded value matches these filters; 'ampbench history --runs' lists "
                       "the runs.\n"
                     : "No value is recorded yet: 'ampbench run' records its runs, 'ampbench "
                       "history --add' result files.\n");
    return;
  }
  out << fmt::format("\n{:>5}  {:<20}  {:<13}  {:>12}  {:<16}  {:<28}  {}\n", "run", "started",
                     "revision", "value", "change", "metric", "case");
  for (const auto& p : series) {
    out << fmt::format("{:>5}  {:<20}  {:<13}  {:>12.6g}  {:<16}  {:<28}  {}{}\n", p.run_id,
                       p.started, short_revision(p.git_revision), p.value, change_text(p), p.metric,
                       p.key, p.pass ? "" : "  (FAIL)");
  }
}

}  // namespace

int run_history(const HistoryArgs& args, std::ostream& out, std::ostream& err) {
  const bool filters_values = selects_values(args);
  if (!args.add.empty()) {
    if (filters_values || args.runs || !args.suite.empty() || args.last != 0 || args.json) {
      err << fmt::format("{}: --add records result files; it takes no query options\n", kCommand);
      return kExitUsage;
    }
    return add_results(args, out, err);
  }
  if (args.partial) {
    err << fmt::format("{}: --partial goes with --add\n", kCommand);
    return kExitUsage;
  }
  if (args.runs && filters_values) {
    err << fmt::format(
        "{}: --runs lists runs, by --suite and --last; --op, --policy, --model, --key and "
        "--metric select values\n",
        kCommand);
    return kExitUsage;
  }
  results::HistoryFilter filter{args.op,     args.policy, args.model, args.key,
                                args.metric, args.suite,  args.last};
  try {
    const results::History history(args.db, results::History::Open::existing);
    if (!history.note().empty()) err << fmt::format("{}: note: {}\n", kCommand, history.note());
    if (args.runs) {
      print_runs(history.runs(filter), args, out);
      return kExitOk;
    }
    // A metric no record has is a typo more often than an empty series.
    if (!args.metric.empty() && !history.knows_metric(args.metric)) {
      err << fmt::format(
          "{}: --metric {}: no record in {} has this metric (the metrics are listed in "
          "docs/results.md)\n",
          kCommand, args.metric, args.db);
      return kExitUsage;
    }
    print_series(history.series(filter), args, out);
  } catch (const results::HistoryError& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace ampbench::cli
