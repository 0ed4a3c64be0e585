#include "harness/backends/cuda/conv_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <stdexcept>

namespace ampbench::backends::cuda {
namespace {

namespace formats = numeric::formats;
using kernels::ConvolutionMath;

// PyTorch's cuDNN convolutions: ConvolutionDescriptor::set in aten/src/ATen/cudnn/Descriptors.h
// (the Conv_v7.cpp path) gives Half the fp32 compute type and CUDNN_TENSOR_OP_MATH, and float
// CUDNN_FMA_MATH unless torch.backends.cudnn.allow_tf32 (default True), which leaves
// CUDNN_DEFAULT_MATH; getConvDescriptor in aten/src/ATen/native/cudnn/Conv_v8.cpp gives Half and
// BFloat16 the fp32 compute type.
constexpr const char* kDescriptors = "aten/src/ATen/cudnn/Descriptors.h";
constexpr const char* kConvV8 = "aten/src/ATen/native/cudnn/Conv_v8.cpp";

struct MathChoice {
  ConvolutionMath math;
  std::string rule;
};

MathChoice default_math(const policy::OpPrecision& p, DeviceType data) {
  if (data == DeviceType::f32 && numeric::same_values(p.input, formats::tf32)) {
    return {ConvolutionMath::default_math,
            fmt::format("tf32 inputs: CUDNN_DEFAULT_MATH, which permits TF32 Tensor Cores on "
                        "sm_80 and later, as PyTorch with torch.backends.cudnn.allow_tf32 = True, "
                        "its default ({})",
                        kDescriptors)};
  }
  if (data == DeviceType::f32) {
    return {ConvolutionMath::fma,
            fmt::format("fp32 inputs: CUDNN_FMA_MATH, which rules TF32 out, as PyTorch with "
                        "torch.backends.cudnn.allow_tf32 = False ({})",
                        kDescriptors)};
  }
  if (data == DeviceType::f16) {
    return {
        ConvolutionMath::tensor_op,
        fmt::format("16F data: CUDNN_TENSOR_OP_MATH, as PyTorch sets for Half ({})", kDescriptors)};
  }
  return {ConvolutionMath::tensor_op,
          fmt::format("16BF data: CUDNN_TENSOR_OP_MATH, as for Half, so that cuDNN's heuristic "
                      "considers Tensor Core algorithms (PyTorch's legacy path leaves BFloat16 at "
                      "CUDNN_DEFAULT_MATH, {}; ampbench permits the same algorithms under both)",
                      kDescriptors)};
}

}  // namespace

std::optional<kernels::ConvolutionPass> convolution_pass(ops::Op op) {
  switch (op) {
    case ops::Op::conv2d: return kernels::ConvolutionPass::forward;
    case ops::Op::conv2d_backward_data: return kernels::ConvolutionPass::backward_data;
    case ops::Op::conv2d_backward_filter: return kernels::ConvolutionPass::backward_filter;
    default: return std::nullopt;
  }
}

std::optional<ConvolutionMath> conv_math_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const ConvolutionMath m : kernels::kConvolutionMaths) {
    if (kernels::math_name(m) == lower) return m;
  }
  return std::nullopt;
}

std::string conv_math_names() {
  std::string s;
  for (const ConvolutionMath m : kernels::kConvolutionMaths)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", kernels::math_name(m));
  return s;
}

