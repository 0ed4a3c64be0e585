// The op kernels' launchers on the device (kernels/op_kernels.hpp), against host computations:
// bit for bit where the host can repeat the device's arithmetic exactly (conversions, column sums
// in the rows' order, relu), otherwise against binary64 with the tolerance each test states. The
// shapes are chosen to cross the kernels' edges: rows longer than a block and not a multiple of
// it, more rows than the grid has blocks, more elements than the grid has threads.
#include "kernels/op_kernels.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/op_math.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::kernels {
namespace {

namespace formats = numeric::formats;
using test::GpuTest;

constexpr double kUnit32 = 0x1p-24;  // binary32's unit roundoff

std::vector<float> normal_values(std::size_t n, unsigned seed, float mean = 0, float sd = 1) {
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = normal(generator);
  return v;
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> d(host.size());
  d.copy_from(host, nullptr);
  return d;
}

template <typename T>
std::vector<T> download(const DeviceBuffer<T>& d) {
  std::vector<T> host(d.size());
  d.copy_to(host, nullptr);  // the kernels' (default) stream: waits for them, reports faults
  return host;
}

// The 16-bit patterns of the values rounded to nearest even, and back.
std::vector<std::uint16_t> to_bits(const numeric::Format& f, const std::vector<float>& x) {
  std::vector<std::uint16_t> bits(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    bits[i] = static_cast<std::uint16_t>(
        numeric::round_to(f, numeric::Rounding::nearest_even, x[i], 0).bits);
  }
  return bits;
}
std::vector<float> from_bits(const numeric::Format& f, const std::vector<std::uint16_t>& bits) {
  std::vector<float> x(bits.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(numeric::decode(f, bits[i]));
  return x;
}

// ||computed - exact|| / ||exact|| in binary64.
double normwise(std::span<const float> computed, std::span<const double> exact) {
  double difference = 0, norm = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    difference += (computed[i] - exact[i]) * (computed[i] - exact[i]);
    norm += exact[i] * exact[i];
  }
  return std::sqrt(difference / norm);
}

// Layer norm of rows x cols x in binary64: mean, rstd, y, and the backward's dx, dgamma, dbeta.
struct LayerNormExact {
  std::vector<double> mean, rstd, y, dx, dgamma, dbeta;
};
LayerNormExact layer_norm_exact(const std::vector<float>& x, const std::vector<float>& dy,
                                const std::vector<float>& gamma, const std::vector<float>& beta,
                                std::size_t rows, std::size_t cols, double eps) {
  LayerNormExact e;
  e.y.resize(rows * cols);
  e.dx.resize(rows * cols);
  e.dgamma.assign(cols, 0);
  e.dbeta.assign(cols, 0);
  const auto n = static_cast<double>(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (std::size_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= n;
    for (std::size_t c = 0; c < cols; ++c) variance += std::pow(x[r * cols + c] - mean, 2);
    const double rstd = 1 / std::sqrt(variance / n + eps);
    e.mean.push_back(mean);
    e.rstd.push_back(rstd);
    double g_sum = 0, gx_sum = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const double xhat = (x[i] - mean) * rstd;
      e.y[i] = xhat * gamma[c] + beta[c];
      g_sum += dy[i] * gamma[c];
      gx_sum += dy[i] * gamma[c] * xhat;
      e.dgamma[c] += dy[i] * xhat;
      e.dbeta[c] += dy[i];
    }
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const double xhat = (x[i] - mean) * rstd;
      e.dx[i] = rstd * (dy[i] * gamma[c] - g_sum / n - xhat * gx_sum / n);
    }
  }
  return e;
}

class OpKernelsTest : public GpuTest {};

