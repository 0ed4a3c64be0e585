// The GPU training ops and steps on the device: each op of the mlp against the CPU backend's
// emulation of the same policy (same operands, same dtype flow), and short training and profiling
// runs against the multiprecision reference. Every test skips with the reason where there is no
// device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/train/clip.hpp"
#include "harness/train/cuda/device_masters.hpp"
#include "harness/train/cuda/test/device_comparison.hpp"
#include "harness/train/cuda/train_on_device.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/optimizer.hpp"
#include "harness/train/scaler.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::train::cuda {
namespace {

using backends::cuda::CudaOps;
using backends::cuda::CudaTensor;

using TrainingOnGpu = kernels::test::GpuTest;

using test::builtin;
using test::normwise;

std::vector<float> uniform(std::size_t n, float scale, std::uint32_t seed) {
  return test::uniform(n, -scale, scale, seed);
}

// The mlp's first layers forward and backward under `policy` on both backends; each result
// within `tolerance` (normwise) of the emulation's, and in the same format.
void compare_layers(const char* policy, double tolerance) {
  SCOPED_TRACE(policy);
  constexpr std::size_t rows = 64, in = 32, out = 48, classes = 10;
  const auto x = uniform(rows * in, 1.0F, 1);
  const auto w = uniform(in * out, 0.2F, 2);
  const auto b = uniform(out, 0.2F, 3);
  const std::vector<float> gamma(out, 1.0F), beta(out, 0.0F);
  const auto w2 = uniform(out * classes, 0.2F, 4);
  const auto b2 = uniform(classes, 0.2F, 5);
  std::vector<std::int64_t> targets(rows);
  for (std::size_t r = 0; r < rows; ++r) targets[r] = static_cast<std::int64_t>(r % classes);
  const std::vector<double> xd(x.begin(), x.end());

  train::EmulatedOps cpu(builtin(policy));
  CudaOps gpu(builtin(policy));
  const auto check = [&](const char* what, const train::EmulatedTensor& e, const CudaTensor& g) {
    EXPECT_STREQ(g.format.name, e.format.name) << what;
    EXPECT_LE(normwise(CudaOps::to_doubles(g), e.values), tolerance) << what;
  };
  // forward: linear, gelu, layer_norm, linear, cross-entropy
  const auto ex = cpu.constant(xd);
  const auto gx = gpu.constant(xd);
  const auto ew = cpu.parameter(w), eb = cpu.parameter(b), eg = cpu.parameter(gamma),
             ebeta = cpu.parameter(beta), ew2 = cpu.parameter(w2), eb2 = cpu.parameter(b2);
  const auto gw = gpu.parameter(w), gb = gpu.parameter(b), gg = gpu.parameter(gamma),
             gbeta = gpu.parameter(beta), gw2 = gpu.parameter(w2), gb2 = gpu.parameter(b2);
  const auto eh = cpu.linear(ex, ew, eb, rows, in, out);
  const auto gh = gpu.linear(gx, gw, gb, rows, in, out);
  check("linear", eh, gh);
  const auto ea = cpu.gelu(eh, rows, out);
  const auto ga = gpu.gelu(gh, rows, out);
  check("gelu", ea, ga);
  const auto en = cpu.layer_norm(ea, eg, ebeta, rows, out);
  const auto gn = gpu.layer_norm(ga, gg, gbeta, rows, out);
  check("layer_norm", en, gn);
  const auto el = cpu.linear(en, ew2, eb2, rows, out, classes);
  const auto gl = gpu.linear(gn, gw2, gb2, rows, out, classes);
  check("logits", el, gl);
  const double e_loss = cpu.cross_entropy(el, targets, rows, classes);
  const double g_loss = gpu.cross_entropy(gl, targets, rows, classes);
  EXPECT_LE(std::fabs(g_loss - e_loss) / e_loss, tolerance);
  // backward, with a loss scale of 1024
  const auto ed = cpu.cross_entropy_backward(el, targets, rows, classes, 1024.0);
  const auto gd = gpu.cross_entropy_backward(gl, targets, rows, classes, 1024.0);
  check("cross_entropy_backward", ed, gd);
  const auto eo = cpu.linear_backward(en, ew2, eb2, ed, rows, out, classes, true);
  const auto go = gpu.linear_backward(gn, gw2, gb2, gd, rows, out, classes, true);
  check("linear_backward dx", eo.dx, go.dx);
  check("linear_backward dw", eo.dw, go.dw);
  check("linear_backward db", eo.db, go.db);
  const auto enb = cpu.layer_norm_backward(ea, eo.dx, eg, ebeta, rows, out);
  const auto gnb = gpu.layer_norm_backward(ga, go.dx, gg, gbeta, rows, out);
  check("layer_norm_backward dx", enb.dx, gnb.dx);
  check("layer_norm_backward dgamma", enb.dgamma, gnb.dgamma);
  check("layer_norm_backward dbeta", enb.dbeta, gnb.dbeta);
  const auto egb = cpu.gelu_backward(eh, enb.dx);
  const auto ggb = gpu.gelu_backward(gh, gnb.dx);
  check("gelu_backward", egb, ggb);
  // master gradients come back as binary32
  EXPECT_EQ(gpu.master_gradient(go.dw).size(), out * classes);
}

TEST_F(TrainingOnGpu, Fp32LayersAgreeWithTheEmulationToBinary32Accuracy) {
  compare_layers("fp32", 1e-5);
}

TEST_F(TrainingOnGpu, AmpLayersFollowAutocastsDtypeFlow) {
  // fp16 and bf16 values that differ by a rounding or two: fp16's and bf16's unit roundoff.
  compare_layers("amp-fp16", 4e-3);
  compare_layers("amp-bf16", 3e-2);
}

// A tensor may outlive the CudaOps that made it: its memory is freed on the ops' stream, which the
// tensor keeps alive (a raw handle would name a destroyed stream), and its values stay readable.
TEST_F(TrainingOnGpu, ATensorOutlivesItsOps) {
  CudaTensor kept;
  const std::vector<double> values{1.0, -2.5, 0.125, 3.0};
  {
    CudaOps ops(builtin("fp32"));
    kept = ops.constant(values);
  }
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(CudaOps::to_doubles(kept), values);
  kept = CudaTensor{};  // frees on the stream, which then goes
  AMPBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "a CUDA call failed while freeing";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// parameter() and constant() enqueue their uploads without waiting: the host values may be freed
// or overwritten as soon as they return, and the device still receives what they were.
TEST_F(TrainingOnGpu, UploadsDoNotReadTheirSourcesAfterReturning) {
  CudaOps ops(builtin("fp32"));
  std::vector<CudaTensor> tensors;
  std::vector<std::vector<float>> expected;
  for (std::uint32_t i = 0; i < 8; ++i) {
    std::vector<float> source = uniform(std::size_t{1} << 20, 1.0F, 100 + i);
    expected.push_back(source);
    tensors.push_back(ops.parameter(source));
    std::fill(source.begin(), source.end(), std::numeric_limits<float>::quiet_NaN());
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::vector<double> got = CudaOps::to_doubles(tensors[i]);
    EXPECT_EQ(got, std::vector<double>(expected[i].begin(), expected[i].end())) << "tensor " << i;
  }
}

TEST_F(TrainingOnGpu, ShortTrainingTracksTheReference) {
  train::TrainConfig config;
  for (const char* p : {"fp32", "tf32", "amp-fp16", "amp-bf16"}) {
    config.policies.push_back(builtin(p));
  }
  config.steps = 10;
  config.batch = 32;
  const train::Dataset data = train::default_dataset("mlp", 1);
  const train::Split split = train::split(data, 256, 1);
  const train::TrainResult r = train_on_device(config, split.train, split.eval);
  test::expect_tracks_reference(r, 4, 10);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(r.runs[2].scaler) << "amp-fp16 trains with the loss scaler";
  EXPECT_EQ(*r.runs[2].steps[0].scale, 65536.0);
}

// Every value of `device` is the binary32 value of `host` (two NaNs agree: payloads are the
// hardware's).
void expect_same_values(const std::vector<std::vector<double>>& device,
                        const std::vector<std::vector<float>>& host, const char* what) {
  ASSERT_EQ(device.size(), host.size()) << what;
  for (std::size_t t = 0; t < host.size(); ++t) {
    ASSERT_EQ(device[t].size(), host[t].size()) << what << " tensor " << t;
    int mismatches = 0;
    for (std::size_t i = 0; i < host[t].size(); ++i) {
      const double want = host[t][i];
      const bool same = std::isnan(want) ? std::isnan(device[t][i]) : device[t][i] == want;
      if (!same && ++mismatches <= 3) {
        ADD_FAILURE() << what << " tensor " << t << " element " << i << ": device " << device[t][i]
                      << ", host " << want;
      }
    }
  }
}

// The trainer's bookkeeping on the device (DeviceMasters) against the host's LossScaler,
// clip_grad_norm and optimizers (with PyTorch's CUDA rounding) on the same gradients: two
// micro-batches accumulated, unscaled, clipped, stepped (skipped on the step with inf), weights,
// unscaled gradients and scale equal after every step, for SGD with momentum and for AdamW.
TEST_F(TrainingOnGpu, DeviceMastersStepAsTheHostsScalerClipAndOptimizer) {
  const std::vector<std::size_t> sizes{5, 70001, 0, 33};
  const std::vector<train::OptimizerOptions> optimizers{
      train::SgdOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3},
      train::AdamWOptions{.weight_decay = 0.1, .amsgrad = true}};
  constexpr std::size_t kSteps = 6;
  for (const train::OptimizerOptions& options : optimizers) {
    SCOPED_TRACE(options.index() == 0 ? "sgd" : "adamw");
    std::vector<std::vector<float>> weights;
    std::vector<std::vector<double>> initial;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      weights.push_back(uniform(sizes[i], 1.0F, static_cast<std::uint32_t>(10 + i)));
      initial.emplace_back(weights.back().begin(), weights.back().end());
    }
    CudaOps gpu(builtin("amp-fp16"));
    DeviceMasters device(gpu, initial, options, kSteps);
    train::Optimizer<float> host(options, train::TorchKernels::cuda);
    const train::LossScalerOptions scaler_options{.init_scale = 1024.0, .growth_interval = 2};
    train::LossScaler device_scaler(scaler_options), host_scaler(scaler_options);
    for (std::size_t step = 0; step < kSteps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      std::vector<std::vector<float>> grads(sizes.size());
      for (std::size_t k = 0; k < 2; ++k) {
        for (std::size_t i = 0; i < sizes.size(); ++i) {
          std::vector<float> g =
              uniform(sizes[i], 2000.0F, static_cast<std::uint32_t>(100 * step + 10 * k + i));
          if (step == 2 && k == 1 && i == 1) g[65536] = std::numeric_limits<float>::infinity();
          device.accumulate(gpu, i, gpu.parameter(g), k == 0);
          if (k == 0) {
            grads[i] = g;
          } else {
            for (std::size_t j = 0; j < g.size(); ++j) grads[i][j] += g[j];
          }
        }
      }
      std::vector<std::span<float>> spans(grads.begin(), grads.end());
      device.unscale(device_scaler);
      if (step == 0) {
        EXPECT_THROW(device.unscale(device_scaler), std::logic_error) << "unscaled twice";
      }
      host_scaler.unscale(spans);
      expect_same_values(device.gradients(), grads, "unscaled gradient");
      device.clip(1.0);
      train::clip_grad_norm(spans, 1.0);
      const bool ran = device.step(device_scaler, [&] { device.optimizer_step(); });
      EXPECT_EQ(ran, host_scaler.step(spans, [&] { host.step(weights, grads); }));
      EXPECT_EQ(ran, step != 2);
      device_scaler.update();
      host_scaler.update();
      EXPECT_EQ(device_scaler.scale(), host_scaler.scale());
      expect_same_values(device.gradients(), grads, "clipped gradient");
      expect_same_values(device.weights_as_doubles(), weights, "weight");
      std::vector<std::vector<double>> params;
      for (const CudaTensor& p : device.parameters(gpu)) params.push_back(CudaOps::to_doubles(p));
      expect_same_values(params, weights, "parameter");
    }
    EXPECT_EQ(device_scaler.skipped_steps(), std::vector<std::int64_t>{2});
    EXPECT_THROW(device.step(device_scaler, [] {}), std::logic_error) << "no unscale before it";
  }
}

TEST_F(TrainingOnGpu, ProfileTimesEveryStepPhaseByPhase) {
  train::TrainConfig config;
  config.policies = {builtin("fp32"), builtin("amp-fp16")};
  config.steps = 3;
  const train::ProfileResult r =
      profile_on_device(config, train::default_dataset("mlp", 1), /*warmup=*/1);
  ASSERT_EQ(r.policies.size(), 2u);
  for (const auto& p : r.policies) {
    EXPECT_EQ(p.step_ns.size(), 3u) << p.policy;
    bool forward = false, backward = false;
    for (const auto& range : p.trace.ranges) {
      forward = forward || range.name == "forward";
      backward = backward || range.name == "backward";
    }
    EXPECT_TRUE(forward && backward) << p.policy;
  }
}

}  // namespace
}  // namespace ampbench::train::cuda
