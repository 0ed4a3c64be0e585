// The batch-norm and pooling kernels bit for bit against the host: the host forms each sum in the
// order cnn_kernels.hpp documents (strided partial sums per thread, then a tree within and across
// warps) and applies the shared math of harness/numeric/batch_norm_math.hpp, so any difference is a
// wrong index, channel, type or rounding in a kernel. Sizes that are not multiples of the block,
// more channels and rows than the grid has blocks, and each element type.
#include "kernels/cnn_kernels.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "harness/numeric/batch_norm_math.hpp"
#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/train/ops.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

using CnnKernelsTest = test::GpuTest;

const float kEps = static_cast<float>(train::kBatchNormEps);

// x rounded to nearest even in `type`, as a kernel's store rounds it.
float narrow(DType type, float x) {
  return static_cast<float>(
      numeric::round_to(dtype_format(type), numeric::Rounding::nearest_even, x).value);
}

// Values of `type` in device memory and back.
DeviceBuffer<std::byte> upload(DType type, const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * dtype_bytes(type));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      const auto bits = static_cast<std::uint16_t>(
          numeric::round_to(dtype_format(type), numeric::Rounding::nearest_even, values[i]).bits);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    }
  }
  DeviceBuffer<std::byte> d(bytes.size());
  d.copy_from(bytes, nullptr);
  return d;
}

std::vector<float> download(DType type, const DeviceBuffer<std::byte>& d) {
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<std::byte> bytes(d.size());
  d.copy_to(bytes, nullptr);
  std::vector<float> values(bytes.size() / dtype_bytes(type));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == DType::f32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);
    } else {
      std::uint16_t bits = 0;
      std::memcpy(&bits, bytes.data() + 2 * i, 2);
      values[i] = static_cast<float>(numeric::decode(dtype_format(type), bits));
    }
  }
  return values;
}

DeviceBuffer<float> upload_floats(const std::vector<float>& values) {
  DeviceBuffer<float> d(values.size());
  d.copy_from(values, nullptr);
  return d;
}

// n values of `type` (rounded to it), uniform in [low, high).
std::vector<float> uniform(DType type, std::size_t n, float low, float high, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(low, high);
  std::vector<float> v(n);
  for (float& x : v) x = narrow(type, u(gen));
  return v;
}

// The sum of term(0 .. count - 1) in the kernels' order.
float block_order_sum(std::uint64_t count, const std::function<float(std::uint64_t)>& term) {
  constexpr unsigned warp = 32, warps = kReductionThreads / warp;
  const auto warp_tree = [](float* lanes) {
    for (unsigned offset = warp / 2; offset > 0; offset /= 2) {
      for (unsigned lane = 0; lane < offset; ++lane)
        lanes[lane] = lanes[lane] + lanes[lane + offset];
    }
    return lanes[0];
  };
  std::vector<float> partial(kReductionThreads, 0.0f);
  for (std::uint64_t i = 0; i < count; ++i) partial[i % kReductionThreads] += term(i);
  std::vector<float> first_warp(warp, 0.0f);
  for (unsigned w = 0; w < warps; ++w) first_warp[w] = warp_tree(partial.data() + w * warp);
  return warp_tree(first_warp.data());
}

struct Sizes {
  std::size_t batch, channels, spatial;
  std::size_t at(std::size_t c, std::size_t i) const {
    return ((i / spatial) * channels + c) * spatial + i % spatial;
  }
  std::size_t count() const { return batch * spatial; }
  std::size_t size() const { return batch * channels * spatial; }
};

struct Statistics {
  float mean, rstd;
};

Statistics statistics(const std::vector<float>& x, const Sizes& s, std::size_t c) {
  Statistics st{};
  st.mean = train::divide_by_count(
      block_order_sum(s.count(), [&](std::uint64_t i) { return x[s.at(c, i)]; }), s.count());
  const float squares = block_order_sum(s.count(), [&](std::uint64_t i) {
    const float deviation = x[s.at(c, i)] - st.mean;
    return deviation * deviation;
  });
  st.rstd = train::reciprocal_std(train::divide_by_count(squares, s.count()), kEps);
  return st;
}

