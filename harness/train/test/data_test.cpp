// The training data: the generators' determinism and golden values, their fp32 values and target
// ranges, the measured difficulty of each task (docs/data.md quotes these bands), the batch order,
// the train/eval split, and CSV and .npy files with every error message.
#include "harness/train/data.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/io/test/temp_file.hpp"
#include "harness/train/test/expect_error.hpp"

namespace ampbench::train {
namespace {

// ---- helpers ----------------------------------------------------------------------------------

using test::expect_error;

bool same_bytes(const Dataset& a, const Dataset& b) {
  return a.inputs.size() == b.inputs.size() && a.targets == b.targets &&
         std::memcmp(a.inputs.data(), b.inputs.data(), a.inputs.size() * sizeof(double)) == 0;
}

std::string hex(std::span<const double> values, std::size_t n) {
  std::string s;
  for (std::size_t k = 0; k < n; ++k) s += fmt::format("{}{:a}", k ? " " : "", values[k]);
  return s;
}

std::vector<std::size_t> class_counts(const Dataset& d) {
  std::vector<std::size_t> counts(d.classes, 0);
  for (const std::int64_t t : d.targets) ++counts.at(static_cast<std::size_t>(t));
  return counts;
}

// Nearest class mean: the class means of `train`, then each `eval` sample to the nearest mean.
// A linear classifier (argmax of m_c . x - |m_c|^2 / 2) learned from the data.
double nearest_mean_accuracy(const Dataset& train, const Dataset& eval) {
  const std::size_t width = train.sample_size();
  std::vector<double> mean(train.classes * width, 0.0);
  std::vector<double> count(train.classes, 0.0);
  for (std::size_t i = 0; i < train.samples(); ++i) {
    const auto c = static_cast<std::size_t>(train.targets[i]);
    count[c] += 1;
    for (std::size_t f = 0; f < width; ++f) mean[c * width + f] += train.inputs[i * width + f];
  }
  for (std::size_t c = 0; c < train.classes; ++c) {
    for (std::size_t f = 0; f < width; ++f) mean[c * width + f] /= std::max(1.0, count[c]);
  }
  std::size_t right = 0;
  for (std::size_t i = 0; i < eval.samples(); ++i) {
    std::size_t best = 0;
    double best_distance = INFINITY;
    for (std::size_t c = 0; c < train.classes; ++c) {
      double distance = 0;
      for (std::size_t f = 0; f < width; ++f) {
        const double t = eval.inputs[i * width + f] - mean[c * width + f];
        distance += t * t;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    right += best == static_cast<std::size_t>(eval.targets[i]) ? 1 : 0;
  }
  return static_cast<double>(right) / static_cast<double>(eval.samples());
}

using ampbench::test::temp_file;

// A .npy file: magic, version 1.0, the header padded to a multiple of 64, then the data.
std::string npy(std::string_view descr, std::string_view shape, const std::string& data,
                bool fortran = false) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr,
                                   fortran ? "True" : "False", shape);
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

// The low `bytes` bytes of each value, little-endian (or big-endian).
std::string le(const std::vector<std::uint64_t>& values, int bytes, bool big = false) {
  std::string out;
  for (const std::uint64_t v : values) {
    for (int k = 0; k < bytes; ++k) {
      out += static_cast<char>((v >> (8 * (big ? bytes - 1 - k : k))) & 0xFF);
    }
  }
  return out;
}

std::string f32_data(const std::vector<double>& values) {
  std::vector<std::uint64_t> bits;
  for (const double x : values) bits.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(x)));
  return le(bits, 4);
}

std::string f64_data(const std::vector<double>& values) {
  std::vector<std::uint64_t> bits;
  for (const double x : values) bits.push_back(std::bit_cast<std::uint64_t>(x));
  return le(bits, 8);
}

// ---- generators: determinism, golden values, fp32 values, ranges --------------------------------

struct Generator {
  const char* name;
  std::function<Dataset(std::uint64_t seed, std::size_t samples)> make;
};

const Generator kGenerators[] = {
    {"clusters", [](std::uint64_t s, std::size_t n) { return make_clusters(s, n); }},
    {"images", [](std::uint64_t s, std::size_t n) { return make_images(s, n); }},
    {"sequences", [](std::uint64_t s, std::size_t n) { return make_sequences(s, n); }},
};

TEST(Generators, SameSeedSameBytesOtherSeedOtherData) {
  for (const auto& g : kGenerators) {
    SCOPED_TRACE(g.name);
    const Dataset a = g.make(7, 50);
    EXPECT_TRUE(same_bytes(a, g.make(7, 50)));
    const Dataset b = g.make(8, 50);
    EXPECT_NE(a.inputs, b.inputs);
    EXPECT_NE(a.targets, b.targets);
  }
}

// Sample i depends on (seed, i) only: a longer data set starts with the shorter one.
TEST(Generators, SmallerDataSetIsAPrefix) {
  for (const auto& g : kGenerators) {
    SCOPED_TRACE(g.name);
    const Dataset small = g.make(3, 20);
    const Dataset large = g.make(3, 60);
    ASSERT_EQ(large.samples(), 60u);
    std::vector<std::size_t> first(20);
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
    const Batch prefix = gather(large, first);
    EXPECT_EQ(prefix.inputs, small.inputs);
    EXPECT_EQ(prefix.targets, small.targets);
  }
}

TEST(Generators, ShapesAndSizes) {
  const Dataset c = make_clusters(1, 30, 5, 3);
  EXPECT_EQ(c.sample_shape, (std::vector<std::size_t>{5}));
  EXPECT_EQ(c.classes, 3u);
  EXPECT_EQ(c.targets_per_sample, 1u);
  EXPECT_EQ(c.inputs.size(), 150u);
  EXPECT_EQ(c.targets.size(), 30u);
  EXPECT_EQ(c.samples(), 30u);

  const Dataset i = make_images(1, 30, 3, 8, 6);
  EXPECT_EQ(i.sample_shape, (std::vector<std::size_t>{3, 8, 8}));
  EXPECT_EQ(i.classes, 6u);
  EXPECT_EQ(i.inputs.size(), 30u * 192);
  EXPECT_EQ(i.samples(), 30u);

  const Dataset s = make_sequences(1, 30, 10, 5);
  // periods 4, 8, 16, 32: the first >= 2 * 10 is 32
  EXPECT_EQ(positional_dims(10), 8u);
  EXPECT_EQ(s.sample_shape, (std::vector<std::size_t>{10, 13}));
  EXPECT_EQ(s.classes, 5u);
  EXPECT_EQ(s.targets_per_sample, 10u);
  EXPECT_EQ(s.targets.size(), 300u);
  EXPECT_EQ(s.samples(), 30u);

  EXPECT_EQ(positional_dims(1), 2u);   // period 4 >= 2
  EXPECT_EQ(positional_dims(2), 2u);   // 4 >= 4
  EXPECT_EQ(positional_dims(3), 4u);   // 4, 8
  EXPECT_EQ(positional_dims(16), 8u);  // 4, 8, 16, 32
  EXPECT_EQ(positional_dims(17), 10u);
}

TEST(Generators, RejectEmptySizes) {
  EXPECT_THROW(make_clusters(1, 0), std::invalid_argument);
  EXPECT_THROW(make_clusters(1, 10, 0), std::invalid_argument);
  EXPECT_THROW(make_clusters(1, 10, 4, 0), std::invalid_argument);
  EXPECT_THROW(make_clusters(1, 10, 4, 2, -1.0), std::invalid_argument);
  EXPECT_THROW(make_clusters(1, 10, 4, 2, NAN), std::invalid_argument);
  EXPECT_THROW(make_images(1, 10, 0), std::invalid_argument);
  EXPECT_THROW(make_images(1, 10, 1, 3), std::invalid_argument);
  EXPECT_THROW(make_images(1, 10, 1, 12, 0), std::invalid_argument);
  EXPECT_THROW(make_sequences(1, 10, 0), std::invalid_argument);
  EXPECT_THROW(make_sequences(1, 10, 16, 0), std::invalid_argument);
}

// These pin the generators: a change to a draw, a stream, a formula or the rounding changes them,
// and would make results of this version incomparable with earlier ones. Computed once (x86-64,
// GCC 12); any platform must reproduce them bit for bit.
TEST(Generators, GoldenValues) {
  const Dataset c = make_clusters(42, 4, 8, 10);
  EXPECT_EQ(hex(c.inputs, 4), "0x1.46eba6p+1 0x1.936aaep-2 0x1.11384ep+2 -0x1.31d84ap-1");
  EXPECT_EQ(c.targets, (std::vector<std::int64_t>{3, 0, 5, 1}));

  const Dataset i = make_images(42, 4);
  // Pixels 72..75: row 6 of the first image.
  EXPECT_EQ(hex(std::span(i.inputs).subspan(72), 4),
            "0x1.e45fbap-3 -0x1.0515f6p-2 0x1.10fdeep-2 0x1.479348p-3");
  EXPECT_EQ(i.targets, (std::vector<std::int64_t>{3, 2, 3, 3}));

  const Dataset s = make_sequences(42, 2);
  EXPECT_EQ(std::vector<std::int64_t>(s.targets.begin(), s.targets.begin() + 8),
            (std::vector<std::int64_t>{3, 3, 3, 0, 2, 4, 2, 2}));
  // The positional encoding of position 3: sin and cos of 2 pi 3 / 4, 3 / 8, 3 / 16, 3 / 32.
  EXPECT_EQ(hex(std::span(s.inputs).subspan(3 * 16 + 8), 8),
            "-0x1p+0 0x0p+0 0x1.6a09e6p-1 -0x1.6a09e6p-1 0x1.d906bcp-1 0x1.87de2ap-2 0x1.1c73b4p-1 "
            "0x1.a9b662p-1");

  EXPECT_EQ(epoch_permutation(10, 0, 42), (std::vector<std::size_t>{4, 6, 7, 0, 9, 5, 1, 2, 3, 8}));
}

TEST(Generators, EveryInputIsAFiniteFp32ValueAndCounted) {
  for (const auto& g : kGenerators) {
    SCOPED_TRACE(g.name);
    const Dataset d = g.make(11, 200);
    for (const double x : d.inputs) {
      ASSERT_TRUE(std::isfinite(x));
      ASSERT_EQ(static_cast<double>(static_cast<float>(x)), x) << fmt::format("{:a}", x);
    }
    EXPECT_EQ(d.rounding.total(), d.inputs.size());
    EXPECT_EQ(d.rounding.overflowed, 0u);
  }
}

TEST(Generators, TargetsInRangeAndClassesRoughlyBalanced) {
  const Dataset c = make_clusters(5, 10000);
  const Dataset i = make_images(5, 4000);
  const Dataset s = make_sequences(5, 500);  // 8000 targets over 8 tokens
  for (const Dataset* d : {&c, &i, &s}) {
    SCOPED_TRACE(d->name);
    const auto counts = class_counts(*d);  // throws on a target out of range
    const double expected =
        static_cast<double>(d->targets.size()) / static_cast<double>(d->classes);
    for (const std::size_t n : counts) {
      // Binomial: the standard deviation is below sqrt(expected) = 32, 32 and 32; 15% is 4.7 of
      // them.
      EXPECT_NEAR(static_cast<double>(n), expected, 0.15 * expected);
    }
    EXPECT_TRUE(std::all_of(d->targets.begin(), d->targets.end(), [&](std::int64_t t) {
      return t >= 0 && static_cast<std::size_t>(t) < d->classes;
    }));
  }
}

// ---- the difficulty of each task --------------------------------------------------------------

// Measured over seeds 1..20 (4000 train, 1000 eval): 0.769 to 0.885, mean 0.850; sigma 1.5 gives
// 0.96, sigma 2.5 gives 0.72.
TEST(Clusters, NearestMeanAccuracyIsInTheDocumentedBand) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Split s = split(make_clusters(seed, 5000), 1000, seed);
    const double accuracy = nearest_mean_accuracy(s.train, s.eval);
    EXPECT_GE(accuracy, 0.70) << seed;
    EXPECT_LE(accuracy, 0.90) << seed;
  }
  const Split easy = split(make_clusters(1, 5000, 32, 10, 1.0), 1000);
  EXPECT_GT(nearest_mean_accuracy(easy.train, easy.eval), 0.99);
}

