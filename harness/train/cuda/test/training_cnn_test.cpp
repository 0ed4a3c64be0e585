// The cnn on the device: each of its ops, forward and backward, against the CPU backend's emulation
// of the same policy (same operands, same dtype flow), the batch-norm and pooling kernels over
// channels and rows longer than a block, and short training and profiling runs against the
// multiprecision reference. Every test skips with the reason where there is no device.
//
// The tolerances. The device and the emulation round the same operations, so what differs is the
// order of the sums: cuDNN's algorithm for the convolutions (under fp32, CUDNN_FMA_MATH: no TF32,
// but its own order and fused multiply-adds) and the kernels' tree reductions against the
// emulation's sequential sums. Two orders of the same binary32 sum of k terms differ by at most
// about 2 k u (u = 2^-24) relative to the sum of the magnitudes, and in practice, the rounding
// errors being independent, by about sqrt(k) u: the longest sums here are the filter gradient of
// the second convolution (8 samples x 36 positions, k = 288) and the batch-norm statistics over
// 8 x 144 values, so sqrt(k) u is about 2e-6. fp32's 1e-5 leaves a factor five for the chain of
// ops each result goes through, and is 50 times smaller than fp16's unit roundoff: a value rounded
// to a 16-bit type, a lost rounding step, a wrong index or channel would exceed it. Under
// amp-fp16 and amp-bf16 most results are rounded to the 16-bit type, where two orders of the
// binary32 sum round to neighbouring values now and then: a rounding or two of fp16 (u = 2^-11)
// and bf16 (2^-8), the mlp's tolerances (training_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/train/cuda/test/device_comparison.hpp"
#include "harness/train/cuda/train_on_device.hpp"
#include "harness/train/ops.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::train::cuda {
namespace {

using backends::cuda::CudaOps;
using backends::cuda::CudaTensor;

using CnnOnGpu = kernels::test::GpuTest;
using test::builtin;
using test::normwise;
using test::uniform;
using test::widened;

// The cnn's two convolutions (models.hpp): 3x3, padding 1, the second with stride 2.
ops::convolution::Geometry first_convolution(std::size_t batch) {
  ops::convolution::Geometry g;
  g.batch = batch;
  g.channels = 1;
  g.height = g.width = 12;
  g.filters = 6;
  g.kernel_h = g.kernel_w = 3;
  g.pad_h = g.pad_w = 1;
  return g;
}

ops::convolution::Geometry second_convolution(std::size_t batch) {
  ops::convolution::Geometry g = first_convolution(batch);
  g.channels = 6;
  g.filters = 8;
  g.stride_h = g.stride_w = 2;
  return g;
}

// The cnn's layers forward and backward under `policy` on both backends, each op fed its own
// backend's previous results, as a step runs them; each result within `tolerance` (normwise) of
// the emulation's, and in the same format. Weights and the norms' gamma and beta are random (not
// the initial ones and zeros), so that every product is exercised.
void compare_cnn_layers(const char* policy, double tolerance) {
  SCOPED_TRACE(policy);
  constexpr std::size_t batch = 8, classes = 4;
  const auto g1 = first_convolution(batch), g2 = second_convolution(batch);
  const std::size_t spatial1 = g1.out_h() * g1.out_w(), spatial2 = g2.out_h() * g2.out_w();
  const std::size_t f1 = g1.filters, f2 = g2.filters;
  const auto x = widened(uniform(batch * 144, -1.0F, 1.0F, 11));
  const auto w1 = uniform(f1 * 9, -1.0F / 3, 1.0F / 3, 12);
  const auto gamma1 = uniform(f1, 0.5F, 1.5F, 13), beta1 = uniform(f1, -0.5F, 0.5F, 14);
  const auto w2 = uniform(f2 * f1 * 9, -0.14F, 0.14F, 15);
  const auto gamma2 = uniform(f2, 0.5F, 1.5F, 16), beta2 = uniform(f2, -0.5F, 0.5F, 17);
  const auto w3 = uniform(f2 * classes, -0.35F, 0.35F, 18),
             b3 = uniform(classes, -0.35F, 0.35F, 19);
  std::vector<std::int64_t> targets(batch);
  for (std::size_t r = 0; r < batch; ++r) targets[r] = static_cast<std::int64_t>(r % classes);

  train::EmulatedOps cpu(builtin(policy));
  CudaOps gpu(builtin(policy));
  const auto check = [&](const std::string& what, const train::EmulatedTensor& e,
                         const CudaTensor& g) {
    EXPECT_STREQ(g.format.name, e.format.name) << what;
    EXPECT_LE(normwise(CudaOps::to_doubles(g), e.values), tolerance) << what;
  };
  struct Parameters {
    std::vector<float> values;
    train::EmulatedTensor cpu;
    CudaTensor gpu;
  };
  const auto parameter = [&](const std::vector<float>& v) {
    return Parameters{v, cpu.parameter(v), gpu.parameter(v)};
  };
  const Parameters pw1 = parameter(w1), pg1 = parameter(gamma1), pb1 = parameter(beta1),
                   pw2 = parameter(w2), pg2 = parameter(gamma2), pb2 = parameter(beta2),
                   pw3 = parameter(w3), pb3 = parameter(b3);

  // forward
  const auto ex = cpu.constant(x);
  const auto gx = gpu.constant(x);
  const auto ec1 = cpu.conv2d(ex, pw1.cpu, g1);
  const auto gc1 = gpu.conv2d(gx, pw1.gpu, g1);
  check("conv2d 1", ec1, gc1);
  const auto en1 = cpu.batch_norm(ec1, pg1.cpu, pb1.cpu, batch, f1, spatial1);
  const auto gn1 = gpu.batch_norm(gc1, pg1.gpu, pb1.gpu, batch, f1, spatial1);
  check("batch_norm 1", en1, gn1);
  const auto er1 = cpu.relu(en1);
  const auto gr1 = gpu.relu(gn1);
  check("relu 1", er1, gr1);
  const auto ec2 = cpu.conv2d(er1, pw2.cpu, g2);
  const auto gc2 = gpu.conv2d(gr1, pw2.gpu, g2);
  check("conv2d 2 (stride 2)", ec2, gc2);
  const auto en2 = cpu.batch_norm(ec2, pg2.cpu, pb2.cpu, batch, f2, spatial2);
  const auto gn2 = gpu.batch_norm(gc2, pg2.gpu, pb2.gpu, batch, f2, spatial2);
  check("batch_norm 2", en2, gn2);
  const auto er2 = cpu.relu(en2);
  const auto gr2 = gpu.relu(gn2);
  check("relu 2", er2, gr2);
  const auto ep = cpu.mean_pool(er2, batch * f2, spatial2);
  const auto gp = gpu.mean_pool(gr2, batch * f2, spatial2);
  check("mean_pool", ep, gp);
  const auto el = cpu.linear(ep, pw3.cpu, pb3.cpu, batch, f2, classes);
  const auto gl = gpu.linear(gp, pw3.gpu, pb3.gpu, batch, f2, classes);

  // backward, with a loss scale of 1024, as the model runs it
  const auto ed = cpu.cross_entropy_backward(el, targets, batch, classes, 1024.0);
  const auto gd = gpu.cross_entropy_backward(gl, targets, batch, classes, 1024.0);
  const auto efc = cpu.linear_backward(ep, pw3.cpu, pb3.cpu, ed, batch, f2, classes, true);
  const auto gfc = gpu.linear_backward(gp, pw3.gpu, pb3.gpu, gd, batch, f2, classes, true);
  check("linear_backward dx", efc.dx, gfc.dx);
  const auto edr2 = cpu.mean_pool_backward(er2, efc.dx, batch * f2, spatial2);
  const auto gdr2 = gpu.mean_pool_backward(gr2, gfc.dx, batch * f2, spatial2);
  check("mean_pool_backward", edr2, gdr2);
  const auto edn2 = cpu.relu_backward(en2, edr2);
  const auto gdn2 = gpu.relu_backward(gn2, gdr2);
  check("relu_backward 2", edn2, gdn2);
  const auto ebn2 = cpu.batch_norm_backward(ec2, edn2, pg2.cpu, pb2.cpu, batch, f2, spatial2);
  const auto gbn2 = gpu.batch_norm_backward(gc2, gdn2, pg2.gpu, pb2.gpu, batch, f2, spatial2);
  check("batch_norm_backward 2 dx", ebn2.dx, gbn2.dx);
  check("batch_norm_backward 2 dgamma", ebn2.dgamma, gbn2.dgamma);
  check("batch_norm_backward 2 dbeta", ebn2.dbeta, gbn2.dbeta);
  const auto econv2 = cpu.conv2d_backward(er1, pw2.cpu, ebn2.dx, g2, true);
  const auto gconv2 = gpu.conv2d_backward(gr1, pw2.gpu, gbn2.dx, g2, true);
  check("conv2d_backward 2 dx", econv2.dx, gconv2.dx);
  check("conv2d_backward 2 dw", econv2.dw, gconv2.dw);
  const auto edn1 = cpu.relu_backward(en1, econv2.dx);
  const auto gdn1 = gpu.relu_backward(gn1, gconv2.dx);
  check("relu_backward 1", edn1, gdn1);
  const auto ebn1 = cpu.batch_norm_backward(ec1, edn1, pg1.cpu, pb1.cpu, batch, f1, spatial1);
  const auto gbn1 = gpu.batch_norm_backward(gc1, gdn1, pg1.gpu, pb1.gpu, batch, f1, spatial1);
  check("batch_norm_backward 1 dx", ebn1.dx, gbn1.dx);
  check("batch_norm_backward 1 dgamma", ebn1.dgamma, gbn1.dgamma);
  check("batch_norm_backward 1 dbeta", ebn1.dbeta, gbn1.dbeta);
  // The model asks no dx of the first convolution; asked, it is the stride-1 backward data.
  const auto econv1 = cpu.conv2d_backward(ex, pw1.cpu, ebn1.dx, g1, true);
  const auto gconv1 = gpu.conv2d_backward(gx, pw1.gpu, gbn1.dx, g1, true);
  check("conv2d_backward 1 dx", econv1.dx, gconv1.dx);
  check("conv2d_backward 1 dw", econv1.dw, gconv1.dw);
  const auto no_dx = gpu.conv2d_backward(gx, pw1.gpu, gbn1.dx, g1, false);
  EXPECT_EQ(no_dx.dx.size, 0u);
  // master gradients come back as binary32
  EXPECT_EQ(gpu.master_gradient(gconv2.dw).size(), w2.size());
  EXPECT_EQ(gpu.master_gradient(gbn1.dgamma).size(), f1);
}

TEST_F(CnnOnGpu, Fp32LayersAgreeWithTheEmulationToBinary32Accuracy) {
  compare_cnn_layers("fp32", 1e-5);
}

TEST_F(CnnOnGpu, AmpLayersFollowAutocastsDtypeFlow) {
  compare_cnn_layers("amp-fp16", 4e-3);
  compare_cnn_layers("amp-bf16", 3e-2);
}

// `values` (batch x channels x height x width) through a grouped 1x1 convolution with unit
// filters: the same values in the type the policy's convolutions give (fp16 under amp-fp16,
// rounded once), as the cnn's batch norm receives them.
template <class Backend>
typename Backend::Tensor as_convolution_output(Backend& backend, const std::vector<double>& values,
                                               std::size_t batch, std::size_t channels,
                                               std::size_t height, std::size_t width) {
  ops::convolution::Geometry g;
  g.batch = batch;
  g.channels = g.filters = g.groups = channels;
  g.height = height;
  g.width = width;
  const std::vector<float> ones(channels, 1.0F);
  return backend.conv2d(backend.constant(values), backend.parameter(ones), g);
}

TEST_F(CnnOnGpu, BatchNormAndPoolingSpanMoreElementsThanABlockHasThreads) {
  // 3 x 1000 values per channel and rows of 1000 (each block of 256 threads strides over them,
  // with a partial last round), 5 channels, in fp32 and in fp16 (amp-fp16's convolution output).
  constexpr std::size_t batch = 3, channels = 5, height = 25, width = 40;
  constexpr std::size_t spatial = height * width, rows = batch * channels;
  const auto x = widened(uniform(batch * channels * spatial, -0.5F, 1.5F, 21));
  const auto dy = widened(uniform(batch * channels * spatial, -1.0F, 1.0F, 22));
  const auto d_pooled = widened(uniform(rows, -1.0F, 1.0F, 23));
  const auto gamma = uniform(channels, 0.5F, 1.5F, 24), beta = uniform(channels, -0.5F, 0.5F, 25);
  for (const auto& [policy, tolerance] : {std::pair{"fp32", 1e-5}, std::pair{"amp-fp16", 4e-3}}) {
    SCOPED_TRACE(policy);
    train::EmulatedOps cpu(builtin(policy));
    CudaOps gpu(builtin(policy));
    const auto check = [&](const char* what, const CudaTensor& g, const train::EmulatedTensor& e) {
      EXPECT_STREQ(g.format.name, e.format.name) << what;
      EXPECT_LE(normwise(CudaOps::to_doubles(g), e.values), tolerance) << what;
    };
    const auto ex = as_convolution_output(cpu, x, batch, channels, height, width);
    const auto gx = as_convolution_output(gpu, x, batch, channels, height, width);
    const auto edy = as_convolution_output(cpu, dy, batch, channels, height, width);
    const auto gdy = as_convolution_output(gpu, dy, batch, channels, height, width);
    const auto eg = cpu.parameter(gamma), eb = cpu.parameter(beta);
    const auto gg = gpu.parameter(gamma), gb = gpu.parameter(beta);
    check("batch_norm", gpu.batch_norm(gx, gg, gb, batch, channels, spatial),
          cpu.batch_norm(ex, eg, eb, batch, channels, spatial));
    const auto e = cpu.batch_norm_backward(ex, edy, eg, eb, batch, channels, spatial);
    const auto g = gpu.batch_norm_backward(gx, gdy, gg, gb, batch, channels, spatial);
    check("batch_norm_backward dx", g.dx, e.dx);
    check("batch_norm_backward dgamma", g.dgamma, e.dgamma);
    check("batch_norm_backward dbeta", g.dbeta, e.dbeta);
    check("mean_pool", gpu.mean_pool(gx, rows, spatial), cpu.mean_pool(ex, rows, spatial));
    const auto edp = as_convolution_output(cpu, d_pooled, batch, channels, 1, 1);
    const auto gdp = as_convolution_output(gpu, d_pooled, batch, channels, 1, 1);
    check("mean_pool_backward", gpu.mean_pool_backward(gx, gdp, rows, spatial),
          cpu.mean_pool_backward(ex, edp, rows, spatial));
  }
}

TEST_F(CnnOnGpu, ShortTrainingTracksTheReference) {
  train::TrainConfig config;
  config.model = "cnn";
  for (const char* p : {"fp32", "amp-fp16", "amp-bf16"}) config.policies.push_back(builtin(p));
  config.steps = 10;
  config.batch = 32;
  const train::Dataset data = train::default_dataset("cnn", 1);
  const train::Split split = train::split(data, 256, 1);
  const train::TrainResult r = train_on_device(config, split.train, split.eval);
  test::expect_tracks_reference(r, 3, 10);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(r.runs[1].scaler) << "amp-fp16 trains with the loss scaler";
}

TEST_F(CnnOnGpu, ProfileRecordsTheConvolutionsAsRanges) {
  train::TrainConfig config;
  config.model = "cnn";
  config.policies = {builtin("fp32"), builtin("amp-fp16")};
  config.steps = 3;
  const train::ProfileResult r =
      profile_on_device(config, train::default_dataset("cnn", 1), /*warmup=*/1);
  ASSERT_EQ(r.policies.size(), 2u);
  for (const auto& p : r.policies) {
    EXPECT_EQ(p.step_ns.size(), 3u) << p.policy;
    bool forward = false, backward = false, convolution = false;
    for (const auto& range : p.trace.ranges) {
      forward = forward || range.name == "forward";
      backward = backward || range.name == "backward";
      convolution = convolution || range.name.rfind("conv2d_backward_filter ", 0) == 0;
    }
    EXPECT_TRUE(forward && backward && convolution) << p.policy;
  }
}

}  // namespace
}  // namespace ampbench::train::cuda
