// Result records (ampbench.result/1) rendered for people and for CI dashboards: Markdown tables
// (a terminal, a pull request) and JUnit XML (one test case per record).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/results/compare.hpp"

namespace ampbench::results {

struct ResultDocument {
  std::string source;  // the file it came from, for headings and messages
  nlohmann::json document;
};

// Reads and checks a result file (parse_result's checks); throws ResultError naming the file.
ResultDocument load_result_document(const std::string& path);

// Per result: a heading with the suite, shard and environment, a table of its records (key, kind,
// status, the main metrics, the breaches), and a count of the failures; then each fingerprint's
// parameters and each training run's sensitivity rankings. A partial record (a run
// that stopped: complete is false) says so in its heading, with the cases it lacks; a record
// without the members is said to be of unknown completeness.
std::string markdown_report(std::span<const ResultDocument> results);

// A self-contained HTML page (inline CSS and SVG, no script, nothing fetched): per result its
// environment, a summary, the table of its records and charts drawn from the records' details
// (html_report.cpp; docs/results.md describes each chart).
std::string html_report(std::span<const ResultDocument> results);

// <testsuites> with one <testsuite> per result and one <testcase> per record (classname
// ampbench.audit or ampbench.train, its time), a <failure> holding the breaches of a failed one;
// for a partial record, one <testcase> per case that did not run, with an <error>.
std::string junit_report(std::span<const ResultDocument> results);

// The fields of a record the writers share: a string member or "-", the breaches, the seconds (0
// when absent), an audit's, a training run's, a profile run's or a fingerprint's main metrics as
// one line of text (a fingerprint's: how many parameters match its preset), and the number of
// records of a result that did not pass.
std::string text_of(const nlohmann::json& j, const char* key);
// A Markdown table cell's text: a '|' would end the cell.
std::string markdown_cell(const std::string& text);
std::vector<std::string> breaches_of(const nlohmann::json& record);
double seconds_of(const nlohmann::json& record);
std::string main_metrics(const nlohmann::json& record);
std::size_t failures_of(const ResultDocument& r);
// A fingerprint record's parameters against its preset, from its detail (ampbench.fingerprint/1):
// one row per parameter; none for the other kinds, or a fingerprint that failed before its tests.
struct FingerprintRow {
  std::string parameter;
  std::string inferred;
  std::string preset;
  bool match = false;
};
std::vector<FingerprintRow> fingerprint_rows(const nlohmann::json& record);
// A training record's --sensitivity rankings (docs/training.md), per recipe, as the writers print
// them: its layers kept in bf16 one at a time, by the share of the recipe's loss error each
// removes ("+52%"; over several seeds the mean, with each seed's in `at_each_seed`); "-" for what
// the record does not hold. None for a record without them.
struct SensitivityRow {
  std::string layer, run, removed, at_each_seed, mean_loss_error, eval_loss_error;
};
struct SensitivityTable {
  std::string recipe, run;
  std::string backend;  // the ranking's backend where the record trained on both; empty otherwise
  std::string seeds;    // "1, 2, 3" over several seeds; empty over one
  std::string mean_loss_error;
  std::vector<SensitivityRow> rows;
};
std::vector<SensitivityTable> sensitivity_tables(const nlohmann::json& record);
// The sentence that introduces a ranking: "nvfp4: layers kept in bf16 one at a time, ranked by
// ...".
std::string sensitivity_caption(const SensitivityTable& t);
// The completeness the record states (parse_result's); nothing when it does not say.
std::optional<Completeness> completeness_of(const ResultDocument& r);

}  // namespace ampbench::results