// The centres are the documented draws: N(0, 1) from the stream operand_seed(seed, 0), centre c
// feature f at index c * features + f; with sigma 0 every sample is its centre rounded to fp32.
TEST(Clusters, CentresAreTheDocumentedDraws) {
  const Dataset d = make_clusters(9, 40, 6, 4, 0.0);
  const std::uint64_t stream = inputs::operand_seed(9, 0);
  for (std::size_t i = 0; i < d.samples(); ++i) {
    const auto c = static_cast<std::size_t>(d.targets[i]);
    for (std::size_t f = 0; f < 6; ++f) {
      const std::uint64_t k = c * 6 + f;
      const double centre =
          inputs::standard_normal(inputs::unit_double(inputs::draw(stream, k, 0)),
                                  inputs::unit_double(inputs::draw(stream, k, 1)));
      ASSERT_EQ(d.inputs[i * 6 + f], static_cast<double>(static_cast<float>(centre)));
    }
  }
}

// A bar detector: for each class, the noiseless bar through the centre of a 7 x 7 kernel,
// correlated with the image at every position (zero padding); the class of the largest normalized
// response wins. This is one convolution layer with `classes` filters and a global max pool.
double matched_filter_accuracy(const Dataset& d) {
  const auto size = static_cast<int>(d.sample_shape[1]);
  const double half = static_cast<double>(size) / 4;
  const auto classes = static_cast<int>(d.classes);
  std::vector<std::vector<double>> kernels;
  for (int k = 0; k < classes; ++k) {
    const double angle = std::numbers::pi * k / classes;
    std::vector<double> kernel(49);
    double norm = 0;
    for (int y = 0; y < 7; ++y) {
      for (int x = 0; x < 7; ++x) {
        const double along = std::abs((x - 3) * std::cos(angle) + (y - 3) * std::sin(angle));
        const double across = std::abs((y - 3) * std::cos(angle) - (x - 3) * std::sin(angle));
        const double v = std::max(0.0, 1 - across) * std::clamp(half + 0.5 - along, 0.0, 1.0);
        kernel[static_cast<std::size_t>(y * 7 + x)] = v;
        norm += v * v;
      }
    }
    for (double& v : kernel) v /= std::sqrt(norm);
    kernels.push_back(kernel);
  }
  std::size_t right = 0;
  for (std::size_t i = 0; i < d.samples(); ++i) {
    const double* image = d.inputs.data() + i * d.sample_size();
    int best = 0;
    double best_response = -INFINITY;
    for (int k = 0; k < classes; ++k) {
      for (int cy = 0; cy < size; ++cy) {
        for (int cx = 0; cx < size; ++cx) {
          double r = 0;
          for (int y = 0; y < 7; ++y) {
            for (int x = 0; x < 7; ++x) {
              const int py = cy + y - 3;
              const int px = cx + x - 3;
              if (py < 0 || px < 0 || py >= size || px >= size) continue;
              r += kernels[static_cast<std::size_t>(k)][static_cast<std::size_t>(y * 7 + x)] *
                   image[py * size + px];
            }
          }
          if (r > best_response) {
            best_response = r;
            best = k;
          }
        }
      }
    }
    right += best == d.targets[i] ? 1 : 0;
  }
  return static_cast<double>(right) / static_cast<double>(d.samples());
}