Planning plan_convolution(const ops::OpInfo& op, const policy::OpPrecision& p,
                          std::optional<ConvolutionMath> math) {
  const std::optional<kernels::ConvolutionPass> pass = convolution_pass(op.op);
  if (!pass) throw std::invalid_argument(fmt::format("{} is not a convolution", op.name));
  const std::optional<DeviceType> data = holding_type(p.input);
  if (!data) {
    return not_planned(op, p, "cuDNN convolutions here take fp32, tf32, fp16 or bf16 inputs");
  }
  if (output_type(p.output) != data) {
    return not_planned(op, p,
                       fmt::format("cuDNN writes a convolution's output in the type of its "
                                   "inputs ({} here)",
                                   device_type_name(*data)));
  }
  ConvPlan c;
  c.pass = *pass;
  c.data = *data;
  std::string compute_rule;
  if (numeric::same_values(p.accumulate, formats::fp32)) {
    c.compute = DeviceType::f32;
    // Descriptors.h widens Half's compute type only (BFloat16 keeps its own there); Conv_v8.cpp
    // widens both.
    compute_rule = *data == DeviceType::f32 ? "fp32 compute type"
                   : *data == DeviceType::f16
                       ? fmt::format("fp32 compute type for 16F data, as PyTorch ({}; {})",
                                     kDescriptors, kConvV8)
                       : fmt::format("fp32 compute type for 16BF data, as PyTorch ({})", kConvV8);
  } else if (numeric::same_values(p.accumulate, formats::fp16) && *data == DeviceType::f16) {
    c.compute = DeviceType::f16;
    compute_rule =
        "fp16 compute type: cuDNN's TRUE_HALF_CONFIG (fp16 data and accumulation; PyTorch never "
        "chooses it)";
  } else {
    return not_planned(
        op, p,
        fmt::format("cuDNN accumulates {} data in fp32{} only (its configurations "
                    "of convolutions: FLOAT, PSEUDO_HALF, PSEUDO_BFLOAT16, "
                    "TRUE_HALF)",
                    device_type_name(*data), *data == DeviceType::f16 ? " or fp16" : ""));
  }
  if (math) {
    c.math = *math;
    c.rule = fmt::format("{}; {} chosen with --conv-math", compute_rule,
                         kernels::math_enumerator(*math));
  } else {
    MathChoice chosen = default_math(p, *data);
    c.math = chosen.math;
    c.rule = fmt::format("{}; {}", compute_rule, chosen.rule);
  }
  Plan plan;
  plan.kind = Plan::Kind::convolution;
  plan.convolution = std::move(c);
  return {std::move(plan), {}};
}

kernels::ConvolutionShape convolution_shape(const ops::convolution::Geometry& g) {
  const auto to_int = [](std::size_t v, const char* what) {
    if (v > static_cast<std::size_t>(INT_MAX)) {
      throw std::invalid_argument(
          fmt::format("{} {} exceeds cuDNN's int sizes (at most {})", what, v, INT_MAX));
    }
    return static_cast<int>(v);
  };
  const auto tensor = [&](std::size_t a, std::size_t b, std::size_t c, std::size_t d,
                          const char* name) {
    const std::array<int, 4> dims = {to_int(a, name), to_int(b, name), to_int(c, name),
                                     to_int(d, name)};
    // cuDNN's legacy API indexes a tensor with 32-bit integers (PyTorch splits larger batches).
    std::uint64_t elements = 1;
    for (const int v : dims) {
      elements *= static_cast<std::uint64_t>(v);
      if (elements > static_cast<std::uint64_t>(INT_MAX)) {
        throw std::invalid_argument(fmt::format(
            "{} ({}x{}x{}x{}) has more elements than cuDNN's 32-bit indexing allows ({})", name, a,
            b, c, d, INT_MAX));
      }
    }
    return dims;
  };
  kernels::ConvolutionShape s;
  s.x = tensor(g.batch, g.channels, g.height, g.width, "x");
  s.w = tensor(g.filters, g.group_channels(), g.kernel_h, g.kernel_w, "w");
  s.y = tensor(g.batch, g.filters, g.out_h(), g.out_w(), "y");
  s.pad = {to_int(g.pad_h, "padding"), to_int(g.pad_w, "padding")};
  s.stride = {to_int(g.stride_h, "stride"), to_int(g.stride_w, "stride")};
  s.dilation = {to_int(g.dilation_h, "dilation"), to_int(g.dilation_w, "dilation")};
  s.groups = to_int(g.groups, "groups");
  return s;
}

}  // namespace ampbench::backends::cuda
