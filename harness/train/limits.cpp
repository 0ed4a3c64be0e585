#include "harness/train/limits.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "harness/train/data.hpp"

namespace ampbench::train {
namespace {

// a * b, or 2^64 - 1 when that overflows.
std::uint64_t saturated_product(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  return a != 0 && b > kMax / a ? kMax : a * b;
}

std::string bytes_text(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 0x1p30) return fmt::format("{:.1f} GiB", b / 0x1p30);
  return fmt::format("{:.1f} MiB", b / 0x1p20);
}

}  // namespace

DataSize default_dataset_size(const std::string& model) {
  // As default_dataset (trainer.cpp) makes them, with the generators' default sizes (data.hpp);
  // limits_test checks the two agree.
  if (model == "mlp") return {4096 + 512, 32, 1, "the data set"};
  if (model == "cnn") return {2048 + 512, 1 * 12 * 12, 1, "the data set"};
  if (model == "transformer")
    return {2048 + 512, 16 * (8 + positional_dims(16)), 16, "the data set"};
  throw std::invalid_argument(
      fmt::format("unknown model '{}' (known: mlp, cnn, transformer)", model));
}

std::uint64_t micro_batch_bytes(const TrainConfig& config, const DataSize& data) {
  const std::uint64_t per_sample = saturated_product(
      std::uint64_t{data.sample_size} + std::uint64_t{data.targets_per_sample}, 8);
  return saturated_product(saturated_product(config.accumulate, config.batch), per_sample);
}

std::optional<SizeProblem> size_problem(const TrainConfig& config, const DataSize& data,
                                        std::size_t warmup) {
  const auto range = [](std::size_t value, std::size_t least, std::size_t most) {
    return fmt::format("{} is not in [{}, {}]", value, least, most);
  };
  if (config.steps < 1 || config.steps > kMaxSteps) {
    return SizeProblem{"steps", range(config.steps, 1, kMaxSteps)};
  }
  if (warmup > kMaxWarmup) return SizeProblem{"warmup", range(warmup, 0, kMaxWarmup)};
  if (config.batch < 1 || config.batch > kMaxBatch) {
    return SizeProblem{"batch", range(config.batch, 1, kMaxBatch)};
  }
  if (config.batch > data.samples) {
    return SizeProblem{"batch", fmt::format("{} is more than the {} samples of {}", config.batch,
                                            data.samples, data.what)};
  }
  if (config.accumulate < 1 || config.accumulate > kMaxAccumulate) {
    return SizeProblem{"accumulate", range(config.accumulate, 1, kMaxAccumulate)};
  }
  if (const std::uint64_t bytes = micro_batch_bytes(config, data); bytes > kMaxMicroBatchBytes) {
    return SizeProblem{
        "accumulate",
        fmt::format("the {} micro-batches of a step would take {} ({} x {} samples x ({} values + "
                    "{} targets) x 8 bytes), more than the {} they may take",
                    config.accumulate, bytes_text(bytes), config.accumulate, config.batch,
                    data.sample_size, data.targets_per_sample, bytes_text(kMaxMicroBatchBytes))};
  }
  return std::nullopt;
}

std::optional<std::string> sensitivity_seeds_problem(std::uint64_t seed, std::uint64_t seeds) {
  if (seeds > kMaxSensitivitySeeds) {
    return fmt::format("{} is more than {}", seeds, kMaxSensitivitySeeds);
  }
  if (seeds > 1 && seed > std::numeric_limits<std::uint64_t>::max() - (seeds - 1)) {
    return fmt::format("the seeds {} to {} + {} go past 2^64 - 1", seed, seed, seeds - 1);
  }
  return std::nullopt;
}

}  // namespace ampbench::train