// fp32 to fp16 and bf16 rounds to nearest even as the host's round_to does, at ties, subnormals
// and overflow; widening back is exact.
TEST_F(OpKernelsTest, CastRoundsToNearestEvenAsTheHostDoes) {
  std::vector<float> x = normal_values(4096, 1, 0, 1000);
  for (const float v :
       {0x1.002p0F, 0x1.006p0F, 0x1.0101p0F, 0x1.0180p0F, 65504.0F, 65520.0F, 70000.0F, 0x1p-24F,
        0x1p-25F, 0x1.8p-25F, 3.4e38F, -0.0F, std::numeric_limits<float>::infinity()}) {
    x.push_back(v);
    x.push_back(-v);
  }
  const DeviceBuffer<float> d_x = upload(x);
  for (const auto& [type, format] :
       {std::pair{DType::f16, formats::fp16}, std::pair{DType::bf16, formats::bf16}}) {
    DeviceBuffer<std::uint16_t> narrow(x.size());
    cast(DType::f32, type, d_x.data(), narrow.data(), x.size(), nullptr);
    DeviceBuffer<float> wide(x.size());
    cast(type, DType::f32, narrow.data(), wide.data(), x.size(), nullptr);
    const std::vector<std::uint16_t> expected = to_bits(format, x);
    EXPECT_EQ(download(narrow), expected) << format.name;
    EXPECT_EQ(download(wide), from_bits(format, expected)) << format.name;
  }
}

// One thread per column adds the rows in order: the host's binary32 loop gives the same bits; for
// bf16 the binary32 sum is then rounded once.
TEST_F(OpKernelsTest, ColumnSumsAddTheRowsInOrderBitForBit) {
  const std::size_t rows = 1000, cols = 77;
  const std::vector<float> x = normal_values(rows * cols, 2);
  std::vector<float> expected(cols, 0.0F);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) expected[j] = expected[j] + x[i * cols + j];
  }
  const DeviceBuffer<float> d_x = upload(x);
  DeviceBuffer<float> sums(cols);
  column_sums(DType::f32, d_x.data(), sums.data(), rows, cols, nullptr);
  EXPECT_EQ(download(sums), expected);

  const std::vector<std::uint16_t> x16 = to_bits(formats::bf16, x);
  const std::vector<float> x16_values = from_bits(formats::bf16, x16);
  std::vector<float> sum16(cols, 0.0F);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) sum16[j] = sum16[j] + x16_values[i * cols + j];
  }
  const DeviceBuffer<std::uint16_t> d_x16 = upload(x16);
  DeviceBuffer<std::uint16_t> sums16(cols);
  column_sums(DType::bf16, d_x16.data(), sums16.data(), rows, cols, nullptr);
  EXPECT_EQ(download(sums16), to_bits(formats::bf16, sum16));
}

// rows x cols with cols > the block and not a multiple of it. binary32 statistics and results:
// normwise relative errors within 1e-5 (sums of 1000 terms in binary32 keep about 1e-6).
TEST_F(OpKernelsTest, LayerNormForwardAndBackwardMatchBinary64) {
  const std::size_t rows = 300, cols = 1000;
  const float eps = 1e-5F;
  const std::vector<float> x = normal_values(rows * cols, 3, 0.5F, 2.0F);
  const std::vector<float> dy = normal_values(rows * cols, 4);
  const std::vector<float> gamma = normal_values(cols, 5, 1.0F, 0.25F);
  const std::vector<float> beta = normal_values(cols, 6);
  const LayerNormExact e = layer_norm_exact(x, dy, gamma, beta, rows, cols, eps);

  const DeviceBuffer<float> d_x = upload(x), d_dy = upload(dy), d_gamma = upload(gamma),
                            d_beta = upload(beta);
  DeviceBuffer<float> y(rows * cols), mean(rows), rstd(rows), dx(rows * cols), dgamma(cols),
      dbeta(cols);
  layer_norm(DType::f32, d_x.data(), d_gamma.data(), d_beta.data(), y.data(), mean.data(),
             rstd.data(), rows, cols, eps, nullptr);
  layer_norm_backward(DType::f32, d_x.data(), d_dy.data(), d_gamma.data(), mean.data(), rstd.data(),
                      dx.data(), dgamma.data(), dbeta.data(), rows, cols, nullptr);
  EXPECT_LT(normwise(download(mean), e.mean), 1e-5);
  EXPECT_LT(normwise(download(rstd), e.rstd), 1e-5);
  EXPECT_LT(normwise(download(y), e.y), 1e-5);
  EXPECT_LT(normwise(download(dx), e.dx), 1e-5);
  EXPECT_LT(normwise(download(dgamma), e.dgamma), 1e-5);
  EXPECT_LT(normwise(download(dbeta), e.dbeta), 1e-5);

  // Each output alone, the others null: the same values.
  DeviceBuffer<float> dgamma_alone(cols);
  layer_norm_backward(DType::f32, d_x.data(), d_dy.data(), d_gamma.data(), mean.data(), rstd.data(),
                      nullptr, dgamma_alone.data(), nullptr, rows, cols, nullptr);
  EXPECT_EQ(download(dgamma_alone), download(dgamma));
}

