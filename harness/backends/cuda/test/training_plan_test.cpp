// The rules that decide what trains on the GPU, checked on the CPU: which built-in policies and
// models the CUDA backend trains, the linear layers' cuBLASLt plans, and the notes and refusals.
#include "harness/backends/cuda/training_plan.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backends/cuda/test/gemm_call_emulation.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"
#include "harness/train/model_ops.hpp"

namespace {

using namespace ampbench;
using backends::cuda::DeviceType;
using backends::cuda::GemmCompute;

// The planner on the ops of a model, as the registry asks it (runtime::why_not_trainable).
std::optional<std::string> why_not_trainable(const policy::Policy& p, std::string_view model) {
  return backends::cuda::why_not_trainable(p, train::model_ops(model));
}
std::optional<std::string> non_gemm_compute_note(const policy::Policy& p, std::string_view model) {
  return backends::cuda::non_gemm_compute_note(p, train::model_ops(model));
}

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
    EXPECT_EQ(why_not_trainable(builtin(name), "mlp"), std::nullopt) << name;
  }
  // Pure bf16 accumulates its products in bf16, which no cuBLAS compute type does.
  const auto bf16 = why_not_trainable(builtin("bf16"), "mlp");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_NE(bf16->find("policy bf16: linear: "), std::string::npos) << *bf16;
  EXPECT_NE(bf16->find("bf16 accumulation"), std::string::npos) << *bf16;
}

TEST(TrainingPlan, TheCnnTrainsWhereCudnnAndTheKernelsRunItsOps) {
  for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16", "fp16"}) {
    EXPECT_EQ(why_not_trainable(builtin(name), "cnn"), std::nullopt) << name;
  }
  // Pure bf16's linear layers are refused first, as for the mlp.
  const auto bf16 = why_not_trainable(builtin("bf16"), "cnn");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_NE(bf16->find("policy bf16: linear: "), std::string::npos) << *bf16;
}

TEST(TrainingPlan, ConvolutionsCudnnCannotRunAreRefusedWithTheirPlansReason) {
  // bf16 accumulation of the convolutions: no cuDNN configuration accumulates bf16 data in bf16.
  policy::Policy p = builtin("amp-bf16");
  p.name = "amp-bf16-conv-acc";
  own_entry(p, policy::Op::conv).accumulate = numeric::formats::bf16;
  const auto why = why_not_trainable(p, "cnn");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->find("policy amp-bf16-conv-acc: conv: conv2d ("), 0u) << *why;
  EXPECT_NE(why->find("cuDNN accumulates 16BF data in fp32 only"), std::string::npos) << *why;
  // The mlp has no convolution: the same policy trains it.
  EXPECT_EQ(why_not_trainable(p, "mlp"), std::nullopt);
}

TEST(TrainingPlan, TheCnnsKernelOpsAreCheckedNotTheMlps) {
  // Batch norm rounding stochastically: the cnn is refused, the mlp (no batch norm) is not.
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-fp16-bn-sr";
  own_entry(p, policy::Op::batch_norm).mode = numeric::Rounding::stochastic_proportional;
  const auto why = why_not_trainable(p, "cnn");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("policy amp-fp16-bn-sr: batch_norm rounds "), std::string::npos) << *why;
  EXPECT_EQ(why_not_trainable(p, "mlp"), std::nullopt);
}

TEST(TrainingPlan, TheTransformerTrainsWhereTheDeviceRunsAttentionAsTheEmulation) {
  for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16", "fp16"}) {
    EXPECT_EQ(why_not_trainable(builtin(name), "transformer"), std::nullopt) << name;
  }
  // Attention inputs in e5m2: no device type holds them and the device rounds only to tf32. The
  // mlp, which has no attention, trains.
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-e5m2-attention";
  own_entry(p, policy::Op::attention).input = numeric::formats::e5m2;
  const auto e5m2 = why_not_trainable(p, "transformer");
  ASSERT_TRUE(e5m2.has_value());
  EXPECT_EQ(e5m2->rfind("policy amp-e5m2-attention: attention (e5m2 inputs, ", 0), 0u) << *e5m2;
  EXPECT_NE(e5m2->find("): the device's attention reads fp32, tf32, fp16 and bf16 inputs and "
                       "computes in fp32, fp16 or bf16, not e5m2 inputs in fp32"),
            std::string::npos)
      << *e5m2;
  EXPECT_EQ(why_not_trainable(p, "mlp"), std::nullopt);
  // Pure bf16's linear layers are refused first, as for the other models.
  const auto bf16 = why_not_trainable(builtin("bf16"), "transformer");
  ASSERT_TRUE(bf16.has_value());
  EXPECT_EQ(bf16->find("policy bf16: linear: "), 0u) << *bf16;
}

