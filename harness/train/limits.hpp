// The sizes of a training or profile run that ampbench takes (docs/training.md, "Limits"): steps,
// batch, accumulation and warm-up. Beyond them a run would not fit in memory or not finish; the
// command line and suites refuse them before any work, with the same messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/train/trainer.hpp"

namespace ampbench::train {

inline constexpr std::size_t kMaxSteps = 100000;     // optimizer steps (and timed profile steps)
inline constexpr std::size_t kMaxWarmup = 100000;    // untimed profile steps
inline constexpr std::size_t kMaxBatch = 65536;      // samples per micro-batch
inline constexpr std::size_t kMaxAccumulate = 1024;  // micro-batches per optimizer step
inline constexpr std::size_t kMaxSensitivitySeeds = 64;  // seeds a sensitivity ranking is over
// Every micro-batch of a step is gathered before the step runs: their inputs and targets, 8 bytes
// a value, may take this much.
inline constexpr std::uint64_t kMaxMicroBatchBytes = std::uint64_t{4} << 30;

// The size of a data set, as far as the limits need it.
struct DataSize {
  std::size_t samples = 0;
  std::size_t sample_size = 0;         // values per sample
  std::size_t targets_per_sample = 1;  // labels per sample
  std::string what;                    // how messages name it: "the training split (...)"
};

// The size of default_dataset(model, seed) for any seed, without generating it. Throws
// std::invalid_argument for a model it does not know.
DataSize default_dataset_size(const std::string& model);

// The bytes the micro-batches of one step take: accumulate x batch x (sample size + targets) x 8,
// saturated at 2^64 - 1.
std::uint64_t micro_batch_bytes(const TrainConfig& config, const DataSize& data);

// What is wrong with the run's sizes: the option ("steps", "batch", "accumulate" or "warmup") and
// the message ("70000 is more than the 4096 samples of the training split"). `data` is what the
// run draws its batches from; `warmup` the untimed steps of a profile (0 for training).
struct SizeProblem {
  std::string option;
  std::string message;
};
std::optional<SizeProblem> size_problem(const TrainConfig& config, const DataSize& data,
                                        std::size_t warmup = 0);

// What is wrong with ranking over `seeds` seeds from `seed` (TrainConfig::sensitivity_seeds): more
// than kMaxSensitivitySeeds, or seeds past 2^64 - 1 ("the seeds 18446744073709551615 to
// 18446744073709551615 + 1 go past 2^64 - 1"), which would wrap to 0.
std::optional<std::string> sensitivity_seeds_problem(std::uint64_t seed, std::uint64_t seeds);

}  // namespace ampbench::train