// In bf16 the operands and results are bf16 (unit roundoff 2^-9), the arithmetic binary32: the
// results are within a few bf16 roundings of binary64 on the same (bf16) operands.
TEST_F(OpKernelsTest, LayerNormBackwardInBf16KeepsBinary32Arithmetic) {
  const std::size_t rows = 64, cols = 777;
  const auto round16 = [](const std::vector<float>& v) {
    return from_bits(formats::bf16, to_bits(formats::bf16, v));
  };
  const std::vector<float> x = round16(normal_values(rows * cols, 7));
  const std::vector<float> dy = round16(normal_values(rows * cols, 8));
  const std::vector<float> gamma = round16(normal_values(cols, 9, 1.0F, 0.25F));
  const std::vector<float> beta(cols, 0.0F);
  const LayerNormExact e = layer_norm_exact(x, dy, gamma, beta, rows, cols, 1e-5);
  const auto up16 = [](const std::vector<float>& v) { return upload(to_bits(formats::bf16, v)); };
  const DeviceBuffer<std::uint16_t> d_x = up16(x), d_dy = up16(dy), d_gamma = up16(gamma);
  DeviceBuffer<std::uint16_t> y(rows * cols), dx(rows * cols), dgamma(cols), dbeta(cols);
  DeviceBuffer<float> mean(rows), rstd(rows);
  layer_norm(DType::bf16, d_x.data(), d_gamma.data(), nullptr, y.data(), mean.data(), rstd.data(),
             rows, cols, 1e-5F, nullptr);
  layer_norm_backward(DType::bf16, d_x.data(), d_dy.data(), d_gamma.data(), mean.data(),
                      rstd.data(), dx.data(), dgamma.data(), dbeta.data(), rows, cols, nullptr);
  EXPECT_LT(normwise(download(rstd), e.rstd), 1e-5);  // binary32 statistics of bf16 values
  EXPECT_LT(normwise(from_bits(formats::bf16, download(dx)), e.dx), 4 * 0x1p-9);
  EXPECT_LT(normwise(from_bits(formats::bf16, download(dgamma)), e.dgamma), 4 * 0x1p-9);
  EXPECT_LT(normwise(from_bits(formats::bf16, download(dbeta)), e.dbeta), 4 * 0x1p-9);
}

// Mean cross-entropy and its gradient against binary64 (relative 1e-5); a target outside the
// classes gives NaN, not a read out of bounds.
TEST_F(OpKernelsTest, CrossEntropyAndItsGradientMatchBinary64) {
  const std::size_t rows = 50, classes = 1000;
  const float d_loss = 2.5F;
  const std::vector<float> logits = normal_values(rows * classes, 10, 0, 3);
  std::vector<std::int64_t> targets(rows);
  for (std::size_t r = 0; r < rows; ++r) targets[r] = static_cast<std::int64_t>((r * 37) % classes);

  double loss_exact = 0;
  std::vector<double> grad_exact(rows * classes);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * classes;
    const double m = *std::max_element(row, row + classes);
    double s = 0;
    for (std::size_t c = 0; c < classes; ++c) s += std::exp(row[c] - m);
    const auto t = static_cast<std::size_t>(targets[r]);
    loss_exact += std::log(s) - (row[t] - m);
    for (std::size_t c = 0; c < classes; ++c) {
      grad_exact[r * classes + c] =
          (std::exp(row[c] - m) / s - (c == t ? 1.0 : 0.0)) * d_loss / static_cast<double>(rows);
    }
  }
  loss_exact /= static_cast<double>(rows);

  const DeviceBuffer<float> d_logits = upload(logits);
  const DeviceBuffer<std::int64_t> d_targets = upload(targets);
  DeviceBuffer<float> loss(1), grad(rows * classes);
  cross_entropy(DType::f32, d_logits.data(), d_targets.data(), loss.data(), rows, classes, nullptr);
  cross_entropy_backward(DType::f32, d_logits.data(), d_targets.data(), d_loss, grad.data(), rows,
                         classes, nullptr);
  EXPECT_NEAR(download(loss)[0], loss_exact, 1e-5 * loss_exact);
  EXPECT_LT(normwise(download(grad), grad_exact), 1e-5);

  targets[3] = static_cast<std::int64_t>(classes);
  const DeviceBuffer<std::int64_t> bad_targets = upload(targets);
  cross_entropy(DType::f32, d_logits.data(), bad_targets.data(), loss.data(), rows, classes,
                nullptr);
  EXPECT_TRUE(std::isnan(download(loss)[0]));
}