// Measured over seeds 1..5 (2000 images): matched filter 0.818 to 0.835, nearest class mean 0.33
// to 0.36 (chance 0.25): the task needs translation invariance, not a linear model on the pixels.
TEST(Images, ConvolutionSeparatesWhatALinearModelCannot) {
  for (std::uint64_t seed = 1; seed <= 2; ++seed) {
    const Dataset d = make_images(seed, 2000);
    const double filter = matched_filter_accuracy(d);
    EXPECT_GE(filter, 0.78) << seed;
    EXPECT_LE(filter, 0.88) << seed;
    const Split s = split(d, 1000, seed);
    const double linear = nearest_mean_accuracy(s.train, s.eval);
    EXPECT_LE(linear, 0.45) << seed;
    EXPECT_GE(linear, 0.25) << seed;
  }
}

// The orientation follows the label: a horizontal bar (class 0) puts its brightness into one row
// sum, so the energy of the row sums exceeds that of the column sums; a vertical bar (class 2) the
// other way round; the diagonals (classes 1 and 3) spread it evenly.
TEST(Images, BarsAreOrientedByClass) {
  const Dataset d = make_images(4, 2000);
  std::vector<double> row_energy(4, 0.0), col_energy(4, 0.0);
  for (std::size_t i = 0; i < d.samples(); ++i) {
    const auto k = static_cast<std::size_t>(d.targets[i]);
    const double* image = d.inputs.data() + i * 144;
    for (int r = 0; r < 12; ++r) {
      double rs = 0, cs = 0;
      for (int c = 0; c < 12; ++c) {
        rs += image[r * 12 + c];
        cs += image[c * 12 + r];
      }
      row_energy[k] += rs * rs;
      col_energy[k] += cs * cs;
    }
  }
  EXPECT_GT(row_energy[0], 1.5 * col_energy[0]);         // class 0: angle 0, along x
  EXPECT_GT(col_energy[2], 1.5 * row_energy[2]);         // class 2: angle 90 degrees, along y
  EXPECT_NEAR(row_energy[1] / col_energy[1], 1.0, 0.2);  // diagonals: no preference
  EXPECT_NEAR(row_energy[3] / col_energy[3], 1.0, 0.2);
}

