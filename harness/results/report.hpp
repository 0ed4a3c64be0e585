// Result records (ampbench.result/1) rendered for people and for CI dashboards: Markdown tables
// (a terminal, a pull request) and JUnit XML (one test case per record).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace ampbench::results {

struct ResultDocument {
  std::string source;  // the file it came from, for headings and messages
  nlohmann::json document;
};

// Reads and checks a result file (parse_result's checks); throws ResultError naming the file.
ResultDocument load_result_document(const std::string& path);

// Per result: a heading with the suite, shard and environment, a table of its records (key, kind,
// status, the main metrics, the breaches), and a count of the failures.
std::string markdown_report(std::span<const ResultDocument> results);

// <testsuites> with one <testsuite> per result and one <testcase> per record (classname
// ampbench.audit or ampbench.train, its time), a <failure> holding the breaches of a failed one.
std::string junit_report(std::span<const ResultDocument> results);

}  // namespace ampbench::results