// The device's activations are the host's op_math functions: relu bit for bit; the others differ
// only through erff, expf and tanhf (CUDA's within 2 ulp, glibc's within a few), hence the
// tolerance of op_math_test's comparison with the definition, halved.
TEST_F(OpKernelsTest, ActivationsAreTheHostFunctions) {
  std::vector<float> v;
  for (int i = -640; i <= 640; ++i) v.push_back(static_cast<float>(i) / 64.0F);
  const DeviceBuffer<float> d_v = upload(v);
  const std::vector<float> ones(v.size(), 1.0F);
  const DeviceBuffer<float> d_ones = upload(ones);
  const struct {
    Activation act;
    float (*forward)(float);
    float (*derivative)(float);  // null for relu, whose backward selects
  } cases[] = {{Activation::relu, op_math::relu, nullptr},
               {Activation::gelu, op_math::gelu, op_math::gelu_derivative},
               {Activation::gelu_tanh, op_math::gelu_tanh, op_math::gelu_tanh_derivative},
               {Activation::silu, op_math::silu, op_math::silu_derivative}};
  for (const auto& c : cases) {
    DeviceBuffer<float> y(v.size()), dx(v.size());
    bias_activation(DType::f32, c.act, d_v.data(), nullptr, y.data(), 1, v.size(), nullptr);
    activation_backward(DType::f32, c.act, d_v.data(), d_ones.data(), dx.data(), v.size(), nullptr);
    const std::vector<float> device_y = download(y), device_dx = download(dx);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float host_y = c.forward(v[i]);
      const float host_dx =
          c.derivative != nullptr ? c.derivative(v[i]) : op_math::relu_backward(v[i], 1.0F);
      const double scale = std::fabs(v[i]) + 1;
      if (c.act == Activation::relu) {
        EXPECT_EQ(device_y[i], host_y) << v[i];
        EXPECT_EQ(device_dx[i], host_dx) << v[i];
      } else {
        EXPECT_NEAR(device_y[i], host_y, 4 * kUnit32 * (std::fabs(host_y) + scale)) << v[i];
        EXPECT_NEAR(device_dx[i], host_dx, 4 * kUnit32 * (std::fabs(host_dx) + scale)) << v[i];
      }
    }
  }
}

// relu's backward on the device is threshold_backward's select, where a product would differ.
TEST_F(OpKernelsTest, ReluBackwardSelectsAsThresholdBackward) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{nan, -1.0F, -1.0F, 0.0F, 2.0F};
  const std::vector<float> dy{1.5F, inf, -2.0F, -inf, -3.5F};
  const DeviceBuffer<float> d_x = upload(x), d_dy = upload(dy);
  DeviceBuffer<float> dx(x.size());
  activation_backward(DType::f32, Activation::relu, d_x.data(), d_dy.data(), dx.data(), x.size(),
                      nullptr);
  const std::vector<float> got = download(dx);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = op_math::relu_backward(x[i], dy[i]);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want)) << i;
  }
}