// ---- the sequence task ------------------------------------------------------------------------

TEST(Sequences, OneHotTokensPositionalEncodingAndPreviousTokenTargets) {
  const std::size_t length = 12;
  const std::size_t vocab = 5;
  const Dataset d = make_sequences(21, 100, length, vocab);
  const std::size_t width = d.sample_shape[1];
  const std::size_t pos_dims = positional_dims(length);
  ASSERT_EQ(width, vocab + pos_dims);
  for (std::size_t i = 0; i < d.samples(); ++i) {
    std::vector<std::int64_t> tokens(length);
    for (std::size_t p = 0; p < length; ++p) {
      const double* row = d.inputs.data() + (i * length + p) * width;
      int ones = 0;
      for (std::size_t v = 0; v < vocab; ++v) {
        ASSERT_TRUE(row[v] == 0.0 || row[v] == 1.0);
        if (row[v] == 1.0) {
          ++ones;
          tokens[p] = static_cast<std::int64_t>(v);
        }
      }
      ASSERT_EQ(ones, 1);
      for (std::size_t k = 0; k < pos_dims / 2; ++k) {
        const double angle = 2 * std::numbers::pi * static_cast<double>(p) /
                             static_cast<double>(std::size_t{4} << k);
        // Within one fp32 rounding (plus the portable sin/cos's 2^-52) of the exact value.
        EXPECT_NEAR(row[vocab + 2 * k], std::sin(angle), 0x1p-24);
        EXPECT_NEAR(row[vocab + 2 * k + 1], std::cos(angle), 0x1p-24);
      }
    }
    for (std::size_t p = 0; p < length; ++p) {
      ASSERT_EQ(d.targets[i * length + p], tokens[p == 0 ? 0 : p - 1]) << i << " " << p;
    }
  }
}

// One attention head over the positional encoding solves the task: the query of position i is the
// encoding of i, the key of j is the encoding of j + 1 (a fixed rotation by 2 pi / T of each
// sin/cos pair of j's encoding: linear in j's features), so the score sum_T cos(2 pi (i - j - 1)
// / T) peaks at j = i - 1 (and at j = 0 for i = 0); the values are the one-hot tokens. Computed
// from the stored fp32 features with beta = 10, full (non-causal) attention: every target right.
// Without attention (a function of the own token and position) the best is about 1 / vocab +
// (1 - 1 / vocab) / length = 0.18.
TEST(Sequences, OneAttentionHeadSolvesTheTaskAndNothingLocalDoes) {
  const std::size_t length = 16;
  const std::size_t vocab = 8;
  const Dataset d = make_sequences(33, 200);
  const std::size_t width = d.sample_shape[1];
  const std::size_t pairs = positional_dims(length) / 2;
  std::size_t right = 0;
  std::size_t own_right = 0;
  for (std::size_t i = 0; i < d.samples(); ++i) {
    const double* x = d.inputs.data() + i * length * width;
    for (std::size_t q = 0; q < length; ++q) {
      std::vector<double> score(length);
      for (std::size_t j = 0; j < length; ++j) {
        double s = 0;
        for (std::size_t k = 0; k < pairs; ++k) {
          const double w = 2 * std::numbers::pi / static_cast<double>(std::size_t{4} << k);
          const double qs = x[q * width + vocab + 2 * k];
          const double qc = x[q * width + vocab + 2 * k + 1];
          const double ks = x[j * width + vocab + 2 * k];
          const double kc = x[j * width + vocab + 2 * k + 1];
          // the encoding of j + 1 from that of j: sin(a + w), cos(a + w)
          const double ks1 = ks * std::cos(w) + kc * std::sin(w);
          const double kc1 = kc * std::cos(w) - ks * std::sin(w);
          s += qs * ks1 + qc * kc1;
        }
        score[j] = 10 * s;
      }
      const double top = *std::max_element(score.begin(), score.end());
      std::vector<double> mixed(vocab, 0.0);
      for (std::size_t j = 0; j < length; ++j) {
        for (std::size_t v = 0; v < vocab; ++v) {
          mixed[v] += std::exp(score[j] - top) * x[j * width + v];
        }
      }
      const auto predicted = std::max_element(mixed.begin(), mixed.end()) - mixed.begin();
      right += predicted == d.targets[i * length + q] ? 1 : 0;
      const auto own = std::max_element(x + q * width, x + q * width + vocab) - (x + q * width);
      own_right += own == d.targets[i * length + q] ? 1 : 0;
    }
  }
  const double total = static_cast<double>(d.targets.size());
  EXPECT_EQ(right, d.targets.size());
  EXPECT_NEAR(static_cast<double>(own_right) / total, 1.0 / 8 + 7.0 / 8 / 16, 0.03);
}

