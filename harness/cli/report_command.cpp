// ampbench report: result records (ampbench.result/1) as an HTML page, Markdown tables and JUnit
// XML.
#include <fmt/format.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/device_comparison.hpp"
#include "harness/results/report.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench report";

}  // namespace

int run_report(const ReportArgs& args, std::ostream& out, std::ostream& err) {
  if (args.results.empty()) {
    err << fmt::format("{}: give at least one result file (results/SUITE/result.json)\n", kCommand);
    return kExitUsage;
  }
  FilePlan files;
  for (const auto& path : args.results) files.input("the result file", path);
  for (const auto& [flag, path] :
       {std::pair{"--html", &args.html}, {"--md", &args.markdown}, {"--junit", &args.junit}}) {
    if (!path->empty()) files.output(flag, *path);
  }
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  std::vector<results::ResultDocument> documents;
  for (const auto& path : args.results) {
    try {
      documents.push_back(results::load_result_document(path));
    } catch (const results::ResultError& e) {
      err << fmt::format("{}: {}\n", kCommand, e.what());
      return kExitUsage;
    }
  }
  // Records of different devices (or --side-by-side): one comparison of the devices instead of
  // one section per record.
  std::optional<results::DeviceComparison> comparison;
  try {
    if (args.side_by_side || results::from_several_devices(documents)) {
      comparison = results::compare_devices(documents, args.side_by_side);
    }
  } catch (const results::ResultError& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  const std::string markdown =
      comparison ? results::markdown_comparison(*comparison) : results::markdown_report(documents);
  if (args.html.empty() && args.markdown.empty() && args.junit.empty()) out << markdown;
  const auto page = [&] {
    return comparison ? results::html_comparison(*comparison) : results::html_report(documents);
  };
  for (const auto& [flag, path, text] :
       {std::tuple{"html", &args.html, args.html.empty() ? std::string() : page()},
        std::tuple{"md", &args.markdown, markdown},
        std::tuple{"junit", &args.junit,
                   args.junit.empty() ? std::string() : results::junit_report(documents)}}) {
    if (path->empty()) continue;
    if (auto problem = write_text_file(*path, text)) {
      err << fmt::format("{}: --{} {}: {}\n", kCommand, flag, *path, *problem);
      return kExitUsage;
    }
  }
  return kExitOk;
}

}  // namespace ampbench::cli
