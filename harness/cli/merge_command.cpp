// ampbench merge: the result records of a suite's shards joined into one, in the suite's order
// (harness/results/merge.hpp). Every input is checked before anything is written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/file_plan.hpp"
#include "harness/results/compare.hpp"
#include "harness/results/merge.hpp"

namespace ampbench::cli {
namespace {

constexpr const char* kCommand = "ampbench merge";

}  // namespace

int run_merge(const MergeArgs& args, std::ostream& out, std::ostream& err) {
  if (args.shards.empty()) {
    err << fmt::format("{}: give the shards' result files (results/SUITE/result.json)\n", kCommand);
    return kExitUsage;
  }
  FilePlan files;
  for (const auto& path : args.shards) files.input("the shard", path);
  files.output("--out", args.out);
  if (const auto problem = files.problem()) {
    err << fmt::format("{}: {}\n", kCommand, *problem);
    return kExitUsage;
  }
  std::vector<results::ResultDocument> shards;
  results::Merged merged;
  try {
    for (const auto& path : args.shards) shards.push_back(results::load_result_document(path));
    merged = results::merge_shards(shards);
  } catch (const results::ResultError& e) {
    err << fmt::format("{}: {}\n", kCommand, e.what());
    return kExitUsage;
  }
  // A shard that is missing or stopped early would make a partial suite look whole.
  const std::string cases_missing =
      merged.missing_cases.empty()
          ? std::string()
          : fmt::format("; {} case(s) missing: {}", merged.missing_cases.size(),
                        results::key_list(merged.missing_cases));
  if (!merged.complete() && !args.partial) {
    for (const auto& p : merged.partial_shards) {
      err << fmt::format("{}: {} (shard {}) stopped early: {} of {} cases ran, missing: {}\n",
                         kCommand, p.source, p.shard, p.expected - p.missing.size(), p.expected,
                         results::key_list(p.missing));
    }
    if (!merged.missing_shards.empty()) {
      err << fmt::format("{}: shard(s) {} of {} missing\n", kCommand,
                         fmt::join(merged.missing_shards, ", "), merged.shard_count);
    }
    err << fmt::format(
        "{}: the suite is incomplete{}; give every shard's complete result, or --partial to merge "
        "what is there (the merged record then says it is partial and lists what is missing)\n",
        kCommand, cases_missing);
    return kExitUsage;
  }
  for (const auto& source : merged.unknown_shards) {
    err << fmt::format(
        "{}: note: {} does not say which cases it expects (a record from before ampbench "
        "recorded it): the merged record's completeness is unknown\n",
        kCommand, source);
  }
  if (args.drop_detail) {
    for (auto& record : merged.document["records"]) record["detail"] = nullptr;
  }
  if (auto problem = write_json_file(args.out, merged.document)) {
    err << fmt::format("{}: --out {}: {}\n", kCommand, args.out, *problem);
    return kExitUsage;
  }
  out << fmt::format("suite {}: {} shard(s) of {}, {} case(s) merged into {}",
                     merged.document["suite"].get<std::string>(),
                     merged.shard_count - merged.missing_shards.size(), merged.shard_count,
                     merged.document["records"].size(), args.out);
  if (!merged.complete()) {
    out << fmt::format(
        " (PARTIAL:{}{}{})",
        merged.missing_shards.empty()
            ? ""
            : fmt::format(" shard(s) {} missing", fmt::join(merged.missing_shards, ", ")),
        merged.partial_shards.empty()
            ? ""
            : fmt::format("{} {} shard(s) stopped early", merged.missing_shards.empty() ? "" : ";",
                          merged.partial_shards.size()),
        cases_missing);
  }
  out << "\n";
  return kExitOk;
}

}  // namespace ampbench::cli
