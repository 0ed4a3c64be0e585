// The chunk table of a multi-tensor launch: every element of every tensor in exactly one task, in
// order, and the limits of one launch refused before anything is allocated.
#include "kernels/multi_tensor_plan.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace ampbench::kernels {
namespace {

// How many tasks cover each element, tensor by tensor, from the tasks and chunk_range.
std::vector<std::vector<int>> coverage(const std::vector<std::size_t>& sizes,
                                       const std::vector<ChunkTask>& tasks,
                                       std::size_t chunk_elements) {
  std::vector<std::vector<int>> covered;
  for (const std::size_t size : sizes) covered.emplace_back(size, 0);
  for (const ChunkTask& task : tasks) {
    const ChunkRange range = chunk_range(task, sizes.at(task.tensor), chunk_elements);
    EXPECT_GE(range.count, 1u) << "tensor " << task.tensor << " chunk " << task.chunk;
    EXPECT_LE(range.count, chunk_elements);
    for (std::uint64_t i = range.begin; i < range.begin + range.count; ++i) {
      ++covered.at(task.tensor).at(i);
    }
  }
  return covered;
}

TEST(PlanChunks, CoversEveryElementOnceInOrder) {
  constexpr std::size_t kChunk = 8;
  const std::vector<std::size_t> sizes{0, 1, 7, 8, 9, 0, 16, 17, 3, 0};
  const std::vector<ChunkTask> tasks = plan_chunks(sizes, kChunk);
  const std::vector<ChunkTask> expected{{1, 0}, {2, 0}, {3, 0}, {4, 0}, {4, 1}, {6, 0},
                                        {6, 1}, {7, 0}, {7, 1}, {7, 2}, {8, 0}};
  EXPECT_EQ(tasks, expected);
  for (const auto& tensor : coverage(sizes, tasks, kChunk)) {
    for (const int n : tensor) EXPECT_EQ(n, 1);
  }
}

TEST(PlanChunks, ManySmallAndOddTensorsWithTheDefaultChunk) {
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < 300; ++i) sizes.push_back(i % 17);
  for (const std::size_t n :
       {std::size_t{65535}, std::size_t{65536}, std::size_t{65537}, std::size_t{3 * 65536 + 5}}) {
    sizes.push_back(n);
  }
  const std::vector<ChunkTask> tasks = plan_chunks(sizes);
  std::size_t expected_tasks = 0;
  for (const std::size_t n : sizes) {
    expected_tasks += (n + kMultiTensorChunkElements - 1) / kMultiTensorChunkElements;
  }
  EXPECT_EQ(tasks.size(), expected_tasks);
  for (const auto& tensor : coverage(sizes, tasks, kMultiTensorChunkElements)) {
    for (const int n : tensor) ASSERT_EQ(n, 1);
  }
}

TEST(PlanChunks, EmptyListsAndEmptyTensorsHaveNoTasks) {
  EXPECT_TRUE(plan_chunks({}).empty());
  const std::vector<std::size_t> empty{0, 0, 0};
  EXPECT_TRUE(plan_chunks(empty).empty());
}

TEST(PlanChunks, TheLastChunkIsPartial) {
  const ChunkRange last = chunk_range({0, 2}, 2 * kMultiTensorChunkElements + 5);
  EXPECT_EQ(last.begin, 2 * kMultiTensorChunkElements);
  EXPECT_EQ(last.count, 5u);
  const ChunkRange full = chunk_range({0, 1}, 2 * kMultiTensorChunkElements + 5);
  EXPECT_EQ(full.count, kMultiTensorChunkElements);
}

TEST(PlanChunks, RefusesAZeroChunk) {
  const std::vector<std::size_t> sizes{4};
  EXPECT_THROW(plan_chunks(sizes, 0), std::invalid_argument);
}

TEST(PlanChunks, RefusesMoreBlocksThanOneGridHolds) {
  constexpr std::size_t kMaxBlocks = std::numeric_limits<std::int32_t>::max();
  // One chunk too many for the grid, in one tensor and across two; and a size whose rounding up
  // would wrap around.
  const std::vector<std::size_t> one{(kMaxBlocks + 1) * 4};
  EXPECT_THROW(plan_chunks(one, 4), std::length_error);
  const std::vector<std::size_t> two{kMaxBlocks / 2 + 1, kMaxBlocks / 2 + 1};
  EXPECT_THROW(plan_chunks(two, 1), std::length_error);
  const std::vector<std::size_t> huge{std::numeric_limits<std::size_t>::max()};
  EXPECT_THROW(plan_chunks(huge, 1 << 16), std::length_error);
}

}  // namespace
}  // namespace ampbench::kernels