// A bias per column, added before the activation; rows x cols laid out row-major.
TEST_F(OpKernelsTest, BiasActivationAddsTheColumnsBias) {
  const std::size_t rows = 3, cols = 5;
  const std::vector<float> x = normal_values(rows * cols, 11);
  const std::vector<float> bias = normal_values(cols, 12);
  const DeviceBuffer<float> d_x = upload(x), d_bias = upload(bias);
  DeviceBuffer<float> y(rows * cols);
  bias_activation(DType::f32, Activation::relu, d_x.data(), d_bias.data(), y.data(), rows, cols,
                  nullptr);
  const std::vector<float> got = download(y);
  for (std::size_t i = 0; i < rows * cols; ++i) {
    EXPECT_EQ(got[i], op_math::relu(x[i] + bias[i % cols])) << i;
  }
}

// More elements than the grid's threads (65536 blocks of 256): the grid-stride loop reaches the
// last ones. Sums of two binary32 values are the host's bit for bit.
TEST_F(OpKernelsTest, ElementwiseKernelsCoverMoreElementsThanTheGrid) {
  const std::size_t n = std::size_t{65536} * 256 + 3;
  std::vector<float> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000) * 0.001F;
    b[i] = static_cast<float>(i % 7);
  }
  const DeviceBuffer<float> d_a = upload(a), d_b = upload(b);
  DeviceBuffer<float> y(n);
  add(DType::f32, d_a.data(), d_b.data(), y.data(), n, nullptr);
  const std::vector<float> sum = download(y);
  for (const std::size_t i : {std::size_t{0}, n / 2, n - 3, n - 2, n - 1}) {
    EXPECT_EQ(sum[i], a[i] + b[i]) << i;
  }
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += sum[i] != a[i] + b[i];
  EXPECT_EQ(wrong, 0u);
}

// round_to_tf32 is the host's round_to (its code, on the device): ties to even, the largest values
// (overflow to infinity past tf32's largest), subnormals, over more elements than the grid has
// threads.
TEST_F(OpKernelsTest, RoundToTf32IsTheHostsRounding) {
  std::vector<float> x = normal_values(std::size_t{65536} * 256 + 7, 21, 0, 1000);
  for (const float v : {0x1.002p0F, 0x1.006p0F, 0x1.0030p0F, 0x1.ffep127F, 0x1.fffp127F, 0x1p-130F,
                        0x1.0018p-126F, -0.0F, std::numeric_limits<float>::infinity()}) {
    x.push_back(v);
    x.push_back(-v);
  }
  const DeviceBuffer<float> d_x = upload(x);
  DeviceBuffer<float> y(x.size());
  round_to_tf32(d_x.data(), y.data(), x.size(), nullptr);
  const std::vector<float> got = download(y);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto expected = static_cast<float>(
        numeric::round_to(formats::tf32, numeric::Rounding::nearest_even, x[i]).value);
    wrong += std::memcmp(&got[i], &expected, sizeof(float)) != 0;
  }
  EXPECT_EQ(wrong, 0u);
}

// scale: one binary32 product, rounded once to the type: in fp32 the host's product bit for bit
// (over more elements than the grid has threads), in fp16 and bf16 the host's binary32 product
// rounded to nearest even.
TEST_F(OpKernelsTest, ScaleIsOneBinary32ProductRoundedOnce) {
  const std::size_t n = std::size_t{65536} * 256 + 5;
  const float factor = 0.35355339F;  // 1/sqrt(8) in binary32, not a power of two
  std::vector<float> x = normal_values(n, 7, 0, 100);
  const DeviceBuffer<float> d_x = upload(x);
  DeviceBuffer<float> y(n);
  scale(DType::f32, d_x.data(), factor, y.data(), n, nullptr);
  const std::vector<float> scaled = download(y);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += scaled[i] != x[i] * factor;
  EXPECT_EQ(wrong, 0u);
  x.resize(4096);
  for (const auto& [type, format] :
       {std::pair{DType::f16, formats::fp16}, std::pair{DType::bf16, formats::bf16}}) {
    const std::vector<float> narrow = from_bits(format, to_bits(format, x));
    std::vector<float> products(narrow.size());
    for (std::size_t i = 0; i < narrow.size(); ++i) products[i] = narrow[i] * factor;
    const DeviceBuffer<std::uint16_t> d_narrow = upload(to_bits(format, x));
    DeviceBuffer<std::uint16_t> out(narrow.size());
    scale(type, d_narrow.data(), factor, out.data(), narrow.size(), nullptr);
    EXPECT_EQ(download(out), to_bits(format, products)) << format.name;
  }
}

