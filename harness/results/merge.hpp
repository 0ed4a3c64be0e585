// Joining the result records of the shards of one suite run (ampbench.result/1) into one record,
// as if one machine had run the whole suite: `ampbench merge`, the last step of a fleet run
// (docs/results.md, "Fleet runs").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "harness/results/report.hpp"

namespace ampbench::results {

struct Merged {
  nlohmann::json document;                  // an ampbench.result/1 record
  std::size_t shard_count = 0;              // N of the shards' I/N
  std::vector<std::size_t> missing_shards;  // the indices I no input had
  // The shards that stopped early (complete is false).
  struct PartialShard {
    std::string source;
    std::string shard;  // "I/N"
    std::size_t expected = 0;
    std::vector<std::string> missing;
  };
  std::vector<PartialShard> partial_shards;
  // The suite's cases no shard has a record of, in the suite's order: those of the partial shards,
  // and those of the missing shards when a shard names the suite's cases.
  std::vector<std::string> missing_cases;
  // The shards that do not say which cases they expect (records from before ampbench did): the
  // merged record's completeness is then unknown.
  std::vector<std::string> unknown_shards;
  bool complete() const { return missing_shards.empty() && partial_shards.empty(); }
};

// Checks that every input is a shard of the same suite with the same shard count, no shard
// twice and no case in two shards; then orders the records by the suite's order (a shard names
// the suite's cases: expected.suite_keys; a record from before, by interleaving: shard I holds
// the cases at index I, I+N, I+2N...). The merged record's shard is "0/1" when every shard is
// there, otherwise the indices present ("0,2/4"); it expects the suite's cases and is complete
// when every shard is there and complete, otherwise it lists the cases missing. Environment
// members the shards agree on are kept; others become "mixed", and each shard's environment is
// kept under merged_from; the cases a backend could not run (not_run) are listed once. Throws
// ResultError naming the input and what is wrong.
Merged merge_shards(std::span<const ResultDocument> shards);

}  // namespace ampbench::results