TEST(TrainingPlan, TheTransformersAttentionAndAddAreCheckedNotTheMlps) {
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-fp16-attention-sr";
  own_entry(p, policy::Op::attention).mode = numeric::Rounding::stochastic_proportional;
  const auto attention = why_not_trainable(p, "transformer");
  ASSERT_TRUE(attention.has_value());
  EXPECT_EQ(attention->find("policy amp-fp16-attention-sr: attention ("), 0u) << *attention;
  EXPECT_NE(attention->find("the device's attention rounds to nearest even, not "),
            std::string::npos)
      << *attention;
  EXPECT_EQ(why_not_trainable(p, "mlp"), std::nullopt);

  policy::Policy q = builtin("amp-bf16");
  q.name = "amp-bf16-add-sr";
  own_entry(q, policy::Op::add).mode = numeric::Rounding::stochastic_proportional;
  const auto add = why_not_trainable(q, "transformer");
  ASSERT_TRUE(add.has_value());
  EXPECT_EQ(add->find("policy amp-bf16-add-sr: add rounds "), 0u) << *add;
  EXPECT_EQ(why_not_trainable(q, "mlp"), std::nullopt);
}

TEST(TrainingPlan, AttentionsProductsWriteTheirSumsInTheComputeFormat) {
  const std::vector<numeric::Format> inputs{numeric::formats::fp32};
  struct Case {
    const char* policy;
    GemmCompute compute;
    DeviceType sums;  // the compute format's type
  };
  // tf32's scores: tf32 inputs through 32F_FAST_TF32, exact conversions of values the device has
  // rounded to tf32; its probabilities' products binary32 (32F), as the emulation's.
  const auto tf32_q = policy::resolve(builtin("tf32").precision(policy::Op::attention), inputs);
  EXPECT_EQ(backends::cuda::attention_product_plan(tf32_q, tf32_q.input).compute,
            GemmCompute::f32_fast_tf32);
  EXPECT_EQ(backends::cuda::attention_product_plan(tf32_q, tf32_q.compute).compute,
            GemmCompute::f32);
  for (const Case& c : {Case{"fp32", GemmCompute::f32, DeviceType::f32},
                        Case{"amp-fp16", GemmCompute::f32, DeviceType::f32},
                        Case{"amp-bf16", GemmCompute::f32, DeviceType::f32},
                        Case{"fp16", GemmCompute::f16, DeviceType::f16}}) {
    const policy::OpPrecision q =
        policy::resolve(builtin(c.policy).precision(policy::Op::attention), inputs);
    // The scores and dP: the inputs as the policy casts them.
    const auto scores = backends::cuda::attention_product_plan(q, q.input);
    EXPECT_EQ(scores.compute, c.compute) << c.policy;
    EXPECT_STREQ(device_type_format(scores.inputs).name, q.input.name) << c.policy;
    EXPECT_EQ(scores.output, c.sums) << c.policy;
    // The products of the probabilities and score gradients: compute-format operands (no TF32).
    const auto wide = backends::cuda::attention_product_plan(q, q.compute);
    EXPECT_EQ(wide.compute, c.compute) << c.policy;
    EXPECT_EQ(wide.inputs, c.sums) << c.policy;
    EXPECT_EQ(wide.output, c.sums) << c.policy;
  }
}

