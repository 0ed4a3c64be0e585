// The transformer on the device: its own ops (add, gradient_for, attention forward and backward)
// against the CPU backend's emulation of the same policy, fed as the model feeds them (q, k and v
// from linear layers, so in the policy's linear output format), and short training and profiling
// runs against the multiprecision reference. Every test skips with the reason where there is no
// device.
//
// The tolerances. The device runs the emulation's roundings (training_ops.hpp), in another order:
// cuBLASLt's sums against the emulation's sequential ones over d = 16 or L terms and the softmax
// kernel's tree reductions (the backward's row sums D_i = rowsum(dO_i * O_i) are added in the
// emulation's order). Under fp32 each of these is a binary32 rounding or two of values of the size
// of the results (two orders of a sum of k terms differ by about sqrt(k) u, u = 2^-24, k <= 16
// here, so about 1e-7), carried through a chain of four or five ops: 1e-5 leaves a wide margin and
// is 50 times smaller than fp16's unit roundoff, so a 16-bit rounding, a missing or doubled scale
// (a factor 4 here), a transposed operand or a wrong batch stride exceed it. Under amp-fp16 and
// amp-bf16 the results are rounded to the 16-bit type, where two orders of the binary32 sums round
// to neighbouring values now and then: a rounding or two of fp16 (u = 2^-11) and bf16 (2^-8), the
// mlp's and the cnn's tolerances (training_test.cpp, training_cnn_test.cpp). Pure fp16 accumulates
// in fp16: the emulation's sequential sums of 16 terms and cuBLAS's 16F sums in its own order each
// carry up to 16 u = 8e-3 relative to the sum of the magnitudes, and the device's softmax computes
// in fp32 where the emulation rounds every step to fp16 (the command's note says so); through the
// linear layer, the scores and the products with V, 2e-2 (about 40 u) bounds that chain, while a
// wrong scale (a factor 4), a lost operand or a wrong stride still exceeds it by far.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/profile/classify.hpp"
#include "harness/train/cuda/test/device_comparison.hpp"
#include "harness/train/cuda/train_on_device.hpp"
#include "harness/train/data.hpp"
#include "harness/train/ops.hpp"
#include "harness/train/trainer.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::train::cuda {
namespace {

using backends::cuda::CudaOps;
using backends::cuda::CudaTensor;

using TransformerOnGpu = kernels::test::GpuTest;
using test::builtin;
using test::normwise;
using test::uniform;
using test::widened;

// Attention over `batch` samples of `length` tokens of width d under `policy`, with the ops around
// it in the model: q, k and v from linear layers of the same input, the residual add, the
// gradients the backward receives cast to their inputs' formats, and their sums; every result
// within `tolerance` (normwise) of the emulation's and in its format.
void compare_attention(const char* policy, double tolerance, std::size_t batch,
                       std::size_t length) {
  SCOPED_TRACE(policy);
  SCOPED_TRACE("length " + std::to_string(length));
  constexpr std::size_t d = 16;
  const std::size_t tokens = batch * length;
  const auto x = widened(uniform(tokens * d, -1.0F, 1.0F, 31));
  const auto d_out = widened(uniform(tokens * d, -1.0F, 1.0F, 32));
  // Weights of about 1/sqrt(d) keep q, k and v of the size of x, as the model's initialization.
  std::vector<std::vector<float>> weights, biases;
  for (std::uint32_t i = 0; i < 3; ++i) {
    weights.push_back(uniform(d * d, -0.25F, 0.25F, 33 + i));
    biases.push_back(uniform(d, -0.25F, 0.25F, 36 + i));
  }

  train::EmulatedOps cpu(builtin(policy));
  CudaOps gpu(builtin(policy));
  const auto check = [&](const std::string& what, const train::EmulatedTensor& e,
                         const CudaTensor& g) {
    EXPECT_STREQ(g.format.name, e.format.name) << what;
    EXPECT_EQ(g.size, e.values.size()) << what;
    EXPECT_LE(normwise(CudaOps::to_doubles(g), e.values), tolerance) << what;
  };

  const auto ex = cpu.constant(x);
  const auto gx = gpu.constant(x);
  std::vector<train::EmulatedTensor> e;  // q, k, v
  std::vector<CudaTensor> g;
  for (std::size_t i = 0; i < 3; ++i) {
    e.push_back(cpu.linear(ex, cpu.parameter(weights[i]), cpu.parameter(biases[i]), tokens, d, d));
    g.push_back(gpu.linear(gx, gpu.parameter(weights[i]), gpu.parameter(biases[i]), tokens, d, d));
    check("linear " + std::to_string(i), e[i], g[i]);
  }
  const auto eo = cpu.attention(e[0], e[1], e[2], batch, length, d);
  const auto go = gpu.attention(g[0], g[1], g[2], batch, length, d);
  check("attention", eo, go);
  // The residual connection: binary32 x plus the attention's output (fp16 or bf16 under amp).
  check("add", cpu.add(ex, eo), gpu.add(gx, go));

  // The upstream gradient in the output's format, as the projection's backward gives it.
  const auto edo = cpu.gradient_for(eo, cpu.constant(d_out));
  const auto gdo = gpu.gradient_for(go, gpu.constant(d_out));
  check("gradient_for", edo, gdo);
  const auto eg = cpu.attention_backward(e[0], e[1], e[2], edo, batch, length, d);
  const auto gg = gpu.attention_backward(g[0], g[1], g[2], gdo, batch, length, d);
  check("attention_backward dq", eg.dq, gg.dq);
  check("attention_backward dk", eg.dk, gg.dk);
  check("attention_backward dv", eg.dv, gg.dv);
  // The sum the model forms of the three input gradients, and its cast back to binary32.
  const auto esum = cpu.add(cpu.add(eg.dq, eg.dk), eg.dv);
  const auto gsum = gpu.add(gpu.add(gg.dq, gg.dk), gg.dv);
  check("add of the gradients", esum, gsum);
  check("gradient_for binary32", cpu.gradient_for(ex, esum), gpu.gradient_for(gx, gsum));
}

TEST_F(TransformerOnGpu, Fp32AttentionAgreesWithTheEmulationToBinary32Accuracy) {
  compare_attention("fp32", 1e-5, 4, 16);
  // A length that is no multiple of cuBLASLt's alignments, and more samples.
  compare_attention("fp32", 1e-5, 9, 7);
}

TEST_F(TransformerOnGpu, AmpAttentionFollowsAutocastsDtypeFlow) {
  compare_attention("amp-fp16", 4e-3, 4, 16);
  compare_attention("amp-bf16", 3e-2, 4, 16);
  compare_attention("amp-fp16", 4e-3, 9, 7);
}

// tf32: the device rounds q, k, v and dO to tf32 as the emulation does (kernels::round_to_tf32,
// round_to's code) and multiplies them exactly; but q, k and v come from tf32 linear layers, whose
// conversion inside cuBLAS (32F_FAST_TF32) need not round to nearest as the emulation's does, so
// an input may sit one tf32 step (2^-11 relative, fp16's unit roundoff) from the emulation's:
// fp16's tolerance.
TEST_F(TransformerOnGpu, Tf32AttentionRoundsItsInputsOnTheDevice) {
  compare_attention("tf32", 4e-3, 4, 16);
  compare_attention("tf32", 4e-3, 9, 7);
}

TEST_F(TransformerOnGpu, PureFp16AttentionComputesInFp16) {
  compare_attention("fp16", 2e-2, 4, 16);
}

TEST_F(TransformerOnGpu, ShortTrainingTracksTheReference) {
  train::TrainConfig config;
  config.model = "transformer";
  for (const char* p : {"fp32", "tf32", "amp-fp16", "amp-bf16"}) {
    config.policies.push_back(builtin(p));
  }
  config.steps = 10;
  config.batch = 8;
  const train::Split split = train::split(train::make_sequences(6, 96, 8, 4), 16, 1);
  const train::TrainResult r = train_on_device(config, split.train, split.eval);
  // fp32 within 1e-5 of the reference's loss at every step, as the CPU backend's transformer
  // (trainer_test.cpp): attention's sums are of 16 terms or fewer here.
  test::expect_tracks_reference(r, 4, 10);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(r.runs[2].scaler) << "amp-fp16 trains with the loss scaler";
}

TEST_F(TransformerOnGpu, ProfileNamesTheAttentionProductsForTensorCoreEligibility) {
  train::TrainConfig config;
  config.model = "transformer";
  config.policies = {builtin("fp32"), builtin("amp-fp16"), builtin("tf32")};
  config.steps = 3;
  const train::Dataset data = train::default_dataset("transformer", 1);
  const std::size_t length = data.sample_shape.at(0), width = 16;  // the model's width
  const train::ProfileResult r = profile_on_device(config, data, /*warmup=*/1);
  ASSERT_EQ(r.policies.size(), 3u);
  // The scores Q K^T (L x L from d terms, in the type the policy's attention inputs reach the
  // Tensor Cores in) and P V (d x L from L terms, binary32 under these policies: the probabilities
  // stay binary32, and under tf32 their product is no TF32 product, as in the emulation).
  const auto name = [&](std::uint64_t m, std::uint64_t k, profile::GemmDtype dtype) {
    return profile::gemm_range_name({m, length, k, dtype, config.batch});  // one per sample
  };
  const profile::GemmDtype scores[] = {profile::GemmDtype::fp32, profile::GemmDtype::fp16,
                                       profile::GemmDtype::tf32};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& p = r.policies[i];
    EXPECT_EQ(p.step_ns.size(), 3u) << p.policy;
    std::set<std::string> seen;
    bool forward = false, backward = false;
    for (const auto& range : p.trace.ranges) {
      forward = forward || range.name == "forward";
      backward = backward || range.name == "backward";
      seen.insert(range.name);
    }
    EXPECT_TRUE(forward && backward) << p.policy;
    for (const std::string& product :
         {name(length, width, scores[i]), name(width, length, profile::GemmDtype::fp32)}) {
      EXPECT_TRUE(seen.contains(product)) << p.policy << ": no range " << product;
    }
  }
}

}  // namespace
}  // namespace ampbench::train::cuda
