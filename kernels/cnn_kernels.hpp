// The CUDA backend's kernels for the CNN's ops besides convolutions: training-mode batch norm over
// NCHW values, per channel, and global average pooling (the mean of each row), forward and
// backward. Each launcher enqueues on `stream` and returns; every pointer is device memory.
//
// Arithmetic is binary32 for every element type, with the per-element math of
// harness/numeric/batch_norm_math.hpp (the CPU backend's emulation, operation for operation), and
// each result is rounded once to the element type `type`, to nearest even. What differs from the
// emulation is the order of the sums, which is fixed (the same on every run with the same sizes):
// one block of kReductionThreads threads per channel (batch norm) or per row (pooling); thread t
// adds its elements t, t + kReductionThreads, ... in order of their position in the channel or row
// (for batch norm: sample by sample, each sample's map in memory order); the threads' partial sums
// are then added pairwise, as a tree, within each warp and across the warps. docs/training.md.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/op_kernels.hpp"

namespace ampbench::kernels {

inline constexpr unsigned kReductionThreads = 256;

// Training-mode batch norm of x, batch x channels x spatial (NCHW with H*W = spatial): each
// channel normalised with the mean and the biased variance of its batch * spatial values (two
// passes: the mean, then the mean of the squared deviations; binary32 statistics), rstd =
// 1 / sqrt(variance + eps), then y = (x - mean) * rstd * gamma + beta. x and y of `type`; gamma
// and beta (channels) binary32: autocast keeps batch norm's weight in fp32, and a caller whose
// policy holds it narrower passes the narrow values widened.
void batch_norm(DType type, const void* x, const float* gamma, const float* beta, void* y,
                std::size_t batch, std::size_t channels, std::size_t spatial, float eps,
                cudaStream_t stream);
// Its backward from the forward's x and gamma, the statistics recomputed as the forward forms
// them: per channel, dbeta = sum dy and dgamma = sum dy (x - mean) * rstd, and dx = (dy - (x -
// mean) * proj_scale - mean dy) * rstd * gamma with proj_scale = sum dy (x - mean) / n * rstd^2
// (ATen's batch_norm_backward_reduce and _elemt). x, dy, dx, dgamma and dbeta of `type`.
void batch_norm_backward(DType type, const void* x, const void* dy, const float* gamma, void* dx,
                         void* dgamma, void* dbeta, std::size_t batch, std::size_t channels,
                         std::size_t spatial, float eps, cudaStream_t stream);

// y[r] = (sum of row r of rows x cols x) / cols: the sum in binary32, the quotient rounded once.
void mean_rows(DType type, const void* x, void* y, std::size_t rows, std::size_t cols,
               cudaStream_t stream);
// dx[r][c] = dy[r] / cols for rows x cols dx.
void mean_rows_backward(DType type, const void* dy, void* dx, std::size_t rows, std::size_t cols,
                        cudaStream_t stream);

}  // namespace ampbench::kernels