// Forward and backward on the device against the host, every output bit for bit.
void check_batch_norm(DType type, const Sizes& s) {
  SCOPED_TRACE(testing::Message() << dtype_format(type).name << " " << s.batch << "x" << s.channels
                                  << "x" << s.spatial);
  // An offset large against the spread: the two passes and the rounding of x - mean matter.
  const auto x = uniform(type, s.size(), 2.0F, 4.0F, 1);
  const auto dy = uniform(type, s.size(), -1.0F, 1.0F, 2);
  const auto gamma = uniform(DType::f32, s.channels, 0.5F, 1.5F, 3);
  const auto beta = uniform(DType::f32, s.channels, -0.5F, 0.5F, 4);
  const auto device_x = upload(type, x), device_dy = upload(type, dy);
  const auto device_gamma = upload_floats(gamma), device_beta = upload_floats(beta);
  DeviceBuffer<std::byte> y(s.size() * dtype_bytes(type)), dx(s.size() * dtype_bytes(type)),
      dgamma(s.channels * dtype_bytes(type)), dbeta(s.channels * dtype_bytes(type));
  batch_norm(type, device_x.data(), device_gamma.data(), device_beta.data(), y.data(), s.batch,
             s.channels, s.spatial, kEps, nullptr);
  batch_norm_backward(type, device_x.data(), device_dy.data(), device_gamma.data(), dx.data(),
                      dgamma.data(), dbeta.data(), s.batch, s.channels, s.spatial, kEps, nullptr);
  const auto y_host = download(type, y), dx_host = download(type, dx);
  const auto dgamma_host = download(type, dgamma), dbeta_host = download(type, dbeta);
  for (std::size_t c = 0; c < s.channels; ++c) {
    const Statistics st = statistics(x, s, c);
    const float sum_dy =
        block_order_sum(s.count(), [&](std::uint64_t i) { return dy[s.at(c, i)]; });
    const float sum_dy_deviation = block_order_sum(
        s.count(), [&](std::uint64_t i) { return dy[s.at(c, i)] * (x[s.at(c, i)] - st.mean); });
    ASSERT_EQ(std::bit_cast<std::uint32_t>(dbeta_host[c]),
              std::bit_cast<std::uint32_t>(narrow(type, sum_dy)))
        << "dbeta " << c;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(dgamma_host[c]),
              std::bit_cast<std::uint32_t>(
                  narrow(type, train::batch_norm_dgamma(sum_dy_deviation, st.rstd))))
        << "dgamma " << c;
    const auto scales =
        train::batch_norm_backward_scales(sum_dy, sum_dy_deviation, s.count(), st.rstd, gamma[c]);
    for (std::size_t i = 0; i < s.count(); ++i) {
      const std::size_t e = s.at(c, i);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(y_host[e]),
                std::bit_cast<std::uint32_t>(narrow(
                    type, train::batch_norm_element(x[e], st.mean, st.rstd, gamma[c], beta[c]))))
          << "y, channel " << c << " element " << i;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(dx_host[e]),
                std::bit_cast<std::uint32_t>(
                    narrow(type, train::batch_norm_dx_element(dy[e], x[e], st.mean, scales))))
          << "dx, channel " << c << " element " << i;
    }
  }
}

TEST_F(CnnKernelsTest, BatchNormIsTheHostMathInTheDocumentedOrder) {
  for (const DType type : {DType::f32, DType::f16, DType::bf16}) {
    // 999 values per channel: four rounds of the block, the last partial.
    check_batch_norm(type, {3, 4, 333});
  }
  // More channels than the grid's 65535 blocks (a grid-stride loop), one value each: variance 0.
  check_batch_norm(DType::f32, {1, 70000, 1});
}

void check_mean_rows(DType type, std::size_t rows, std::size_t cols) {
  SCOPED_TRACE(testing::Message() << dtype_format(type).name << " " << rows << "x" << cols);
  const auto x = uniform(type, rows * cols, -1.0F, 3.0F, 5);
  const auto dy = uniform(type, rows, -1.0F, 1.0F, 6);
  const auto device_x = upload(type, x), device_dy = upload(type, dy);
  DeviceBuffer<std::byte> y(rows * dtype_bytes(type)), dx(rows * cols * dtype_bytes(type));
  mean_rows(type, device_x.data(), y.data(), rows, cols, nullptr);
  mean_rows_backward(type, device_dy.data(), dx.data(), rows, cols, nullptr);
  const auto y_host = download(type, y), dx_host = download(type, dx);
  for (std::size_t r = 0; r < rows; ++r) {
    const float sum = block_order_sum(cols, [&](std::uint64_t c) { return x[r * cols + c]; });
    ASSERT_EQ(std::bit_cast<std::uint32_t>(y_host[r]),
              std::bit_cast<std::uint32_t>(narrow(type, train::divide_by_count(sum, cols))))
        << "row " << r;
    const float spread = narrow(type, train::divide_by_count(dy[r], cols));
    for (std::size_t c = 0; c < cols; ++c) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(dx_host[r * cols + c]),
                std::bit_cast<std::uint32_t>(spread))
          << "row " << r << " column " << c;
    }
  }
}

TEST_F(CnnKernelsTest, MeanPoolingIsTheHostMathInTheDocumentedOrder) {
  for (const DType type : {DType::f32, DType::f16, DType::bf16}) {
    check_mean_rows(type, 5, 1000);  // rows longer than the block
    check_mean_rows(type, 64, 36);   // the cnn's 6 x 6 maps
  }
  check_mean_rows(DType::f32, 70000, 3);  // more rows than the grid has blocks
}

}  // namespace
}  // namespace ampbench::kernels