// Attention's score gradients: in fp32 the host's op_math bit for bit (D added in order by one
// thread), over more rows than the grid has blocks and rows longer than the block; in fp16 and
// bf16 the host's binary32 result from the 16-bit values, rounded once.
TEST_F(OpKernelsTest, AttentionSoftmaxBackwardIsTheHostsMathBitForBit) {
  for (const auto& [rows, cols, d] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{70000, 3, 5},
        std::tuple<std::size_t, std::size_t, std::size_t>{4, 700, 64}}) {
    const std::vector<float> p = normal_values(rows * cols, 11, 0.5F, 0.2F);
    const std::vector<float> dp = normal_values(rows * cols, 12);
    const std::vector<float> o = normal_values(rows * d, 13);
    const std::vector<float> d_out = normal_values(rows * d, 14);
    const auto host = [&](const std::vector<float>& hp, const std::vector<float>& hdp,
                          const std::vector<float>& ho, const std::vector<float>& hd) {
      std::vector<float> ds(rows * cols);
      for (std::size_t r = 0; r < rows; ++r) {
        const float row_sum =
            op_math::ordered_sum(d, [&](std::size_t t) { return hd[r * d + t] * ho[r * d + t]; });
        for (std::size_t c = 0; c < cols; ++c) {
          ds[r * cols + c] = op_math::score_gradient(hp[r * cols + c], hdp[r * cols + c], row_sum);
        }
      }
      return ds;
    };
    const DeviceBuffer<float> d_p = upload(p), d_dp = upload(dp), d_o = upload(o),
                              d_d = upload(d_out);
    DeviceBuffer<float> ds(rows * cols);
    attention_softmax_backward(DType::f32, d_p.data(), d_dp.data(), d_o.data(), d_d.data(),
                               ds.data(), rows, cols, d, nullptr);
    const std::vector<float> expected = host(p, dp, o, d_out);
    const std::vector<float> got = download(ds);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != expected[i];
    EXPECT_EQ(wrong, 0u) << rows << " x " << cols;
    for (const auto& [type, format] :
         {std::pair{DType::f16, formats::fp16}, std::pair{DType::bf16, formats::bf16}}) {
      const auto narrow = [&](const std::vector<float>& x) {
        return from_bits(format, to_bits(format, x));
      };
      const DeviceBuffer<std::uint16_t> n_p = upload(to_bits(format, p)),
                                        n_dp = upload(to_bits(format, dp)),
                                        n_o = upload(to_bits(format, o)),
                                        n_d = upload(to_bits(format, d_out));
      DeviceBuffer<std::uint16_t> n_ds(rows * cols);
      attention_softmax_backward(type, n_p.data(), n_dp.data(), n_o.data(), n_d.data(), n_ds.data(),
                                 rows, cols, d, nullptr);
      EXPECT_EQ(download(n_ds),
                to_bits(format, host(narrow(p), narrow(dp), narrow(o), narrow(d_out))))
          << format.name << " " << rows << " x " << cols;
    }
  }
}

// More rows than the grid's blocks, and rows far longer than the block: softmax and logsumexp
// match binary64 within 4e-6 normwise (some 64 unit roundoffs; expf is within 2 ulp).
TEST_F(OpKernelsTest, SoftmaxCoversManyRowsAndLongRows) {
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{70000, 3},
                                   std::pair<std::size_t, std::size_t>{4, 5000}}) {
    const std::vector<float> x = normal_values(rows * cols, 13, 0, 4);
    std::vector<double> exact(rows * cols), lse(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = x.data() + r * cols;
      const double m = *std::max_element(row, row + cols);
      double s = 0;
      for (std::size_t c = 0; c < cols; ++c) s += std::exp(row[c] - m);
      for (std::size_t c = 0; c < cols; ++c) exact[r * cols + c] = std::exp(row[c] - m) / s;
      lse[r] = m + std::log(s);
    }
    const DeviceBuffer<float> d_x = upload(x);
    DeviceBuffer<float> y(rows * cols), d_lse(rows);
    softmax(DType::f32, RowSoftmax::softmax, d_x.data(), y.data(), rows, cols, nullptr);
    softmax(DType::f32, RowSoftmax::logsumexp, d_x.data(), d_lse.data(), rows, cols, nullptr);
    EXPECT_LT(normwise(download(y), exact), 4e-6) << rows << "x" << cols;
    EXPECT_LT(normwise(download(d_lse), lse), 4e-6) << rows << "x" << cols;
  }
}

