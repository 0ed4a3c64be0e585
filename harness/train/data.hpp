// Data for the training runs: seeded synthetic data sets (Gaussian clusters for an MLP, oriented
// bars for a CNN, a previous-token sequence task for a transformer block), user data from CSV and
// .npy files, and the seeded batch order. Every input value is a binary32 value, so that every
// precision policy starts from the same fp32 data; every random quantity is a splitmix64 draw at a
// position, so the data and the batch order are the same on every platform. docs/data.md defines
// the generators, the batch order and the file formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/io/json_arrays.hpp"

namespace ampbench::train {

// Bad user data; the message names the file, the line (CSV) or the index (.npy), and what is
// wrong.
class DataError : public io::InputError {
 public:
  using io::InputError::InputError;
};

struct Dataset {
  std::string name;                       // the generator and every parameter, or the file's path
  std::vector<std::size_t> sample_shape;  // e.g. {features}, {channels, size, size}
  std::size_t classes = 0;                // every target is in [0, classes)
  std::size_t targets_per_sample = 1;     // 1, or one per token for the sequence task
  std::vector<double> inputs;             // samples x prod(sample_shape), row-major, fp32 values
  std::vector<std::int64_t> targets;      // samples x targets_per_sample
  // What rounding the inputs to fp32 did: for files, how many values were not fp32 values already.
  inputs::RoundingReport rounding;

  std::size_t sample_size() const;  // prod(sample_shape)
  std::size_t samples() const;
};

// Gaussian clusters: class centres N(0, 1)^features, each sample its class's centre plus
// sigma * N(0, 1)^features, labels uniform. With the default sizes and sigma a linear model
// (nearest class mean) gets 77% to 89% right, 85% on average (docs/data.md).
inline constexpr double kClusterSigma = 2.0;
Dataset make_clusters(std::uint64_t seed, std::size_t samples, std::size_t features = 32,
                      std::size_t classes = 10, double sigma = kClusterSigma);

// NCHW images, sample_shape {channels, size, size}: class k is a bar of length about size / 2 at
// angle 180 k / classes degrees, at a random position, of brightness in [0.5, 1.5), the same in
// every channel, plus N(0, 0.4^2) noise per pixel. A matched filter (one convolution layer and a
// global max pool) separates the classes where a linear model on the pixels cannot.
Dataset make_images(std::uint64_t seed, std::size_t samples, std::size_t channels = 1,
                    std::size_t size = 12, std::size_t classes = 4);

// Token sequences, sample_shape {length, vocab + positional_dims(length)}: per position the one-hot
// token, then sin and cos of 2 pi p / T for the periods T = 4, 8, 16, ... up to the first one
// >= 2 length. The target at position p is the token at p - 1 (position 0: its own token), which
// one attention head over the positional encoding solves. targets_per_sample = length.
Dataset make_sequences(std::uint64_t seed, std::size_t samples, std::size_t length = 16,
                       std::size_t vocab = 8);
std::size_t positional_dims(std::size_t length);

// Rows of "feature, ..., feature, label": optional header (a first row that is not all numbers),
// '#' comment lines, blank lines. Numbers are read correctly rounded to fp32 (io::parse_number);
// sample_shape = {features}; classes = max label + 1 unless given. Throws DataError.
Dataset load_dataset_csv(const std::filesystem::path& path,
                         std::optional<std::size_t> classes = std::nullopt);

// Inputs: a float16/32/64 .npy of shape [samples, ...] (sample_shape the rest; [samples] is one
// feature each); targets: an integer .npy (or a float one holding integers) of shape [samples] or
// [samples, k]. Throws DataError.
Dataset load_dataset_npy(const std::filesystem::path& inputs_path,
                         const std::filesystem::path& targets_path,
                         std::optional<std::size_t> classes = std::nullopt);

// An integer uniform in [0, n), n >= 1, from the stream of draws splitmix64(stream, k),
// k = *counter, *counter + 1, ...: a draw is rejected when it falls in the last, partial copy of
// [0, n) in [0, 2^64), so every integer has probability exactly 1/n. Advances *counter.
std::uint64_t uniform_below(std::uint64_t stream, std::uint64_t* counter, std::uint64_t n);

// The order of epoch `epoch`: Fisher-Yates (i = samples - 1 down to 1: swap i with
// uniform_below(i + 1)) on the identity, with the stream splitmix64(seed, epoch).
std::vector<std::size_t> epoch_permutation(std::size_t samples, std::uint64_t epoch,
                                           std::uint64_t seed);

// The sample indices of batch `step`: entries [step * batch_size, (step + 1) * batch_size) of the
// concatenated epoch permutations, so a batch that crosses an epoch's end continues with the next
// epoch's order. Throws std::invalid_argument for zero sizes or a position beyond 2^64.
std::vector<std::size_t> batch_indices(std::size_t samples, std::size_t batch_size,
                                       std::uint64_t step, std::uint64_t seed);

struct Batch {
  std::vector<double> inputs;         // size x sample_size, row-major
  std::vector<std::int64_t> targets;  // size x targets_per_sample
  std::size_t size = 0;
};

// The samples `indices` in that order; throws std::out_of_range for an index beyond the data.
Batch gather(const Dataset& dataset, std::span<const std::size_t> indices);

struct Split {
  Dataset train;
  Dataset eval;
};

// eval: the samples at the first eval_count entries of a seeded permutation (the stream
// splitmix64(seed, 2^64 - 1)), train: the rest; both keep the original order. Throws
// std::invalid_argument when eval_count > samples.
Split split(const Dataset& dataset, std::size_t eval_count, std::uint64_t seed = 0);
// eval_count = round(eval_fraction * samples), eval_fraction in [0, 1].
Split split_fraction(const Dataset& dataset, double eval_fraction, std::uint64_t seed = 0);

}  // namespace ampbench::train
