// Joining the result records of the shards of one suite run (ampbench.result/1) into one record,
// as if one machine had run the whole suite: `ampbench merge`, the last step of a fleet run
// (docs/results.md, "Fleet runs").
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "harness/results/report.hpp"

namespace ampbench::results {

struct Merged {
  nlohmann::json document;                  // an ampbench.result/1 record
  std::size_t shard_count = 0;              // N of the shards' I/N
  std::vector<std::size_t> missing_shards;  // the indices I no input had
};

// Checks that every input is a shard of the same suite with the same shard count, no shard
// twice and no case in two shards; then interleaves the records back into the suite's order
// (shard I holds the cases at index I, I+N, I+2N...). The merged record's shard is "0/1" when
// every shard is there, otherwise the indices present ("0,2/4"). Environment members the shards
// agree on are kept; others become "mixed", and each shard's environment is kept under
// merged_from; the cases a backend could not run (not_run) are listed once. Throws ResultError
// naming the input and what is wrong.
Merged merge_shards(std::span<const ResultDocument> shards);

}  // namespace ampbench::results