// ---- the batch order --------------------------------------------------------------------------

TEST(UniformBelow, EveryValueEquallyLikely) {
  std::vector<int> counts(3, 0);
  std::uint64_t counter = 0;
  for (int k = 0; k < 300000; ++k) ++counts[uniform_below(17, &counter, 3)];
  for (const int c : counts) EXPECT_NEAR(c, 100000, 1500);  // 6 standard deviations
  EXPECT_EQ(counter, 300000u);  // 2^64 mod 3 = 1: a rejection has probability 2^-64
  std::uint64_t one = 0;
  EXPECT_EQ(uniform_below(17, &one, 1), 0u);
}

// n = 3 * 2^62: 2^64 mod n = 2^62, so the draws at or above n (a quarter) are rejected. A plain
// `draw % n` would map them onto [0, 2^62), which would then come up half the time, not a third.
TEST(UniformBelow, RejectsThePartialCopy) {
  const std::uint64_t n = std::uint64_t{3} << 62;
  std::uint64_t counter = 0;
  int low = 0;
  for (int k = 0; k < 4000; ++k) {
    const std::uint64_t v = uniform_below(5, &counter, n);
    ASSERT_LT(v, n);
    low += v < (std::uint64_t{1} << 62) ? 1 : 0;
  }
  EXPECT_GT(counter, 4800u);        // about 5333 draws for 4000 values
  EXPECT_NEAR(low, 4000 / 3, 150);  // 5 standard deviations; the bias would give 2000
  EXPECT_THROW(uniform_below(5, &counter, 0), std::invalid_argument);
}

bool is_permutation_of_iota(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != i) return false;
  }
  return true;
}

TEST(Batches, EachEpochIsAPermutationAndEpochsDiffer) {
  const std::vector<std::size_t> e0 = epoch_permutation(100, 0, 9);
  const std::vector<std::size_t> e1 = epoch_permutation(100, 1, 9);
  EXPECT_TRUE(is_permutation_of_iota(e0));
  EXPECT_TRUE(is_permutation_of_iota(e1));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0, epoch_permutation(100, 0, 9));
  EXPECT_NE(e0, epoch_permutation(100, 0, 10));
  EXPECT_EQ(epoch_permutation(1, 5, 9), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(epoch_permutation(0, 0, 9).empty());
}

// Fisher-Yates with unbiased draws: each of the 6 orders of 3 samples equally often.
TEST(Batches, PermutationsAreUniform) {
  std::map<std::vector<std::size_t>, int> seen;
  for (std::uint64_t e = 0; e < 60000; ++e) ++seen[epoch_permutation(3, e, 1)];
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [order, n] : seen) EXPECT_NEAR(n, 10000, 500);  // 5.5 standard deviations
}

TEST(Batches, ConsecutiveBatchesWalkTheEpochsAndWrap) {
  const std::size_t samples = 10;
  const std::size_t batch = 3;
  std::vector<std::size_t> walked;
  for (std::uint64_t step = 0; step < 10; ++step) {  // 30 positions: three epochs
    const auto b = batch_indices(samples, batch, step, 4);
    ASSERT_EQ(b.size(), batch);
    walked.insert(walked.end(), b.begin(), b.end());
  }
  for (std::uint64_t e = 0; e < 3; ++e) {
    const std::vector<std::size_t> epoch(walked.begin() + static_cast<std::ptrdiff_t>(10 * e),
                                         walked.begin() + static_cast<std::ptrdiff_t>(10 * e + 10));
    EXPECT_TRUE(is_permutation_of_iota(epoch)) << e;
    EXPECT_EQ(epoch, epoch_permutation(samples, e, 4)) << e;
  }
  // Batch 3 holds positions 9, 10, 11: the last of epoch 0 and the first two of epoch 1.
  const auto e0 = epoch_permutation(samples, 0, 4);
  const auto e1 = epoch_permutation(samples, 1, 4);
  EXPECT_EQ(batch_indices(samples, batch, 3, 4), (std::vector<std::size_t>{e0[9], e1[0], e1[1]}));
  EXPECT_EQ(batch_indices(samples, batch, 3, 4), batch_indices(samples, batch, 3, 4));
  EXPECT_NE(batch_indices(100, 10, 0, 4), batch_indices(100, 10, 0, 5));
  // A batch larger than the data set spans several epochs.
  const auto big = batch_indices(4, 9, 0, 4);
  EXPECT_EQ(std::vector<std::size_t>(big.begin(), big.begin() + 4), epoch_permutation(4, 0, 4));
  EXPECT_EQ(std::vector<std::size_t>(big.begin() + 4, big.begin() + 8), epoch_permutation(4, 1, 4));
  EXPECT_EQ(big[8], epoch_permutation(4, 2, 4)[0]);
}

TEST(Batches, BadSizesAndOverflowThrow) {
  EXPECT_THROW(batch_indices(0, 4, 0, 1), std::invalid_argument);
  EXPECT_THROW(batch_indices(10, 0, 0, 1), std::invalid_argument);
  expect_error<std::invalid_argument>(
      [] { batch_indices(10, 4, std::uint64_t{1} << 62, 1); },
      "batch 4611686018427387904 of size 4 lies beyond 2^64 samples");
  EXPECT_NO_THROW(batch_indices(10, 4, (std::uint64_t{1} << 62) - 2, 1));
}

