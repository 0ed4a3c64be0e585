// The rules that decide what trains on the GPU, checked on the CPU: which built-in policies and
// models the CUDA backend trains, the linear layers' cuBLASLt plans, and the notes and refusals.
#include "harness/backends/cuda/training_plan.hpp"

#include <gtest/gtest.h>

#include <string>

#include "harness/policy/policy.hpp"

namespace {

using namespace ampbench;
using backends::cuda::DeviceType;
using backends::cuda::GemmCompute;

const policy::Policy& builtin(const std::string& name) {
  const policy::Policy* p = policy::find_builtin(name);
  if (p == nullptr) throw std::invalid_argument(name);
  return *p;
}

// The entry of `op` alone in `p` (its exception, added with the op's current precision when it has
// none), to change without touching the op's class.
policy::OpPrecision& own_entry(policy::Policy& p, policy::Op op) {
  for (auto& e : p.exceptions) {
    if (e.op == op) return e.precision;
  }
  p.exceptions.push_back({op, p.precision(op)});
  return p.exceptions.back().precision;
}

TEST(TrainingPlan, TheMlpTrainsUnderEveryPolicyWithACublasComputeType) {
  for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16", "fp16"}) {
    EXPECT_EQ(backends::cuda::why_not_trainable(builtin(name), "mlp"), std::nullopt) << name;
  }
  // Pure bf16 accumulates its products in bf16, which no cuBLAS compute type does.
  const auto bf16 = backends::cuda::why_not_trainable(builtin("bf16"), "mlp");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_NE(bf16->find("policy bf16: linear: "), std::string::npos) << *bf16;
  EXPECT_NE(bf16->find("bf16 accumulation"), std::string::npos) << *bf16;
}

TEST(TrainingPlan, TheCnnTrainsWhereCudnnAndTheKernelsRunItsOps) {
  for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16", "fp16"}) {
    EXPECT_EQ(backends::cuda::why_not_trainable(builtin(name), "cnn"), std::nullopt) << name;
  }
  EXPECT_EQ(backends::cuda::trainable_models(), "mlp, cnn");
  // Pure bf16's linear layers are refused first, as for the mlp.
  const auto bf16 = backends::cuda::why_not_trainable(builtin("bf16"), "cnn");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_NE(bf16->find("policy bf16: linear: "), std::string::npos) << *bf16;
}

TEST(TrainingPlan, ConvolutionsCudnnCannotRunAreRefusedWithTheirPlansReason) {
  // bf16 accumulation of the convolutions: no cuDNN configuration accumulates bf16 data in bf16.
  policy::Policy p = builtin("amp-bf16");
  p.name = "amp-bf16-conv-acc";
  own_entry(p, policy::Op::conv).accumulate = numeric::formats::bf16;
  const auto why = backends::cuda::why_not_trainable(p, "cnn");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->find("policy amp-bf16-conv-acc: conv: conv2d ("), 0u) << *why;
  EXPECT_NE(why->find("cuDNN accumulates 16BF data in fp32 only"), std::string::npos) << *why;
  // The mlp has no convolution: the same policy trains it.
  EXPECT_EQ(backends::cuda::why_not_trainable(p, "mlp"), std::nullopt);
}

TEST(TrainingPlan, TheCnnsKernelOpsAreCheckedNotTheMlps) {
  // Batch norm rounding stochastically: the cnn is refused, the mlp (no batch norm) is not.
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-fp16-bn-sr";
  own_entry(p, policy::Op::batch_norm).mode = numeric::Rounding::stochastic_proportional;
  const auto why = backends::cuda::why_not_trainable(p, "cnn");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("policy amp-fp16-bn-sr: batch_norm rounds "), std::string::npos) << *why;
  EXPECT_EQ(backends::cuda::why_not_trainable(p, "mlp"), std::nullopt);
}

TEST(TrainingPlan, TheTransformerIsRefusedWithTheReason) {
  const auto why = backends::cuda::why_not_trainable(builtin("fp32"), "transformer");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->find("model transformer: the CUDA backend trains mlp, cnn so far (the transformer "
                      "needs attention on the device)"),
            0u)
      << *why;
}

TEST(TrainingPlan, LinearLayersRunAsPyTorchRunsThem) {
  using numeric::formats::fp32;
  const auto fp32_plan = backends::cuda::linear_plan(builtin("fp32"), fp32);
  EXPECT_EQ(fp32_plan.compute, GemmCompute::f32);
  EXPECT_EQ(fp32_plan.inputs, DeviceType::f32);
  EXPECT_EQ(fp32_plan.output, DeviceType::f32);
  const auto tf32 = backends::cuda::linear_plan(builtin("tf32"), fp32);
  EXPECT_EQ(tf32.compute, GemmCompute::f32_fast_tf32);
  EXPECT_EQ(tf32.inputs, DeviceType::f32);
  // Autocast casts binary32 activations to the policy's type; the product accumulates in fp32.
  const auto amp16 = backends::cuda::linear_plan(builtin("amp-fp16"), fp32);
  EXPECT_EQ(amp16.compute, GemmCompute::f32);
  EXPECT_EQ(amp16.inputs, DeviceType::f16);
  EXPECT_EQ(amp16.output, DeviceType::f16);
  const auto amp_bf16 = backends::cuda::linear_plan(builtin("amp-bf16"), fp32);
  EXPECT_EQ(amp_bf16.inputs, DeviceType::bf16);
  EXPECT_EQ(amp_bf16.output, DeviceType::bf16);
  const auto fp16 = backends::cuda::linear_plan(builtin("fp16"), numeric::formats::fp16);
  EXPECT_EQ(fp16.compute, GemmCompute::f16);
  EXPECT_THROW(backends::cuda::linear_plan(builtin("bf16"), fp32), std::invalid_argument);
}

TEST(TrainingPlan, NarrowNonGemmArithmeticIsNotedNotHidden) {
  for (const char* model : {"mlp", "cnn"}) {
    for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16"}) {
      EXPECT_EQ(backends::cuda::non_gemm_compute_note(builtin(name), model), std::nullopt)
          << name << " " << model;
    }
  }
  const auto note = backends::cuda::non_gemm_compute_note(builtin("fp16"), "mlp");
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("policy fp16 computes gelu in fp16; the GPU kernels compute it in fp32"),
            std::string::npos)
      << *note;
  // The cnn's note names an op the cnn has.
  const auto cnn = backends::cuda::non_gemm_compute_note(builtin("fp16"), "cnn");
  ASSERT_TRUE(cnn.has_value());
  EXPECT_NE(
      cnn->find("policy fp16 computes batch_norm in fp16; the GPU kernels compute it in fp32"),
      std::string::npos)
      << *cnn;
}

TEST(TrainingPlan, RoundingModesTheKernelsDoNotHaveAreRefused) {
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-fp16-sr";
  p.precision(policy::OpClass::activation).mode = numeric::Rounding::stochastic_proportional;
  const auto why = backends::cuda::why_not_trainable(p, "mlp");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("policy amp-fp16-sr: gelu rounds "), std::string::npos) << *why;
  EXPECT_NE(why->find("the GPU kernels round to nearest even only"), std::string::npos) << *why;
}

}  // namespace
