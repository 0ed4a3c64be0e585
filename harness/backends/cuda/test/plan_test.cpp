// The CUDA backend's decisions, checked without a device: the compute type each policy gets, what
// cuBLAS's type tables refuse, the column-major call of each op (run here by a host emulation of
// cuBLASLt's definition of D = op(A) op(B)), and the exactness of the conversions to device types.
#include "harness/backends/cuda/plan.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/backends/cuda/test/gemm_call_emulation.hpp"

namespace ampbench::backends::cuda {
namespace {

namespace formats = numeric::formats;
using test::emulate;

const ops::OpInfo& op_named(const char* name) {
  return *ops::find_op(name);
}

Planning plan_under(const char* op, const char* policy_name,
                    std::optional<GemmCompute> compute = std::nullopt) {
  const ops::OpInfo& info = op_named(op);
  return plan(info, audit::precision_of(*policy::find_builtin(policy_name), info), compute);
}

void expect_gemm(const Planning& p, GemmCompute compute, DeviceType inputs, DeviceType output) {
  ASSERT_TRUE(p.plan.has_value()) << p.reason;
  ASSERT_EQ(p.plan->kind, Plan::Kind::gemm);
  EXPECT_EQ(compute_name(p.plan->gemm.compute), compute_name(compute));
  EXPECT_EQ(device_type_name(p.plan->gemm.inputs), device_type_name(inputs));
  EXPECT_EQ(device_type_name(p.plan->gemm.output), device_type_name(output));
}

TEST(GemmComputeNames, AreCublasEnumeratorsWithoutThePrefixAndReadCaseInsensitively) {
  EXPECT_EQ(compute_names(), "32F, 32F_PEDANTIC, 32F_FAST_TF32, 32F_FAST_16F, 32F_FAST_16BF, 16F");
  for (const GemmCompute c : kGemmComputes) {
    EXPECT_EQ(compute_from_name(compute_name(c)), c);
  }
  EXPECT_EQ(compute_from_name("32f_fast_tf32"), GemmCompute::f32_fast_tf32);
  EXPECT_FALSE(compute_from_name("64F").has_value());
  EXPECT_FALSE(compute_from_name("").has_value());
}

TEST(DefaultCompute, FollowsPytorchForEachBuiltInPolicy) {
  expect_gemm(plan_under("gemm", "fp32"), GemmCompute::f32, DeviceType::f32, DeviceType::f32);
  expect_gemm(plan_under("gemm", "tf32"), GemmCompute::f32_fast_tf32, DeviceType::f32,
              DeviceType::f32);
  expect_gemm(plan_under("gemm", "amp-fp16"), GemmCompute::f32, DeviceType::f16, DeviceType::f16);
  expect_gemm(plan_under("bmm", "amp-bf16"), GemmCompute::f32, DeviceType::bf16, DeviceType::bf16);
  expect_gemm(plan_under("gemm_backward_a", "fp16"), GemmCompute::f16, DeviceType::f16,
              DeviceType::f16);
  const Planning tf32 = plan_under("gemm", "tf32");
  EXPECT_NE(tf32.plan->gemm.rule.find("allow_tf32"), std::string::npos);
  EXPECT_NE(tf32.plan->gemm.rule.find("aten/src/ATen/cuda/CUDABlas.cpp"), std::string::npos);
}

TEST(DefaultCompute, DotIsAOneByOneGemmAndKeepsFp32UnderTf32) {
  const Planning dot = plan_under("dot", "tf32");  // the tf32 policy's exception for dot
  expect_gemm(dot, GemmCompute::f32, DeviceType::f32, DeviceType::f32);
  EXPECT_EQ(dot.plan->gemm.rule.rfind("as a 1 x 1 x N GEMM; ", 0), 0u) << dot.plan->gemm.rule;
}

TEST(DefaultCompute, Bf16AccumulationHasNoCublasComputeType) {
  const Planning p = plan_under("gemm", "bf16");
  EXPECT_FALSE(p.plan.has_value());
  EXPECT_EQ(p.reason,
            "gemm (bf16 inputs, bf16 accumulation, bf16 output): cuBLAS has no compute type that "
            "accumulates bf16 inputs in bf16 (its floating-point ones accumulate in fp16, fp32 or "
            "fp64); --gemm-compute chooses one");
  // An explicit compute type runs it, with fp32 accumulation.
  expect_gemm(plan_under("gemm", "bf16", GemmCompute::f32), GemmCompute::f32, DeviceType::bf16,
              DeviceType::bf16);
}

// cuBLAS's tables of supported types: 16F takes and writes fp16 only; the FAST types take fp32
// A and B (narrower inputs widen exactly) and write fp32 D; 32F writes the A/B type or fp32.
TEST(ComputeOverride, IsCheckedAgainstCublasTypeTables) {
  struct Row {
    const char* policy;
    GemmCompute compute;
    bool runs;
  };
  const Row rows[] = {
      {"fp32", GemmCompute::f32, true},           {"fp32", GemmCompute::f32_pedantic, true},
      {"fp32", GemmCompute::f32_fast_tf32, true}, {"fp32", GemmCompute::f32_fast_16f, true},
      {"fp32", GemmCompute::f32_fast_16bf, true}, {"fp32", GemmCompute::f16, false},
      {"amp-fp16", GemmCompute::f32, true},       {"amp-fp16", GemmCompute::f32_pedantic, true},
      {"amp-fp16", GemmCompute::f16, true},       {"amp-fp16", GemmCompute::f32_fast_tf32, false},
      {"amp-bf16", GemmCompute::f16, false},      {"amp-bf16", GemmCompute::f32_fast_16bf, false},
      {"fp16", GemmCompute::f32, true},           {"tf32", GemmCompute::f32_pedantic, true},
  };
  for (const Row& row : rows) {
    const Planning p = plan_under("gemm", row.policy, row.compute);
    EXPECT_EQ(p.plan.has_value(), row.runs)
        << row.policy << " " << compute_name(row.compute) << ": " << p.reason;
    if (p.plan) {
      EXPECT_EQ(p.plan->gemm.rule,
                std::string(compute_name(row.compute)) + " chosen with --gemm-compute");
    }
  }
  EXPECT_EQ(plan_under("gemm", "fp32", GemmCompute::f16).reason,
            "gemm (fp32 inputs, fp32 accumulation, fp32 output): 16F takes fp16 A and B (cuBLAS's "
            "table of supported types)");
  EXPECT_EQ(plan_under("gemm", "amp-fp16", GemmCompute::f32_fast_tf32).reason,
            "gemm (fp16 inputs, fp32 accumulation, fp16 output): 32F_FAST_TF32 with 32F A and B "
            "writes a 32F D (cuBLAS's table of supported types), not 16F");
  // fp16 inputs under a FAST type travel as fp32.
  expect_gemm(plan_under("gemm", "fp32", GemmCompute::f32_fast_16bf), GemmCompute::f32_fast_16bf,
              DeviceType::f32, DeviceType::f32);
}

// Attention and its gradients run as the trainer's CudaOps runs them: both kinds of product
// through cuBLASLt, the inputs' (Q K^T, dO V^T) and the compute format's (the probabilities' and
// score gradients' products), each D in the compute format.
TEST(AttentionPlan, RunsWhereTheTrainerRunsItAndSaysWhyNotElsewhere) {
  for (const char* op :
       {"attention", "attention_backward_q", "attention_backward_k", "attention_backward_v"}) {
    for (const char* policy : {"fp32", "tf32", "amp-fp16", "amp-bf16", "fp16"}) {
      const Planning p = plan_under(op, policy);
      ASSERT_TRUE(p.plan.has_value()) << op << " " << policy << ": " << p.reason;
      EXPECT_EQ(p.plan->kind, Plan::Kind::attention);
      EXPECT_EQ(p.plan->attention.compute_products.output,
                *holding_type(p.plan->attention.precision.compute));
    }
  }
  // amp-fp16: fp16 scores products (32F on 16F A and B), the rest on the fp32 probabilities.
  const Planning amp = plan_under("attention", "amp-fp16");
  EXPECT_EQ(amp.plan->attention.input_products.inputs, DeviceType::f16);
  EXPECT_EQ(amp.plan->attention.compute_products.inputs, DeviceType::f32);
  // Pure bf16 computes attention in bf16: no cuBLAS compute type accumulates bf16 in bf16.
  const Planning bf16 = plan_under("attention", "bf16");
  ASSERT_FALSE(bf16.plan.has_value());
  EXPECT_EQ(bf16.reason.rfind("attention (bf16 inputs, ", 0), 0u) << bf16.reason;
  EXPECT_NE(bf16.reason.find("its products: bmm (bf16 inputs, bf16 accumulation"),
            std::string::npos)
      << bf16.reason;
  // The trainer's attention is self-attention: as many keys as queries.
  const ops::OpInfo& attention = *ops::find_op("attention");
  const auto q = audit::precision_of(*policy::find_builtin("fp32"), attention);
  EXPECT_TRUE(plan(attention, ops::parse_shape(attention, "64x64x16"), q).plan.has_value());
  const Planning cross = plan(attention, ops::parse_shape(attention, "64x32x16"), q);
  ASSERT_FALSE(cross.plan.has_value());
  EXPECT_EQ(cross.reason,
            "attention (fp32 inputs, fp32 accumulation, fp32 output): the device's attention is "
            "the trainer's self-attention, with as many keys as queries (L = S), not 64 queries "
            "and 32 keys");
}

TEST(Unsupported, TheListOfSupportedOpsFollowsTheCatalog) {
  EXPECT_EQ(supported_ops(),
            "gemm, bmm, dot, sum, mean, l2_norm, softmax, log_softmax, logsumexp, layer_norm, "
            "rms_norm, relu, gelu, gelu_tanh, silu, cross_entropy, add, mul, batch_norm, "
            "attention, gemm_backward_a, "
            "gemm_backward_b, softmax_backward, log_softmax_backward, cross_entropy_backward, "
            "relu_backward, gelu_backward, layer_norm_backward_gamma, layer_norm_backward_beta, "
            "layer_norm_backward, silu_backward, conv2d, conv2d_backward_data, "
            "conv2d_backward_filter, gelu_tanh_backward, fma, cast, attention_backward_q, "
            "attention_backward_k, attention_backward_v, linear, linear_backward_bias, "
            "mean_pool, mean_pool_backward, batch_norm_backward, batch_norm_backward_gamma, "
            "batch_norm_backward_beta");
}

// ---- the op kernels
// ------------------------------------------------------------------------------

constexpr const char* kOpKernelOps[] = {"sum",
                                        "mean",
                                        "l2_norm",
                                        "softmax",
                                        "log_softmax",
                                        "logsumexp",
                                        "layer_norm",
                                        "rms_norm",
                                        "relu",
                                        "gelu",
                                        "gelu_tanh",
                                        "silu",
                                        "cross_entropy",
                                        "add",
                                        "mul",
                                        "fma",
                                        "softmax_backward",
                                        "log_softmax_backward",
                                        "cross_entropy_backward",
                                        "relu_backward",
                                        "gelu_backward",
                                        "gelu_tanh_backward",
                                        "silu_backward",
                                        "layer_norm_backward",
                                        "layer_norm_backward_gamma",
                                        "layer_norm_backward_beta",
                                        "batch_norm",
                                        "batch_norm_backward",
                                        "batch_norm_backward_gamma",
                                        "batch_norm_backward_beta",
                                        "mean_pool",
                                        "mean_pool_backward",
                                        "linear_backward_bias"};

OpKernelPlan expect_op_kernel(const Planning& p, DeviceType type) {
  EXPECT_TRUE(p.plan.has_value()) << p.reason;
  if (!p.plan) return {};
  EXPECT_EQ(p.plan->kind, Plan::Kind::op_kernel);
  EXPECT_EQ(device_type_name(p.plan->op_kernel.type), device_type_name(type));
  return p.plan->op_kernel;
}

// Every op kernel runs under every built-in policy, in the element type of the policy's output
// for it: the policies give each of these ops the same input and output format.
TEST(OpKernelPlan, EveryOpRunsUnderEveryBuiltInPolicyInItsOutputType) {
  for (const char* op : kOpKernelOps) {
    for (const policy::Policy& p : policy::builtin_policies()) {
      const ops::OpInfo& info = op_named(op);
      const policy::OpPrecision precision = audit::precision_of(p, info);
      const Planning planned = plan(info, precision);
      ASSERT_TRUE(planned.plan.has_value()) << op << " " << p.name << ": " << planned.reason;
      const DeviceType type = planned.plan->op_kernel.type;
      EXPECT_TRUE(numeric::same_format(device_type_format(type), precision.output))
          << op << " " << p.name;
      EXPECT_EQ(planned.plan->op_kernel.launchers.rfind("ampbench::kernels::", 0), 0u);
    }
  }
}

TEST(OpKernelPlan, AutocastRunsTheFp32ListInFp32AndTheRestInTheLowFormat) {
  EXPECT_EQ(expect_op_kernel(plan_under("softmax", "amp-fp16"), DeviceType::f32).arithmetic,
            "binary32");
  expect_op_kernel(plan_under("layer_norm_backward", "amp-bf16"), DeviceType::f32);
  expect_op_kernel(plan_under("cross_entropy", "amp-fp16"), DeviceType::f32);
  expect_op_kernel(plan_under("sum", "amp-fp16"), DeviceType::f32);
  // Promote ops run in the format of their (low-precision) inputs, arithmetic in fp32 opmath.
  EXPECT_EQ(expect_op_kernel(plan_under("gelu", "amp-fp16"), DeviceType::f16).arithmetic,
            "binary32");
  expect_op_kernel(plan_under("mean", "amp-bf16"), DeviceType::bf16);
  expect_op_kernel(plan_under("add", "amp-bf16"), DeviceType::bf16);
}

TEST(OpKernelPlan, PureLowPrecisionRunsWithBinary32ArithmeticAndSaysSo) {
  const OpKernelPlan fp16 = expect_op_kernel(plan_under("softmax", "fp16"), DeviceType::f16);
  EXPECT_EQ(fp16.arithmetic,
            "binary32 internally: the policy's fp16 compute and fp16 accumulation are not "
            "emulated (PyTorch's CUDA kernels compute half and bfloat16 in fp32 opmath)");
  const OpKernelPlan bf16 = expect_op_kernel(plan_under("rms_norm", "bf16"), DeviceType::bf16);
  EXPECT_EQ(bf16.arithmetic.rfind("binary32 internally: the policy's bf16 compute", 0), 0u);
  EXPECT_EQ(expect_op_kernel(plan_under("fma", "tf32"), DeviceType::f32).arithmetic, "binary32");
}

TEST(OpKernelPlan, NamesTheLaunchersEachOpCalls) {
  EXPECT_EQ(expect_op_kernel(plan_under("logsumexp", "fp32"), DeviceType::f32).launchers,
            "ampbench::kernels::softmax");
  EXPECT_EQ(expect_op_kernel(plan_under("silu_backward", "fp32"), DeviceType::f32).launchers,
            "ampbench::kernels::activation_backward");
  EXPECT_EQ(
      expect_op_kernel(plan_under("layer_norm_backward_gamma", "fp32"), DeviceType::f32).launchers,
      "ampbench::kernels::layer_norm (mean and rstd), ampbench::kernels::layer_norm_backward");
  EXPECT_EQ(expect_op_kernel(plan_under("cross_entropy", "fp16"), DeviceType::f16).launchers,
            "ampbench::kernels::cross_entropy, ampbench::kernels::cast (the binary32 loss)");
  // The training ops' own kernels: batch norm under autocast in the conv's fp16 output.
  EXPECT_EQ(expect_op_kernel(plan_under("batch_norm_backward_gamma", "amp-fp16"), DeviceType::f16)
                .launchers,
            "ampbench::kernels::batch_norm_backward");
  EXPECT_EQ(expect_op_kernel(plan_under("mean_pool", "amp-bf16"), DeviceType::bf16).launchers,
            "ampbench::kernels::mean_rows");
  EXPECT_EQ(expect_op_kernel(plan_under("linear_backward_bias", "tf32"), DeviceType::f32).launchers,
            "ampbench::kernels::column_sums");
}

// One element type for inputs and output: a wider fp32 output takes narrower inputs exactly;
// anything else is refused with the formats named.
TEST(OpKernelPlan, TakesTheOutputTypeWhenItHoldsTheInputs) {
  policy::OpPrecision widening;
  widening.input = formats::fp16;
  expect_op_kernel(plan(op_named("softmax"), widening), DeviceType::f32);

  policy::OpPrecision narrowing;
  narrowing.output = formats::fp16;
  EXPECT_EQ(plan(op_named("softmax"), narrowing).reason,
            "softmax (fp32 inputs, fp32 accumulation, fp16 output): the op kernels read and write "
            "one element type, and fp16 does not hold fp32 values");
  policy::OpPrecision across;
  across.input = formats::fp16;
  across.compute = across.accumulate = formats::fp32;
  across.output = formats::bf16;
  EXPECT_FALSE(plan(op_named("add"), across).plan.has_value());
}

TEST(OpKernelPlan, RefusesWhatTheKernelsCannotDo) {
  policy::OpPrecision directed;
  directed.mode = numeric::Rounding::toward_zero;
  EXPECT_EQ(plan(op_named("gelu"), directed).reason,
            "gelu (fp32 inputs, fp32 accumulation, fp32 output): the op kernels round to nearest "
            "even, not " +
                std::string(numeric::rounding_name(numeric::Rounding::toward_zero)));
  policy::OpPrecision fp8;
  fp8.input = formats::e4m3;
  EXPECT_NE(plan(op_named("add"), fp8).reason.find("the op kernels read fp32, fp16 or bf16 values"),
            std::string::npos);
  policy::OpPrecision saturating;
  saturating.input = formats::fp16;
  saturating.output = formats::fp16;
  saturating.output.overflow = numeric::Overflow::saturate;
  EXPECT_NE(plan(op_named("mul"), saturating).reason.find("(overflowing to infinity)"),
            std::string::npos);
  policy::OpPrecision wide;
  wide.accumulate = formats::fp64;
  EXPECT_EQ(plan(op_named("sum"), wide).reason,
            "sum (fp32 inputs, fp64 accumulation, fp32 output): the op kernels compute in "
            "binary32, narrower than the policy's fp64 accumulation");
  wide.accumulate = formats::fp32;
  wide.compute = formats::fp64;
  EXPECT_NE(
      plan(op_named("layer_norm"), wide).reason.find("narrower than the policy's fp64 compute"),
      std::string::npos);
}

TEST(Unsupported, FormatsCublasLtIsNotGivenHere) {
  policy::OpPrecision fp8;
  fp8.input = formats::e4m3;
  EXPECT_EQ(plan(op_named("gemm"), fp8).reason,
            "gemm (e4m3 inputs, fp32 accumulation, fp32 output): cuBLASLt GEMMs here take fp32, "
            "tf32, fp16 or bf16 inputs");
  policy::OpPrecision saturating;
  saturating.output = formats::fp16;
  saturating.output.overflow = numeric::Overflow::saturate;
  EXPECT_NE(plan(op_named("gemm"), saturating).reason.find("write fp32, fp16 or bf16 outputs"),
            std::string::npos);
}

TEST(CastPlan, RoundsToTheFormatGemmReadsInItsMode) {
  const Planning bf16 = plan_under("cast", "amp-bf16");
  ASSERT_TRUE(bf16.plan.has_value()) << bf16.reason;
  EXPECT_EQ(bf16.plan->kind, Plan::Kind::cast);
  EXPECT_STREQ(bf16.plan->cast.format.name, "bf16");
  EXPECT_EQ(bf16.plan->cast.mode, numeric::Rounding::nearest_even);
  EXPECT_STREQ(plan_under("cast", "tf32").plan->cast.format.name, "tf32");

  policy::OpPrecision stochastic;
  stochastic.output = formats::bf16;
  stochastic.mode = numeric::Rounding::stochastic_proportional;
  const Planning refused = plan(op_named("cast"), stochastic);
  EXPECT_FALSE(refused.plan.has_value());
  EXPECT_NE(refused.reason.find("does not replay the device's stochastic draws"), std::string::npos)
      << refused.reason;
  policy::OpPrecision wide;
  wide.output = formats::fp64;
  EXPECT_NE(plan(op_named("cast"), wide).reason.find("the rounding kernel takes binary32 inputs"),
            std::string::npos);
}

// Small integers: every product and sum is exact, so any order gives the same result.
ops::Inputs integer_inputs(const ops::OpInfo& op, const ops::Shape& shape) {
  ops::Inputs in;
  int next = 0;
  for (const ops::Operand& operand : ops::operands(op, shape)) {
    std::vector<double> values;
    if (!operand.optional) {
      values.resize(ops::element_count(operand.shape));
      for (double& v : values) v = static_cast<double>((next++ * 7) % 13 - 6);
    }
    in.values.push_back(std::move(values));
    in.indices.emplace_back();
  }
  return in;
}

TEST(GemmCall, EveryGemmOpMapsOntoOneColumnMajorCall) {
  const backends::cpu::Arithmetic exact{formats::fp64, formats::fp64, formats::fp64};
  for (const auto& [name, shape_text] :
       std::vector<std::pair<const char*, const char*>>{{"gemm", "3x5x7"},
                                                        {"bmm", "4x3x5x7"},
                                                        {"dot", "9"},
                                                        {"gemm_backward_a", "3x5x7"},
                                                        {"gemm_backward_b", "3x5x7"}}) {
    const ops::OpInfo& op = op_named(name);
    const ops::Shape shape = ops::parse_shape(op, shape_text);
    const ops::Inputs in = integer_inputs(op, shape);
    const GemmCall call = gemm_call(op, shape);
    const std::vector<double> want =
        ops::run_cpu(op, shape, exact, backends::cpu::Summation::sequential, in).output;
    EXPECT_EQ(emulate(call, in), want) << name;
  }
}

TEST(GemmCall, BmmIsOneStridedBatchedCall) {
  const GemmCall c = gemm_call(op_named("bmm"), ops::parse_shape(op_named("bmm"), "4x3x5x7"));
  EXPECT_EQ(c.batch, 4);
  EXPECT_EQ(c.stride_a, 7 * 5);  // B_b: K x N
  EXPECT_EQ(c.stride_b, 3 * 7);  // A_b: M x K
  EXPECT_EQ(c.stride_d, 3 * 5);
}

// linear is gemm's call (x and W as A and B); its bias goes to cuBLASLt's epilogue.
TEST(GemmCall, LinearIsGemmsCallWithTheBiasInTheOutputType) {
  const ops::Shape shape = ops::parse_shape(op_named("linear"), "3x5x7");
  const GemmCall linear = gemm_call(op_named("linear"), shape);
  const GemmCall gemm = gemm_call(op_named("gemm"), shape);
  EXPECT_EQ(std::tuple(linear.m, linear.n, linear.k, linear.a.operand, linear.b.operand),
            std::tuple(gemm.m, gemm.n, gemm.k, gemm.a.operand, gemm.b.operand));
  const Planning planned = plan_under("linear", "tf32");
  ASSERT_TRUE(planned.plan.has_value()) << planned.reason;
  EXPECT_EQ(planned.plan->gemm.output, DeviceType::f32);  // the bias: fp32, not tf32
}

TEST(GemmCall, OtherOpsAreNotGemms) {
  EXPECT_THROW(gemm_call(op_named("cast"), ops::parse_shape(op_named("cast"), "2x2")),
               std::invalid_argument);
}

TEST(DeviceValues, AreTheFormatsEncodingsBothWays) {
  const std::vector<double> values = {
      1.0, -2.5, 0.0, -0.0, 65504.0, std::ldexp(1.0, -24), std::numeric_limits<double>::infinity()};
  const std::vector<std::byte> half = to_device(values, DeviceType::f16);
  ASSERT_EQ(half.size(), values.size() * 2);
  std::uint16_t first = 0;
  std::memcpy(&first, half.data(), 2);
  EXPECT_EQ(first, 0x3C00);  // binary16 1.0
  const std::vector<double> back = from_device(half, DeviceType::f16);
  ASSERT_EQ(back.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(back[i]), std::bit_cast<std::uint64_t>(values[i])) << i;
  }
  const std::vector<std::byte> bf16 = to_device(std::vector<double>{1.0}, DeviceType::bf16);
  std::memcpy(&first, bf16.data(), 2);
  EXPECT_EQ(first, 0x3F80);  // bfloat16 1.0
  const std::vector<double> fp32_values = {0.1f, -3.4028234663852886e38, std::ldexp(1.0, -149)};
  EXPECT_EQ(from_device(to_device(fp32_values, DeviceType::f32), DeviceType::f32), fp32_values);
}

TEST(DeviceValues, AValueTheTypeDoesNotHoldIsAnError) {
  try {
    to_device(std::vector<double>{1.0, 0.1}, DeviceType::f16);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "element 1 (0.1) is not a fp16 value");
  }
  EXPECT_THROW(to_device(std::vector<double>{1.0 / 3}, DeviceType::f32), std::invalid_argument);
  EXPECT_THROW(to_device(std::vector<double>{70000.0}, DeviceType::f16), std::invalid_argument);
}

TEST(DeviceRecord, NamesTheDeviceAndEveryLibraryVersion) {
  kernels::DeviceStatus device;
  device.available = true;
  device.name = "NVIDIA H200";
  device.compute_major = 9;
  device.compute_minor = 0;
  kernels::LibraryVersions versions;
  versions.cuda_driver = {13, 0, 0};
  versions.cuda_runtime = {13, 0, 0};
  versions.cublas = {13, 1, 0};
  versions.cudnn = {9, 19, 0};
  const nlohmann::json record = device_record(device, versions, nullptr);
  EXPECT_EQ(record, nlohmann::json::parse(R"({"name": "NVIDIA H200", "compute_capability": "9.0",
      "driver": "13.0.0", "cuda_runtime": "13.0.0", "cublas": "13.1.0", "cudnn": "9.19.0",
      "nvidia_tf32_override": null})"));
  // NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS and cuDNN: the record keeps its value.
  EXPECT_EQ(device_record(device, versions, "0")["nvidia_tf32_override"], "0");
}

}  // namespace
}  // namespace ampbench::backends::cuda