TEST(Batches, GatherCopiesRowsAndTargetsInOrder) {
  const Dataset d = make_sequences(2, 5, 4, 3);
  const std::size_t width = d.sample_size();
  const std::vector<std::size_t> picks = {3, 0, 3};
  const Batch b = gather(d, picks);
  EXPECT_EQ(b.size, 3u);
  ASSERT_EQ(b.inputs.size(), 3 * width);
  ASSERT_EQ(b.targets.size(), 3u * 4);
  for (std::size_t r = 0; r < picks.size(); ++r) {
    for (std::size_t k = 0; k < width; ++k) {
      ASSERT_EQ(b.inputs[r * width + k], d.inputs[picks[r] * width + k]);
    }
    for (std::size_t t = 0; t < 4; ++t) {
      ASSERT_EQ(b.targets[r * 4 + t], d.targets[picks[r] * 4 + t]);
    }
  }
  const std::vector<std::size_t> bad = {5};
  expect_error<std::out_of_range>(
      [&] { gather(d, bad); },
      "sample index 5 is beyond the 5 samples of sequences(seed=2, samples=5, length=4, vocab=3)");
}

TEST(Split, DisjointCompleteDeterministicAndInOrder) {
  const Dataset d = make_clusters(6, 50, 4, 3);
  const Split s = split(d, 12, 1);
  EXPECT_EQ(s.train.samples(), 38u);
  EXPECT_EQ(s.eval.samples(), 12u);
  EXPECT_EQ(s.eval.sample_shape, d.sample_shape);
  EXPECT_EQ(s.eval.classes, d.classes);
  EXPECT_EQ(s.eval.name, d.name + " [eval]");
  // Each row of d (all distinct) appears in exactly one part, in d's order.
  const auto row = [](const Dataset& x, std::size_t i) {
    return std::vector<double>(x.inputs.begin() + static_cast<std::ptrdiff_t>(4 * i),
                               x.inputs.begin() + static_cast<std::ptrdiff_t>(4 * i + 4));
  };
  std::size_t t = 0, e = 0;
  for (std::size_t i = 0; i < 50; ++i) {
    const bool in_train = t < 38 && row(s.train, t) == row(d, i);
    const bool in_eval = e < 12 && row(s.eval, e) == row(d, i);
    ASSERT_NE(in_train, in_eval) << i;
    (in_train ? t : e) += 1;
  }
  EXPECT_TRUE(same_bytes(s.eval, split(d, 12, 1).eval));
  EXPECT_FALSE(same_bytes(s.eval, split(d, 12, 2).eval));
  EXPECT_EQ(split_fraction(d, 0.25, 1).eval.samples(), 13u);  // 12.5 rounds up
  EXPECT_EQ(split_fraction(d, 0.0).eval.samples(), 0u);
  EXPECT_EQ(split_fraction(d, 1.0).train.samples(), 0u);
  expect_error<std::invalid_argument>(
      [&] { split(d, 51); },
      "cannot hold out 51 of the 50 samples of clusters(seed=6, samples=50, features=4, "
      "classes=3, sigma=2)");
  expect_error<std::invalid_argument>([&] { split_fraction(d, 1.5); },
                                      "eval_fraction must be in [0, 1] (got 1.5)");
}

// ---- CSV files --------------------------------------------------------------------------------

std::string csv_error(const std::string& contents, std::optional<std::size_t> classes = {}) {
  const auto path = temp_file("bad.csv", contents);
  try {
    load_dataset_csv(path, classes);
  } catch (const DataError& e) {
    const std::string message = e.what();
    const std::string prefix = path.string() + ": ";
    return message.starts_with(prefix) ? message.substr(prefix.size()) : "wrong file: " + message;
  }
  return "(no error)";
}

TEST(Csv, RoundTripWithHeaderCommentsAndBlankLines) {
  const Dataset d = make_clusters(8, 20, 3, 4);
  std::string text = "# exported for ampbench\r\nx0, x1, x2, label\r\n\r\n";
  for (std::size_t i = 0; i < d.samples(); ++i) {
    // Exact decimals (60 digits hold every fp32 value of these magnitudes) for odd rows, hex
    // floats for even ones: every text is an fp32 value, so nothing counts as changed.
    for (std::size_t f = 0; f < 3; ++f) {
      text += i % 2 ? fmt::format("{:.60f},", d.inputs[i * 3 + f])
                    : fmt::format("{:a},", d.inputs[i * 3 + f]);
    }
    text += fmt::format("{}\r\n", d.targets[i]);
    if (i == 5) text += "  # a comment between rows\n";
  }
  const Dataset r = load_dataset_csv(temp_file("round.csv", text));
  EXPECT_EQ(r.inputs, d.inputs);
  EXPECT_EQ(r.targets, d.targets);
  EXPECT_EQ(r.sample_shape, (std::vector<std::size_t>{3}));
  EXPECT_EQ(r.targets_per_sample, 1u);
  EXPECT_EQ(r.classes,
            static_cast<std::size_t>(*std::max_element(d.targets.begin(), d.targets.end()) + 1));
  EXPECT_EQ(r.rounding.total(), 60u);
  EXPECT_EQ(r.rounding.changed, 0u);
  // Shortest decimals ("{}" of the binary64) read back to the same fp32 values, but the decimals
  // themselves are not fp32 values, and the report says so.
  std::string shortest;
  for (std::size_t i = 0; i < d.samples(); ++i) {
    shortest += fmt::format("{},{},{},{}\n", d.inputs[i * 3], d.inputs[i * 3 + 1],
                            d.inputs[i * 3 + 2], d.targets[i]);
  }
  const Dataset s = load_dataset_csv(temp_file("shortest.csv", shortest));
  EXPECT_EQ(s.inputs, d.inputs);
  EXPECT_GT(s.rounding.changed, 50u);
}

