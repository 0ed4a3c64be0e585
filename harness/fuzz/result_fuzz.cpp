// Fuzz target: result records, ampbench.result/1 (docs/results.md). The text is read as
// load_result_document reads a file (JSON, then results::parse_result's checks); a record that
// passes goes on to everything that reads one: the Markdown, HTML and JUnit reports, the history's
// reading (history_run), merging (merge_shards) and comparing. Bad input is a results::ResultError
// naming the source (that the text is not JSON at all is nlohmann-json's to say, and it does).
//
// Invariants of an accepted record: compared with itself it has no change and every record
// matched; each record written again (results::to_json, result_document) and dumped as JSON text
// reads back as the same keys, statuses and metrics.
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/fuzz/fuzz.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/history.hpp"
#include "harness/results/merge.hpp"
#include "harness/results/record.hpp"
#include "harness/results/report.hpp"

namespace {

using namespace ampbench;

constexpr std::string_view kName = "r.json";

// The records of `file` written again as a result document, as text.
std::string rewritten(const results::ResultFile& file) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : file.records) {
    results::Record record;
    record.key = r.key;
    record.kind = "audit";
    record.pass = r.pass;
    record.metrics = r.metrics;
    records.push_back(results::to_json(record));
  }
  // The cases it expected as it says them; a record that does not say is written as complete
  // with the cases it holds.
  results::Expected expected;
  bool complete = true;
  if (file.completeness) {
    expected.keys = file.completeness->expected;
    expected.suite_keys = file.completeness->suite_keys;
    complete = file.completeness->complete;
  } else {
    for (const auto& r : file.records) expected.keys.push_back(r.key);
  }
  return results::result_document(file.suite, results::Shard{}, results::Environment{}, records,
                                  expected, complete)
      .dump();
}

void check_same(const results::ResultFile& a, const results::ResultFile& b) {
  fuzz::check(a.suite == b.suite && a.records.size() == b.records.size(),
              "the rewritten record has another suite or record count");
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    const auto& x = a.records[i];
    const auto& y = b.records[i];
    fuzz::check(x.key == y.key && x.pass == y.pass && x.metrics == y.metrics,
                "record " + x.key + " reads back differently after being written");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json document = nlohmann::json::parse(fuzz::text(data, size), nullptr, false);
  if (document.is_discarded()) return 0;
  results::ResultFile file;
  if (!fuzz::accepts<results::ResultError>(
          kName, [&] { file = results::parse_result(document, kName); })) {
    return 0;
  }

  const std::vector<results::ResultDocument> documents{{std::string(kName), document}};
  const std::span<const results::ResultDocument> all(documents);
  fuzz::accepts<>("", [&] {
    results::markdown_report(all);
    results::junit_report(all);
    results::html_report(all);
  });
  fuzz::accepts<results::ResultError>(kName,
                                      [&] { results::history_run(document, std::string(kName)); });
  fuzz::accepts<results::ResultError>(kName, [&] { results::merge_shards(all); });

  const results::Comparison same = results::compare(file, file);
  fuzz::check(same.matched == file.records.size() && same.changes.empty(),
              "a record compared with itself has changes");
  for (const auto& row : results::side_by_side(file, file)) {
    fuzz::check(row.base == row.current, "side by side with itself differs: " + row.key);
  }

  results::ResultFile again;
  const std::string text = rewritten(file);
  fuzz::check(
      fuzz::accepts<results::ResultError>(
          kName, [&] { again = results::parse_result(nlohmann::json::parse(text), kName); }),
      "the rewritten record is refused");
  check_same(file, again);
  return 0;
}
