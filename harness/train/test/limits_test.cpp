// The limits of a run's sizes (limits.hpp): the default data sets' sizes without generating them,
// and the first problem each limit reports.
#include "harness/train/limits.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include "harness/train/data.hpp"

namespace ampbench::train {
namespace {

TEST(Limits, DefaultDatasetSizeIsTheGeneratedOnes) {
  for (const std::string& model : model_names()) {
    for (const std::uint64_t seed : {1u, 7u}) {
      const Dataset data = default_dataset(model, seed);
      const DataSize size = default_dataset_size(model);
      EXPECT_EQ(size.samples, data.samples()) << model;
      EXPECT_EQ(size.sample_size, data.sample_size()) << model;
      EXPECT_EQ(size.targets_per_sample, data.targets_per_sample) << model;
    }
  }
  EXPECT_THROW(default_dataset_size("resnet"), std::invalid_argument);
}

TrainConfig sized(std::size_t steps, std::size_t batch, std::size_t accumulate) {
  TrainConfig config;
  config.steps = steps;
  config.batch = batch;
  config.accumulate = accumulate;
  return config;
}

void expect_problem(const std::optional<SizeProblem>& problem, const std::string& option,
                    const std::string& message) {
  ASSERT_TRUE(problem.has_value()) << option;
  EXPECT_EQ(problem->option, option);
  EXPECT_EQ(problem->message, message);
}

TEST(Limits, EachLimitIsNamedWithItsRange) {
  const DataSize data{4096, 32, 1, "the training split"};
  EXPECT_FALSE(size_problem(sized(1, 1, 1), data));
  EXPECT_FALSE(size_problem(sized(kMaxSteps, 4096, 1), data, kMaxWarmup));
  expect_problem(size_problem(sized(0, 64, 1), data), "steps", "0 is not in [1, 100000]");
  expect_problem(size_problem(sized(kMaxSteps + 1, 64, 1), data), "steps",
                 "100001 is not in [1, 100000]");
  expect_problem(size_problem(sized(10, 64, 1), data, kMaxWarmup + 1), "warmup",
                 "100001 is not in [0, 100000]");
  expect_problem(size_problem(sized(10, 0, 1), data), "batch", "0 is not in [1, 65536]");
  expect_problem(size_problem(sized(10, 65537, 1), data), "batch", "65537 is not in [1, 65536]");
  expect_problem(size_problem(sized(10, 4097, 1), data), "batch",
                 "4097 is more than the 4096 samples of the training split");
  expect_problem(size_problem(sized(10, 64, 0), data), "accumulate", "0 is not in [1, 1024]");
  expect_problem(size_problem(sized(10, 64, 1025), data), "accumulate", "1025 is not in [1, 1024]");
}

TEST(Limits, TheMicroBatchesOfAStepMustFitTheirMemory) {
  // 1024 x 4096 samples x (1000 + 24) values x 8 bytes = 32 GiB: refused, with the estimate.
  const DataSize wide{4096, 1000, 24, "the data set"};
  EXPECT_EQ(micro_batch_bytes(sized(1, 4096, 1024), wide), std::uint64_t{32} << 30);
  expect_problem(size_problem(sized(1, 4096, 1024), wide), "accumulate",
                 "the 1024 micro-batches of a step would take 32.0 GiB (1024 x 4096 samples x "
                 "(1000 values + 24 targets) x 8 bytes), more than the 4.0 GiB they may take");
  // Exactly the limit is taken: 128 x 4096 x 1024 x 8 = 4 GiB.
  EXPECT_EQ(micro_batch_bytes(sized(1, 4096, 128), wide), kMaxMicroBatchBytes);
  EXPECT_FALSE(size_problem(sized(1, 4096, 128), wide));
  EXPECT_TRUE(size_problem(sized(1, 4096, 129), wide));
  // The estimate saturates instead of wrapping.
  const DataSize huge{4096, std::size_t{1} << 62, 0, "huge"};
  EXPECT_EQ(micro_batch_bytes(sized(1, 4, 1), huge), ~std::uint64_t{0});
}

// The seeds of a sensitivity ranking: at most 64, and none past 2^64 - 1 (they would wrap to 0).
TEST(Limits, SensitivitySeedsStayWithinTheirRangeAndDoNotWrap) {
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  EXPECT_FALSE(sensitivity_seeds_problem(1, 64));
  EXPECT_EQ(sensitivity_seeds_problem(1, 65), "65 is more than 64");
  EXPECT_FALSE(sensitivity_seeds_problem(kLast, 1));
  EXPECT_FALSE(sensitivity_seeds_problem(kLast - 1, 2));
  EXPECT_EQ(sensitivity_seeds_problem(kLast, 2),
            "the seeds 18446744073709551615 to 18446744073709551615 + 1 go past 2^64 - 1");
  EXPECT_TRUE(sensitivity_seeds_problem(kLast - 62, 64));
}

}  // namespace
}  // namespace ampbench::train