// Rows holding NaN: every row op's maximum propagates NaN (kernels/op_math.hpp, as PyTorch's), so
// each output of such a row is NaN, and logsumexp of a row of NaN is NaN, not the -inf a maximum
// that drops NaN (fmaxf) gives, nor +inf for a row of NaN and +inf. The CPU emulation's test
// (EmulateRowOps) checks the same rows. The last row is finite and stays so; a row of 300 columns
// puts the NaN in another warp than the maximum.
TEST_F(OpKernelsTest, ARowHoldingNaNIsNaNThroughoutInEveryRowOp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::size_t cols = 300;
  const std::vector<std::vector<float>> patterns = {
      {nan}, {nan, inf, 1.0F}, {1.0F, nan, -inf}, {inf, 2.0F, nan}, {2.0F, 1.0F, 0.5F}};
  const std::size_t rows = patterns.size();
  std::vector<float> x(rows * cols, -1.0F);
  for (std::size_t r = 0; r < rows; ++r) {
    const bool all_nan = patterns[r].size() == 1;
    for (std::size_t c = 0; c < cols; ++c) {
      if (all_nan) x[r * cols + c] = nan;
    }
    if (!all_nan) {
      for (std::size_t i = 0; i < patterns[r].size(); ++i) x[r * cols + i * 131] = patterns[r][i];
    }
  }
  std::vector<float> dy = normal_values(rows * cols, 15);
  std::vector<float> gamma = normal_values(cols, 16, 1, 0.1F), beta = normal_values(cols, 17);
  std::vector<std::int64_t> targets{0, 131, 262, 1, 7};
  const DeviceBuffer<float> d_x = upload(x), d_dy = upload(dy), d_gamma = upload(gamma),
                            d_beta = upload(beta);
  const DeviceBuffer<std::int64_t> d_targets = upload(targets);
  DeviceBuffer<float> y(rows * cols), lse(rows), mean(rows), rstd(rows), loss(1);
  const auto expect_rows = [&](const char* op, const std::vector<float>& out, std::size_t width) {
    for (std::size_t i = 0; i < (rows - 1) * width; ++i) {
      EXPECT_TRUE(std::isnan(out[i])) << op << ": row " << i / width << ", column " << i % width;
    }
    for (std::size_t i = (rows - 1) * width; i < rows * width; ++i) {
      EXPECT_TRUE(std::isfinite(out[i])) << op << ": the finite row, column " << i % width;
    }
  };
  for (const auto& [what, name] : {std::pair{RowSoftmax::softmax, "softmax"},
                                   std::pair{RowSoftmax::log_softmax, "log_softmax"}}) {
    softmax(DType::f32, what, d_x.data(), y.data(), rows, cols, nullptr);
    expect_rows(name, download(y), cols);
  }
  softmax(DType::f32, RowSoftmax::logsumexp, d_x.data(), lse.data(), rows, cols, nullptr);
  expect_rows("logsumexp", download(lse), 1);
  softmax_backward(DType::f32, d_x.data(), d_dy.data(), y.data(), rows, cols, nullptr);
  expect_rows("softmax_backward", download(y), cols);
  log_softmax_backward(DType::f32, d_x.data(), d_dy.data(), y.data(), rows, cols, nullptr);
  expect_rows("log_softmax_backward", download(y), cols);
  cross_entropy_backward(DType::f32, d_x.data(), d_targets.data(), 1.0F, y.data(), rows, cols,
                         nullptr);
  expect_rows("cross_entropy_backward", download(y), cols);
  cross_entropy(DType::f32, d_x.data(), d_targets.data(), loss.data(), rows, cols, nullptr);
  EXPECT_TRUE(std::isnan(download(loss)[0])) << "cross_entropy";
  layer_norm(DType::f32, d_x.data(), d_gamma.data(), d_beta.data(), y.data(), mean.data(),
             rstd.data(), rows, cols, 1e-5F, nullptr);
  expect_rows("layer_norm", download(y), cols);
  layer_norm_backward(DType::f32, d_x.data(), d_dy.data(), d_gamma.data(), mean.data(), rstd.data(),
                      y.data(), nullptr, nullptr, rows, cols, nullptr);
  expect_rows("layer_norm_backward", download(y), cols);
  rms_norm(DType::f32, d_x.data(), d_gamma.data(), y.data(), rows, cols, 1e-6F, nullptr);
  expect_rows("rms_norm", download(y), cols);
}