TEST(Csv, NoHeaderRoundingCountedClassesGivenFloatLabels) {
  // 0.1 is not an fp32 value (rounded from its decimal value, not through a binary64); 0.5 is.
  const Dataset r =
      load_dataset_csv(temp_file("plain.csv", "0.1,0.5,1\n0.5,0.25,0.0\n-2,3e-3,2.0\n"), 5);
  EXPECT_EQ(r.inputs, (std::vector<double>{static_cast<double>(0.1f), 0.5, 0.5, 0.25, -2,
                                           static_cast<double>(3e-3f)}));
  EXPECT_EQ(r.targets, (std::vector<std::int64_t>{1, 0, 2}));
  EXPECT_EQ(r.classes, 5u);
  EXPECT_EQ(r.rounding.total(), 6u);
  EXPECT_EQ(r.rounding.changed, 2u);
}

// The header rule: a first row that is not all numbers is a header, even a data row with a typo;
// the header's field count must then match the rows'.
TEST(Csv, FirstRowWithANonNumberIsAHeader) {
  const Dataset r = load_dataset_csv(temp_file("typo.csv", "1,2,x\n1,2,1\n3,4,0\n"));
  EXPECT_EQ(r.samples(), 2u);
  EXPECT_EQ(r.targets, (std::vector<std::int64_t>{1, 0}));
}

// The largest int64 label counts its classes without overflowing (found by fuzzing,
// docs/fuzzing.md; the sanitizer build's UBSan checks it).
TEST(Csv, TheLargestLabelCountsItsClasses) {
  const Dataset r = load_dataset_csv(temp_file("big.csv", "1,2,9223372036854775807\n"));
  EXPECT_EQ(r.classes, std::size_t{1} << 63);
}

TEST(Csv, EveryErrorNamesTheLineAndWhatIsWrong) {
  EXPECT_EQ(csv_error(""), "empty file");
  EXPECT_EQ(csv_error("# nothing\n\n"), "no data rows");
  EXPECT_EQ(csv_error("a,b,label\n"), "no data rows after the header");
  EXPECT_EQ(csv_error("1,2,0\n1,abc,1\n"), "line 2, field 2: 'abc' is not a number");
  EXPECT_EQ(csv_error("1,2,0\n\n1,2,3,1\n"), "line 3: 4 fields, but line 1 has 3");
  EXPECT_EQ(csv_error("a,b,c\n1,2\n"), "line 2: 2 fields, but the header on line 1 has 3");
  EXPECT_EQ(csv_error("1,2,0\n1,,1\n"), "line 2, field 2: empty field");
  EXPECT_EQ(csv_error("1,2,2.5\n"),
            "line 1, field 3 (the label): '2.5' is not a non-negative integer");
  EXPECT_EQ(csv_error("1,2,-1\n"),
            "line 1, field 3 (the label): '-1' is not a non-negative integer");
  EXPECT_EQ(csv_error("1,2,1\n1,2,cat\n"),
            "line 2, field 3 (the label): 'cat' is not a non-negative integer");
  EXPECT_EQ(csv_error("1,2,3\n1,2,7\n", 5),
            "line 2, field 3 (the label): label 7 is not below the number of classes, 5");
  EXPECT_EQ(csv_error("1,inf,0\n"), "line 1, field 2: 'inf' is not a finite number");
  EXPECT_EQ(csv_error("1,nan,0\n"), "line 1, field 2: 'nan' is not a finite number");
  EXPECT_EQ(csv_error("1,1e39,0\n"), "line 1, field 2: '1e39' is beyond the range of fp32");
  EXPECT_EQ(csv_error("3\n"), "line 1: a row needs at least one feature and a label, got 1 field");
  const auto missing = std::filesystem::path(testing::TempDir()) / "no-such.csv";
  expect_error<DataError>([&] { load_dataset_csv(missing); },
                          missing.string() + ": cannot open: No such file or directory");
  // A file that cannot be read: the reason, never an exception of the standard library.
  expect_error<DataError>([&] { load_dataset_csv("/proc/self/mem"); },
                          "/proc/self/mem: cannot read: Input/output error");
  expect_error<DataError>([&] { load_dataset_csv("/tmp"); }, "/tmp: is a directory");
  // A bad field of a huge line is quoted briefly.
  EXPECT_EQ(csv_error("1,2,0\n1," + std::string(1 << 20, 'x') + ",0\n"),
            "line 2, field 2: '" + std::string(60, 'x') + "…' is not a number");
}

// ---- .npy files -------------------------------------------------------------------------------

std::string npy_error(const std::string& inputs, const std::string& targets,
                      std::optional<std::size_t> classes = {}) {
  const auto x = temp_file("x.npy", inputs);
  const auto y = temp_file("y.npy", targets);
  try {
    load_dataset_npy(x, y, classes);
  } catch (const DataError& e) {
    std::string message = e.what();
    for (const auto& [path, name] :
         {std::pair{x.string(), "x.npy"}, std::pair{y.string(), "y.npy"}}) {
      for (std::size_t at; (at = message.find(path)) != std::string::npos;) {
        message.replace(at, path.size(), name);
      }
    }
    return message;
  }
  return "(no error)";
}

