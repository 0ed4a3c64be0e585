// The CUDA backend's convolution decisions, checked without a device: the cuDNN data, compute and
// math types each policy gets, what cuDNN's configurations refuse, --conv-math's names, the order
// of what the math types permit, and the descriptors of a geometry (run here by a host emulation
// of cuDNN's definition of the three passes, against the catalog's own convolution).
#include "harness/backends/cuda/conv_plan.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"

namespace ampbench::backends::cuda {
namespace {

namespace formats = numeric::formats;
using kernels::ConvolutionMath;
using kernels::ConvolutionPass;

Planning conv_plan_under(const char* op, const char* policy_name,
                         std::optional<ConvolutionMath> math = std::nullopt) {
  const ops::OpInfo& info = *ops::find_op(op);
  return plan(info, audit::precision_of(*policy::find_builtin(policy_name), info), std::nullopt,
              math);
}

void expect_conv(const Planning& p, DeviceType data, DeviceType compute, ConvolutionMath math) {
  ASSERT_TRUE(p.plan.has_value()) << p.reason;
  ASSERT_EQ(p.plan->kind, Plan::Kind::convolution);
  EXPECT_EQ(device_type_name(p.plan->convolution.data), device_type_name(data));
  EXPECT_EQ(device_type_name(p.plan->convolution.compute), device_type_name(compute));
  EXPECT_EQ(kernels::math_name(p.plan->convolution.math), kernels::math_name(math));
}

TEST(ConvMathNames, AreTheMathTypesInLowerCaseAndReadCaseInsensitively) {
  EXPECT_EQ(conv_math_names(), "default, tensor_op, tensor_op_allow_conversion, fma");
  for (const ConvolutionMath m : kernels::kConvolutionMaths) {
    EXPECT_EQ(conv_math_from_name(kernels::math_name(m)), m);
  }
  EXPECT_EQ(conv_math_from_name("TENSOR_OP"), ConvolutionMath::tensor_op);
  EXPECT_EQ(conv_math_from_name("Fma"), ConvolutionMath::fma);
  EXPECT_FALSE(conv_math_from_name("tf32").has_value());
  EXPECT_FALSE(conv_math_from_name("").has_value());
  EXPECT_EQ(kernels::math_enumerator(ConvolutionMath::tensor_op_allow_conversion),
            "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION");
}

// fma within default and tensor_op (one level) within tensor_op_allow_conversion.
TEST(ConvMath, EachPermitsItsLevelAndTheStricterOnes) {
  const struct {
    ConvolutionMath math;
    int level;
  } rows[] = {{ConvolutionMath::fma, 0},
              {ConvolutionMath::default_math, 1},
              {ConvolutionMath::tensor_op, 1},
              {ConvolutionMath::tensor_op_allow_conversion, 2}};
  for (const auto& requested : rows) {
    for (const auto& offered : rows) {
      EXPECT_EQ(kernels::math_permits(requested.math, offered.math),
                offered.level <= requested.level)
          << kernels::math_name(requested.math) << " " << kernels::math_name(offered.math);
    }
  }
}

// The mapping documented in docs/cudnn-convolution.md.
TEST(ConvPlan, FollowsPytorchForEachBuiltInPolicy) {
  expect_conv(conv_plan_under("conv2d", "fp32"), DeviceType::f32, DeviceType::f32,
              ConvolutionMath::fma);
  expect_conv(conv_plan_under("conv2d", "tf32"), DeviceType::f32, DeviceType::f32,
              ConvolutionMath::default_math);
  expect_conv(conv_plan_under("conv2d", "amp-fp16"), DeviceType::f16, DeviceType::f32,
              ConvolutionMath::tensor_op);
  expect_conv(conv_plan_under("conv2d", "amp-bf16"), DeviceType::bf16, DeviceType::f32,
              ConvolutionMath::tensor_op);
  expect_conv(conv_plan_under("conv2d", "fp16"), DeviceType::f16, DeviceType::f16,
              ConvolutionMath::tensor_op);
  const Planning fp32 = conv_plan_under("conv2d", "fp32");
  EXPECT_NE(fp32.plan->convolution.rule.find("torch.backends.cudnn.allow_tf32 = False"),
            std::string::npos)
      << fp32.plan->convolution.rule;
  const Planning tf32 = conv_plan_under("conv2d", "tf32");
  EXPECT_NE(tf32.plan->convolution.rule.find("allow_tf32 = True"), std::string::npos);
  const Planning amp = conv_plan_under("conv2d", "amp-bf16");
  EXPECT_NE(amp.plan->convolution.rule.find("aten/src/ATen/native/cudnn/Conv_v8.cpp"),
            std::string::npos)
      << amp.plan->convolution.rule;
  EXPECT_NE(amp.plan->convolution.rule.find("leaves BFloat16 at CUDNN_DEFAULT_MATH"),
            std::string::npos);
  EXPECT_NE(conv_plan_under("conv2d", "fp16").plan->convolution.rule.find("TRUE_HALF_CONFIG"),
            std::string::npos);
}

TEST(ConvPlan, EachOpIsItsPassUnderItsForwardOpsPrecision) {
  const struct {
    const char* op;
    ConvolutionPass pass;
  } rows[] = {{"conv2d", ConvolutionPass::forward},
              {"conv2d_backward_data", ConvolutionPass::backward_data},
              {"conv2d_backward_filter", ConvolutionPass::backward_filter}};
  for (const auto& row : rows) {
    const Planning p = conv_plan_under(row.op, "amp-fp16");
    expect_conv(p, DeviceType::f16, DeviceType::f32, ConvolutionMath::tensor_op);
    EXPECT_EQ(p.plan->convolution.pass, row.pass) << row.op;
    EXPECT_EQ(convolution_pass(ops::find_op(row.op)->op), row.pass);
  }
  EXPECT_FALSE(convolution_pass(ops::Op::gemm).has_value());
  EXPECT_THROW(plan_convolution(*ops::find_op("gemm"), policy::OpPrecision{}, std::nullopt),
               std::invalid_argument);
}

TEST(ConvPlan, Bf16AccumulationHasNoCudnnConfiguration) {
  const Planning p = conv_plan_under("conv2d", "bf16");
  EXPECT_FALSE(p.plan.has_value());
  EXPECT_EQ(p.reason,
            "conv2d (bf16 inputs, bf16 accumulation, bf16 output): cuDNN accumulates 16BF data "
            "in fp32 only (its configurations of convolutions: FLOAT, PSEUDO_HALF, "
            "PSEUDO_BFLOAT16, TRUE_HALF)");
}

TEST(ConvPlan, ConvMathReplacesThePolicysMathTypeOnly) {
  const Planning p = conv_plan_under("conv2d_backward_filter", "amp-fp16", ConvolutionMath::fma);
  expect_conv(p, DeviceType::f16, DeviceType::f32, ConvolutionMath::fma);
  EXPECT_NE(p.plan->convolution.rule.find("CUDNN_FMA_MATH chosen with --conv-math"),
            std::string::npos)
      << p.plan->convolution.rule;
  expect_conv(conv_plan_under("conv2d", "fp32", ConvolutionMath::tensor_op), DeviceType::f32,
              DeviceType::f32, ConvolutionMath::tensor_op);
  // It does not make a configuration cuDNN lacks.
  EXPECT_FALSE(conv_plan_under("conv2d", "bf16", ConvolutionMath::fma).plan.has_value());
}

TEST(ConvPlan, RefusesWhatCudnnDoesNotRun) {
  const ops::OpInfo& conv = *ops::find_op("conv2d");
  policy::OpPrecision fp8;
  fp8.input = formats::e4m3;
  EXPECT_EQ(plan(conv, fp8).reason,
            "conv2d (e4m3 inputs, fp32 accumulation, fp32 output): cuDNN convolutions here take "
            "fp32, tf32, fp16 or bf16 inputs");
  policy::OpPrecision widening;  // fp16 in, fp32 out: cuDNN writes y as x's type
  widening.input = formats::fp16;
  EXPECT_EQ(plan(conv, widening).reason,
            "conv2d (fp16 inputs, fp32 accumulation, fp32 output): cuDNN writes a convolution's "
            "output in the type of its inputs (16F here)");
  policy::OpPrecision saturating;
  saturating.input = formats::fp16;
  saturating.output = formats::fp16;
  saturating.output.overflow = numeric::Overflow::saturate;
  EXPECT_FALSE(plan(conv, saturating).plan.has_value());
  policy::OpPrecision half_sum;  // fp32 data accumulated in fp16
  half_sum.accumulate = formats::fp16;
  EXPECT_NE(plan(conv, half_sum).reason.find("cuDNN accumulates 32F data in fp32 only"),
            std::string::npos)
      << plan(conv, half_sum).reason;
}

// Packed NCHW: the position of (a, b, c, d) in a tensor of dims d.
std::size_t at(const std::array<int, 4>& d, int a, int b, int c, int e) {
  return ((static_cast<std::size_t>(a) * d[1] + b) * d[2] + c) * d[3] + e;
}

// cuDNN's definition of the three passes, reading nothing but the descriptors: the forward pass is
// y[n][k][p][q] = sum over c < C/groups, r, s of x[n][g C/groups + c][p u - pad + r dil][...]
// w[k][c][r][s], g the group of filter k; the data and filter gradients are the other two
// products of the same terms.
std::vector<double> emulate(ConvolutionPass pass, const kernels::ConvolutionShape& s,
                            const std::vector<double>& first, const std::vector<double>& second) {
  EXPECT_EQ(s.x[1], s.w[1] * s.groups);
  EXPECT_EQ(s.y[1], s.w[0]);
  EXPECT_EQ(s.y[0], s.x[0]);
  std::vector<double> out(kernels::element_count(kernels::output_dims(pass, s)), 0.0);
  const int filters_per_group = s.w[0] / s.groups;
  for (int n = 0; n < s.y[0]; ++n) {
    for (int k = 0; k < s.y[1]; ++k) {
      const int group = k / filters_per_group;
      for (int p = 0; p < s.y[2]; ++p) {
        for (int q = 0; q < s.y[3]; ++q) {
          for (int c = 0; c < s.w[1]; ++c) {
            for (int r = 0; r < s.w[2]; ++r) {
              const int h = p * s.stride[0] - s.pad[0] + r * s.dilation[0];
              for (int t = 0; t < s.w[3]; ++t) {
                const int w = q * s.stride[1] - s.pad[1] + t * s.dilation[1];
                if (h < 0 || h >= s.x[2] || w < 0 || w >= s.x[3]) continue;
                const std::size_t xi = at(s.x, n, group * s.w[1] + c, h, w);
                const std::size_t wi = at(s.w, k, c, r, t);
                const std::size_t yi = at(s.y, n, k, p, q);
                switch (pass) {
                  case ConvolutionPass::forward: out[yi] += first[xi] * second[wi]; break;
                  case ConvolutionPass::backward_data: out[xi] += first[yi] * second[wi]; break;
                  case ConvolutionPass::backward_filter: out[wi] += first[xi] * second[yi]; break;
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

TEST(ConvolutionShape, HoldsTheGeometryInCudnnsOrder) {
  const ops::OpInfo& op = *ops::find_op("conv2d");
  const kernels::ConvolutionShape s = convolution_shape(ops::convolution::geometry(
      ops::parse_shape(op, "2x4x7x6:6x3x2,stride=2x1,pad=1x2,dilation=1x2,groups=2")));
  EXPECT_EQ(s.x, (std::array<int, 4>{2, 4, 7, 6}));
  EXPECT_EQ(s.w, (std::array<int, 4>{6, 2, 3, 2}));
  // cudnnGetConvolution2dForwardOutputDim: 1 + (in + 2 pad - ((filter - 1) dilation + 1)) / stride
  EXPECT_EQ(s.y, (std::array<int, 4>{2, 6, 1 + (7 + 2 - 3) / 2, 1 + (6 + 4 - 3) / 1}));
  EXPECT_EQ(s.pad, (std::array<int, 2>{1, 2}));
  EXPECT_EQ(s.stride, (std::array<int, 2>{2, 1}));
  EXPECT_EQ(s.dilation, (std::array<int, 2>{1, 2}));
  EXPECT_EQ(s.groups, 2);
}

// Small integers: every product and sum is exact, so any order gives the same result.
TEST(ConvolutionShape, CudnnsDefinitionOnItsDescriptorsIsTheCatalogsConvolution) {
  const backends::cpu::Arithmetic exact{formats::fp64, formats::fp64, formats::fp64};
  for (const char* text : {"1x3x5x5:2x1x1", "2x2x6x5:4x3x3,stride=2,pad=1",
                           "2x4x7x6:6x3x2,stride=2x1,pad=1x2,dilation=1x2,groups=2",
                           "3x6x5x7:3x2x3,pad=2x1,dilation=2,groups=3"}) {
    for (const char* name : {"conv2d", "conv2d_backward_data", "conv2d_backward_filter"}) {
      const ops::OpInfo& op = *ops::find_op(name);
      const ops::Shape shape = ops::parse_shape(op, text);
      ops::Inputs in;
      int next = 0;
      for (const ops::Operand& operand : ops::operands(op, shape)) {
        std::vector<double> values(ops::element_count(operand.shape));
        for (double& v : values) v = static_cast<double>((next++ * 5) % 11 - 5);
        in.values.push_back(std::move(values));
        in.indices.emplace_back();
      }
      const std::vector<double> want =
          ops::run_cpu(op, shape, exact, backends::cpu::Summation::sequential, in).output;
      const kernels::ConvolutionShape s = convolution_shape(ops::convolution::geometry(shape));
      EXPECT_EQ(emulate(*convolution_pass(op.op), s, in.values[0], in.values[1]), want)
          << name << " " << text;
    }
  }
}

TEST(ConvolutionShape, RefusesWhatCudnnsIntSizesCannotIndex) {
  ops::convolution::Geometry g;
  g.batch = 1u << 16;
  g.channels = 1u << 16;  // x: 2^32 elements
  EXPECT_THROW(convolution_shape(g), std::invalid_argument);
  ops::convolution::Geometry wide;
  wide.width = std::size_t{1} << 31;
  try {
    convolution_shape(wide);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "x 2147483648 exceeds cuDNN's int sizes (at most 2147483647)");
  }
}

TEST(Supported, TheConvolutionsRunOnCuda) {
  EXPECT_NE(supported_ops().find("conv2d, conv2d_backward_data, conv2d_backward_filter"),
            std::string::npos);
}

}  // namespace
}  // namespace ampbench::backends::cuda
