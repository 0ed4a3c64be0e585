// The GPU training ops and steps on the device: each op of the mlp against the CPU backend's
// emulation of the same policy (same operands, same dtype flow), and short training and profiling
// runs against the multiprecision reference. Every test skips with the reason where there is no
// device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness/backends/cuda/test/device_comparison.hpp"
#include "harness/backends/cuda/train.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "harness/train/ops.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

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
}  // namespace ampbench::backends::cuda
