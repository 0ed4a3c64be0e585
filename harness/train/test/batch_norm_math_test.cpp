// The batch-norm and pooling math the CUDA kernels share (batch_norm_math.hpp), on the host: given
// the sums formed in the emulation's order (sequential), it must give the CPU backend's fp32
// emulation bit for bit, forward and backward.
#include "harness/numeric/batch_norm_math.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/train/ops.hpp"

namespace ampbench::train {
namespace {

namespace cpu = backends::cpu;
namespace formats = numeric::formats;

const cpu::Arithmetic kFp32{formats::fp32, formats::fp32, formats::fp32,
                            numeric::Rounding::nearest_even};
// The kernels' eps, binary32 as ATen's kernels take it; the emulation gets the same value.
const float kEps = static_cast<float>(kBatchNormEps);

std::vector<double> uniform(std::size_t n, float low, float high, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(low, high);
  std::vector<double> v(n);
  for (double& x : v) x = u(gen);
  return v;
}

// rows x channels values (channels last, as the emulation takes them); a channel's statistics from
// sequential binary32 sums.
struct Channel {
  float mean = 0, rstd = 0;
};
Channel statistics(const std::vector<double>& x, std::size_t rows, std::size_t channels,
                   std::size_t c) {
  float sum = 0;
  for (std::size_t r = 0; r < rows; ++r) sum += static_cast<float>(x[r * channels + c]);
  Channel s;
  s.mean = divide_by_count(sum, rows);
  float squares = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float deviation = static_cast<float>(x[r * channels + c]) - s.mean;
    squares += deviation * deviation;
  }
  s.rstd = reciprocal_std(divide_by_count(squares, rows), kEps);
  return s;
}

// Offsets large against the spread, so that the two-pass variance and the rounding of x - mean
// matter.
constexpr std::size_t kRows = 75, kChannels = 4;

TEST(BatchNormMath, ForwardGivesTheEmulationBitForBit) {
  const auto x = uniform(kRows * kChannels, 3.0F, 5.0F, 1);
  const auto gamma = uniform(kChannels, 0.5F, 1.5F, 2);
  const auto beta = uniform(kChannels, -0.5F, 0.5F, 3);
  cpu::Events events;
  const auto expected = cpu::batch_norm(kFp32, x, kRows, kChannels, kEps, gamma, beta, events);
  for (std::size_t c = 0; c < kChannels; ++c) {
    const Channel s = statistics(x, kRows, kChannels, c);
    for (std::size_t r = 0; r < kRows; ++r) {
      const std::size_t i = r * kChannels + c;
      const float y = batch_norm_element(static_cast<float>(x[i]), s.mean, s.rstd,
                                         static_cast<float>(gamma[c]), static_cast<float>(beta[c]));
      ASSERT_EQ(static_cast<double>(y), expected[i]) << "row " << r << " channel " << c;
    }
  }
}

TEST(BatchNormMath, BackwardGivesTheEmulationBitForBit) {
  const auto x = uniform(kRows * kChannels, -2.0F, 6.0F, 4);
  const auto dy = uniform(kRows * kChannels, -1.0F, 1.0F, 5);
  const auto gamma = uniform(kChannels, 0.5F, 1.5F, 6);
  cpu::Events events;
  const auto expected =
      cpu::batch_norm_backward(kFp32, x, dy, kRows, kChannels, kEps, gamma, events);
  for (std::size_t c = 0; c < kChannels; ++c) {
    const Channel s = statistics(x, kRows, kChannels, c);
    float sum_dy = 0, sum_dy_deviation = 0;
    for (std::size_t r = 0; r < kRows; ++r) {
      const std::size_t i = r * kChannels + c;
      sum_dy += static_cast<float>(dy[i]);
      sum_dy_deviation += static_cast<float>(dy[i]) * (static_cast<float>(x[i]) - s.mean);
    }
    EXPECT_EQ(static_cast<double>(sum_dy), expected.dbeta[c]) << "channel " << c;
    EXPECT_EQ(static_cast<double>(batch_norm_dgamma(sum_dy_deviation, s.rstd)), expected.dgamma[c])
        << "channel " << c;
    const BatchNormBackwardScales scales = batch_norm_backward_scales(
        sum_dy, sum_dy_deviation, kRows, s.rstd, static_cast<float>(gamma[c]));
    for (std::size_t r = 0; r < kRows; ++r) {
      const std::size_t i = r * kChannels + c;
      const float dx = batch_norm_dx_element(static_cast<float>(dy[i]), static_cast<float>(x[i]),
                                             s.mean, scales);
      ASSERT_EQ(static_cast<double>(dx), expected.dx[i]) << "row " << r << " channel " << c;
    }
  }
}

TEST(BatchNormMath, MeanPoolingGivesTheEmulationBitForBit) {
  // 36 columns, as the cnn pools 6 x 6 maps: 1/36 is not a binary32 value, so the division rounds.
  constexpr std::size_t rows = 5, cols = 36;
  const auto x = uniform(rows * cols, -1.0F, 3.0F, 7);
  cpu::Events events;
  const auto means = cpu::mean_rows(kFp32, x, rows, cols, events);
  for (std::size_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (std::size_t c = 0; c < cols; ++c) sum += static_cast<float>(x[r * cols + c]);
    EXPECT_EQ(static_cast<double>(divide_by_count(sum, cols)), means[r]) << "row " << r;
  }
  const auto dy = uniform(rows, -1.0F, 1.0F, 8);
  const auto dx = cpu::mean_rows_backward(kFp32, dy, cols, events);
  for (std::size_t r = 0; r < rows; ++r) {
    const float spread = divide_by_count(static_cast<float>(dy[r]), cols);
    for (std::size_t c = 0; c < cols; ++c) {
      EXPECT_EQ(static_cast<double>(spread), dx[r * cols + c]) << "row " << r;
    }
  }
}

TEST(BatchNormMath, TheQuotientIsRoundedOnceFromBinary64) {
  // 1/3 rounded once to binary32 is 0x1.555556p-2. 2^24 + 1 is no binary32 value: converted to
  // binary32 first, the count would be 2^24 and the quotient 1; the binary64 quotient
  // 1 - 1/(2^24 + 1) rounds to 1 - 2^-24.
  EXPECT_EQ(divide_by_count(1.0F, 3), 0x1.555556p-2F);
  EXPECT_EQ(divide_by_count(16777216.0F, 16777217), 0x1.fffffep-1F);
}

}  // namespace
}  // namespace ampbench::train
