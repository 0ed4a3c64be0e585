// ampbench merge: the result records of a suite's shards joined into one, in the suite's order
// (harness/results/merge.hpp). Every input is checked before anything is written.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ostream>
#include <string>
#include <vector>

#include "harness/cli/commands.hpp"
#include "harness/cli/json_file.hpp"
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
  if (auto problem = json_path_problem(args.out)) {
    err << fmt::format("{}: --out {}: {}\n", kCommand, args.out, *problem);
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
  if (!merged.missing_shards.empty() && !args.partial) {
    err << fmt::format(
        "{}: shard(s) {} of {} missing; give every shard's result, or --partial to merge "
        "what is there (compare then reports the missing cases)\n",
        kCommand, fmt::join(merged.missing_shards, ", "), merged.shard_count);
    return kExitUsage;
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
  if (!merged.missing_shards.empty()) {
    out << fmt::format(" (shard(s) {} missing)", fmt::join(merged.missing_shards, ", "));
  }
  out << "\n";
  return kExitOk;
}

}  // namespace ampbench::cli