TEST(Npy, RoundTripFloat32InputsIntegerTargets) {
  const Dataset d = make_images(3, 6, 2, 4, 3);
  const std::string x = npy("<f4", "(6, 2, 4, 4)", f32_data(d.inputs));
  std::vector<std::uint64_t> labels(d.targets.begin(), d.targets.end());
  for (const auto& [descr, bytes, big] :
       {std::tuple{"<i8", 8, false}, std::tuple{"<i4", 4, false}, std::tuple{"|u1", 1, false},
        std::tuple{">i2", 2, true}, std::tuple{"<u8", 8, false}}) {
    SCOPED_TRACE(descr);
    const Dataset r = load_dataset_npy(
        temp_file("x.npy", x), temp_file("y.npy", npy(descr, "(6,)", le(labels, bytes, big))));
    EXPECT_EQ(r.inputs, d.inputs);
    EXPECT_EQ(r.targets, d.targets);
    EXPECT_EQ(r.sample_shape, (std::vector<std::size_t>{2, 4, 4}));
    EXPECT_EQ(r.targets_per_sample, 1u);
    EXPECT_EQ(r.rounding.changed, 0u);
  }
}

TEST(Npy, Float64InputsAreRoundedAndCountedTargetsPerSample) {
  const std::string x = npy("<f8", "(2, 3)", f64_data({0.1, 0.5, -1, 3, 1e-50, 0.25}));
  const std::string y = npy("<i8", "(2, 2)", le({0, 3, 1, 2}, 8));
  const Dataset r = load_dataset_npy(temp_file("x.npy", x), temp_file("y.npy", y));
  EXPECT_EQ(r.inputs, (std::vector<double>{static_cast<double>(0.1f), 0.5, -1, 3, 0, 0.25}));
  EXPECT_EQ(r.rounding.changed, 2u);  // 0.1 and 1e-50
  EXPECT_EQ(r.rounding.flushed, 1u);
  EXPECT_EQ(r.targets_per_sample, 2u);
  EXPECT_EQ(r.classes, 4u);
  // A one-dimensional inputs array: one feature per sample; float labels holding integers.
  const Dataset one =
      load_dataset_npy(temp_file("x.npy", npy("<f4", "(3,)", f32_data({1, 2, 3}))),
                       temp_file("y.npy", npy("<f8", "(3,)", f64_data({2, 0, 1}))), 7);
  EXPECT_EQ(one.sample_shape, (std::vector<std::size_t>{1}));
  EXPECT_EQ(one.targets, (std::vector<std::int64_t>{2, 0, 1}));
  EXPECT_EQ(one.classes, 7u);
}

TEST(Npy, EveryErrorNamesTheFileAndWhatIsWrong) {
  const std::string x = npy("<f4", "(3, 2)", f32_data({1, 2, 3, 4, 5, 6}));
  const std::string y = npy("<i8", "(3,)", le({0, 1, 2}, 8));
  EXPECT_EQ(npy_error(x, y), "(no error)");
  EXPECT_EQ(npy_error(x, npy("<i8", "(2,)", le({0, 1}, 8))), "y.npy: 2 samples, but x.npy has 3");
  EXPECT_EQ(npy_error(x, npy("<i4", "(3,)", le({0, 0xFFFFFFFF, 2}, 4))),
            "y.npy: index 1: label -1 is not a non-negative integer");
  EXPECT_EQ(npy_error(x, npy("<u8", "(3,)", le({0, ~std::uint64_t{0}, 2}, 8))),
            "y.npy: index 1: label 18446744073709551615 is too large");
  EXPECT_EQ(npy_error(x, npy("<f8", "(3,)", f64_data({0, 2.5, 1}))),
            "y.npy: index 1: label 2.5 is not a non-negative integer");
  EXPECT_EQ(npy_error(x, y, 2), "y.npy: index 2: label 2 is not below the number of classes, 2");
  EXPECT_EQ(npy_error(x, npy("<c8", "(3,)", le({0, 0, 0}, 8))),
            "y.npy: unsupported dtype '<c8' for targets (supported: signed and unsigned integers "
            "of 1, 2, 4 or 8 bytes, and floats holding integers)");
  EXPECT_EQ(npy_error(x, npy("<i8", "(3, 1, 1)", le({0, 1, 2}, 8))),
            "y.npy: shape [3, 1, 1]: expected [samples] or [samples, k]");
  EXPECT_EQ(npy_error(x, npy("<i8", "(3, 0)", "")),
            "y.npy: shape [3, 0] has no targets per sample");
  EXPECT_EQ(
      npy_error(x, npy("<i8", "(3,)", le({0, 1}, 8))),
      "y.npy: shape [3] of '<i8' needs 3 elements of 8 bytes, but 16 bytes follow the header");
  EXPECT_EQ(npy_error(x, npy("<i8", "(3,)", le({0, 1, 2}, 8), true)),
            "y.npy: fortran_order is True: only C-order arrays are supported; save "
            "np.ascontiguousarray(a)");
  EXPECT_EQ(npy_error(x, "label,0\n"), "y.npy: bad .npy file: the file must start with \\x93NUMPY");
  EXPECT_EQ(npy_error(x, ""), "y.npy: empty file");
  EXPECT_EQ(npy_error("", y), "x.npy: empty file");
  EXPECT_EQ(npy_error(npy("<f4", "()", f32_data({1})), y),
            "x.npy: a scalar (shape []) has no sample dimension");
  EXPECT_EQ(npy_error(npy("<f4", "(0, 2)", ""), y), "x.npy: no samples (shape [0, 2])");
  EXPECT_EQ(npy_error(npy("<f8", "(3, 2)", f64_data({1, 2, 3, 1e39, 5, 6})), y),
            "x.npy: element 3 (sample 1) is inf in fp32: training inputs must be finite");
  // The inputs reader's own errors come through as DataError.
  EXPECT_EQ(npy_error(npy("<i4", "(3, 2)", le({1, 2, 3, 4, 5, 6}, 4)), y).substr(0, 30),
            "x.npy: unsupported dtype '<i4'");
}

}  // namespace
}  // namespace ampbench::train