// Row-major products per sample, directly: C_b = op(X_b) op(Y_b), C_b m x n from k terms, X_b
// stored m x k (k x m when transposed), Y_b k x n (n x k when transposed).
std::vector<double> sample_products(std::size_t batch, std::size_t m, std::size_t n, std::size_t k,
                                    const std::vector<double>& x, bool x_transposed,
                                    const std::vector<double>& y, bool y_transposed) {
  std::vector<double> c(batch * m * n);
  for (std::size_t b = 0; b < batch; ++b) {
    const double* xb = x.data() + b * m * k;
    const double* yb = y.data() + b * k * n;
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::size_t l = 0; l < k; ++l) {
          sum += (x_transposed ? xb[l * m + i] : xb[i * k + l]) *
                 (y_transposed ? yb[j * k + l] : yb[l * n + j]);
        }
        c[b * m * n + i * n + j] = sum;
      }
    }
  }
  return c;
}

// Small integers, distinct per seed: every product and sum is exact.
std::vector<double> integers(std::size_t n, int seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<double>((static_cast<int>(i) * 7 + seed * 5) % 13 - 6);
  }
  return v;
}

TEST(TrainingPlan, AttentionsCallsComputeItsSixProductsPerSample) {
  // Lengths and widths that differ, so that a swapped dimension or stride shows.
  constexpr std::size_t batch = 3, length = 5, d = 4;
  const ops::Shape shape{{length, d, length}};
  const auto tokens = integers(batch * length * d, 1);       // Q, K, V or dO
  const auto others = integers(batch * length * d, 2);       // a second one
  const auto square = integers(batch * length * length, 3);  // P or dS
  const auto run = [&](const char* op, const std::vector<double>& first,
                       const std::vector<double>& second) {
    ops::Inputs in;
    in.values = {first, second};
    return backends::cuda::test::emulate(backends::cuda::attention_call(op, shape, batch), in);
  };
  // S = Q K^T and dP = dO V^T: gemm_backward_a.
  EXPECT_EQ(run("gemm_backward_a", tokens, others),
            sample_products(batch, length, length, d, tokens, false, others, true));
  // O = P V and dQ = dS K: gemm.
  EXPECT_EQ(run("gemm", square, tokens),
            sample_products(batch, length, d, length, square, false, tokens, false));
  // dK = dS^T Q and dV = P^T dO: gemm_backward_b.
  EXPECT_EQ(run("gemm_backward_b", square, tokens),
            sample_products(batch, length, d, length, square, true, tokens, false));
  EXPECT_THROW(backends::cuda::attention_call("gemm", shape, 0), std::invalid_argument);
  EXPECT_THROW(backends::cuda::attention_call("gemm", shape, std::size_t{1} << 31),
               std::invalid_argument);
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
  for (const char* model : {"mlp", "cnn", "transformer"}) {
    for (const char* name : {"fp32", "tf32", "amp-fp16", "amp-bf16"}) {
      EXPECT_EQ(non_gemm_compute_note(builtin(name), model), std::nullopt) << name << " " << model;
    }
  }
  const auto note = non_gemm_compute_note(builtin("fp16"), "mlp");
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("policy fp16 computes gelu in fp16; the GPU kernels compute it in fp32"),
            std::string::npos)
      << *note;
  // The cnn's note names an op the cnn has.
  const auto cnn = non_gemm_compute_note(builtin("fp16"), "cnn");
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
  const auto why = why_not_trainable(p, "mlp");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("policy amp-fp16-sr: gelu rounds "), std::string::npos) << *why;
  EXPECT_NE(why->find("the GPU kernels round to nearest even only"), std::string::npos) << *why;
}

TEST(TrainingPlan, OpsWhoseInputAndOutputFormatsDifferAreRefused) {
  policy::Policy p = builtin("amp-fp16");
  p.name = "amp-fp16-narrow-norms";
  p.precision(policy::OpClass::normalization).input = numeric::formats::fp16;
  const auto why = why_not_trainable(p, "mlp");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("policy amp-fp16-narrow-norms: layer_norm reads fp16 and writes fp32"),
            std::string::npos)
      << *why;
}

}  // namespace