// logsumexp of a row whose maximum is infinite is that maximum (torch.logsumexp; the CPU
// emulation's EmulateRowOps test checks the same rows).
TEST_F(OpKernelsTest, LogsumexpOfAnInfiniteMaximumIsTheMaximum) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x{inf, 1.0F, -inf, -inf, -inf, 3.0F};
  const DeviceBuffer<float> d_x = upload(x);
  DeviceBuffer<float> lse(3);
  softmax(DType::f32, RowSoftmax::logsumexp, d_x.data(), lse.data(), 3, 2, nullptr);
  EXPECT_EQ(download(lse), (std::vector<float>{inf, -inf, 3.0F}));
}

// An upload has landed when copy_from returns, for every stream: a kernel on a non-blocking stream
// (which does not wait for the legacy default stream) launched right after it reads the new
// values. A plain cudaMemcpy from pageable memory may return once the source is staged, before the
// DMA has written the buffer; 256 MiB leaves that window open long enough to be seen.
TEST_F(OpKernelsTest, AnUploadHasLandedBeforeWorkOnAnotherStreamReadsIt) {
  const std::size_t n = std::size_t{64} << 20;
  const CudaStream stream;
  for (const float value : {1.0F, 2.0F, 3.0F}) {
    const std::vector<float> host(n, value);
    DeviceBuffer<float> x(n), y(n);
    AMPBENCH_CUDA_CHECK(cudaMemset(x.data(), 0, n * sizeof(float)));
    x.copy_from(host, nullptr);
    scale(DType::f32, x.data(), 1.0F, y.data(), n, stream.get());
    std::vector<float> back(n);
    y.copy_to(back, stream.get());
    EXPECT_EQ(std::count(back.begin(), back.end(), value), static_cast<std::ptrdiff_t>(n))
        << "the kernel read the buffer before the upload of " << value << " landed";
  }
}

// sum, mean and l2 norm of 100003 values in one block, against binary64 (relative 1e-5, about
// 170 unit roundoffs: some 400 terms per thread in sequence, then a tree of 256).
TEST_F(OpKernelsTest, ReductionsMatchBinary64) {
  const std::vector<float> x = normal_values(100003, 14, 1, 1);
  double sum = 0, squares = 0;
  for (const float v : x) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  const DeviceBuffer<float> d_x = upload(x);
  DeviceBuffer<float> out(1);
  const struct {
    Reduction what;
    double exact;
  } cases[] = {{Reduction::sum, sum},
               {Reduction::mean, sum / static_cast<double>(x.size())},
               {Reduction::l2_norm, std::sqrt(squares)}};
  for (const auto& c : cases) {
    reduce(DType::f32, c.what, d_x.data(), out.data(), x.size(), nullptr);
    EXPECT_NEAR(download(out)[0], c.exact, 1e-5 * std::fabs(c.exact));
  }
}

// No device needed: these throw before any CUDA call.
TEST(OpKernels, ArgumentsTheKernelsCannotTakeThrowBeforeAnyLaunch) {
  EXPECT_THROW(
      activation_backward(DType::f32, Activation::none, nullptr, nullptr, nullptr, 1, nullptr),
      std::invalid_argument);
  EXPECT_THROW(cross_entropy(DType::f32, nullptr, nullptr, nullptr, 0, 10, nullptr),
               std::invalid_argument);
  EXPECT_THROW(reduce(DType::f32, Reduction::sum, nullptr, nullptr, 0, nullptr),
               std::invalid_argument);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2u);
  EXPECT_EQ(dtype_name(DType::f16), "fp16");
}

}  // namespace
}  // namespace ampbench::kernels
