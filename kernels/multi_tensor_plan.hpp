// How a list of tensors is cut into the work items of one multi-tensor launch, planned in plain
// C++ (no CUDA header) so that the CPU tests check it. As in PyTorch's multi_tensor_apply
// (aten/src/ATen/native/cuda/MultiTensorApply.cuh), each tensor is cut into chunks of a fixed
// number of elements and each CUDA block takes one (tensor, chunk) pair; unlike it, the whole table
// lives in device memory, so any number of tensors takes a single launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/numeric/host_device.hpp"

namespace ampbench::kernels {

// PyTorch's kChunkSize: 65536 elements per block, enough work per block for memory-bound kernels
// and a multiple of every vector width the kernels use.
inline constexpr std::size_t kMultiTensorChunkElements = 65536;

// One block's work: elements [chunk * chunk_elements, min(size, (chunk + 1) * chunk_elements)) of
// tensor number `tensor` in the list.
struct ChunkTask {
  std::uint32_t tensor;
  std::uint32_t chunk;

  friend bool operator==(const ChunkTask&, const ChunkTask&) = default;
};

// The elements of a tensor of tensor_size elements that a task covers: [begin, begin + count).
struct ChunkRange {
  std::uint64_t begin;
  std::uint64_t count;
};

AMPBENCH_HD inline ChunkRange chunk_range(
    const ChunkTask& task, std::uint64_t tensor_size,
    std::uint64_t chunk_elements = kMultiTensorChunkElements) {
  const std::uint64_t begin = static_cast<std::uint64_t>(task.chunk) * chunk_elements;
  const std::uint64_t left = tensor_size - begin;
  return {begin, left < chunk_elements ? left : chunk_elements};
}

// The tasks of a list of tensors with `sizes` elements, in tensor order, then chunk order; an empty
// tensor has none. Throws std::invalid_argument when chunk_elements is 0, and std::length_error
// when the table does not fit its types or one launch: more than 2^32 - 1 tensors or chunks of one
// tensor, or more tasks than a grid's 2^31 - 1 blocks.
inline std::vector<ChunkTask> plan_chunks(std::span<const std::size_t> sizes,
                                          std::size_t chunk_elements = kMultiTensorChunkElements) {
  if (chunk_elements == 0) throw std::invalid_argument("plan_chunks: chunk_elements is 0");
  constexpr std::size_t kMaxIndex = std::numeric_limits<std::uint32_t>::max();
  constexpr std::size_t kMaxBlocks = std::numeric_limits<std::int32_t>::max();  // gridDim.x
  if (sizes.size() > kMaxIndex) {
    throw std::length_error("plan_chunks: " + std::to_string(sizes.size()) +
                            " tensors, at most 2^32 - 1 in one launch");
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    // Rounded up without overflow: sizes near SIZE_MAX must not wrap to few chunks.
    const std::size_t chunks = sizes[i] / chunk_elements + (sizes[i] % chunk_elements != 0);
    if (chunks > kMaxIndex || chunks > kMaxBlocks - total) {
      throw std::length_error("plan_chunks: tensor " + std::to_string(i) + " of " +
                              std::to_string(sizes[i]) +
                              " elements takes the table beyond one launch's 2^31 - 1 blocks");
    }
    total += chunks;
  }
  std::vector<ChunkTask> tasks;
  tasks.reserve(total);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t chunks = sizes[i] / chunk_elements + (sizes[i] % chunk_elements != 0);
    for (std::size_t c = 0; c < chunks; ++c) {
      tasks.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(c)});
    }
  }
  return tasks;
}

}  // namespace ampbench::kernels
