// A 2-D convolution as cuDNN's legacy API describes it, as plain data: no CUDA header, so that the
// CUDA backend's plan (harness/backends/cuda/conv_plan.hpp), built in every configuration, fills it
// in and the CPU tests check it; kernels/cudnn_convolution.hpp runs it.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace ampbench::kernels {

// Which cuDNN call: cudnnConvolutionForward (y from x and w), cudnnConvolutionBackwardData (dx
// from w and dy), cudnnConvolutionBackwardFilter (dw from x and dy).
enum class ConvolutionPass { forward, backward_data, backward_filter };

// cudnnMathType_t, which the user controls. The cuDNN documentation of cudnnMathType_t: default
// permits Tensor Cores where the data type asks for them, and TF32 Tensor Cores for fp32 data on
// sm_80 and later; tensor_op permits Tensor Cores without converting the data type; tensor_op_
// allow_conversion also lets cuDNN convert fp32 data down to use them; fma restricts cuDNN to
// kernels built from FMA instructions (no Tensor Cores, so no TF32).
enum class ConvolutionMath { default_math, tensor_op, tensor_op_allow_conversion, fma };
inline constexpr ConvolutionMath kConvolutionMaths[] = {
    ConvolutionMath::default_math, ConvolutionMath::tensor_op,
    ConvolutionMath::tensor_op_allow_conversion, ConvolutionMath::fma};

// The name --conv-math takes: "default", "tensor_op", "tensor_op_allow_conversion", "fma".
constexpr std::string_view math_name(ConvolutionMath math) {
  switch (math) {
    case ConvolutionMath::default_math: return "default";
    case ConvolutionMath::tensor_op: return "tensor_op";
    case ConvolutionMath::tensor_op_allow_conversion: return "tensor_op_allow_conversion";
    case ConvolutionMath::fma: return "fma";
  }
  return "?";
}

// The enumerator: "CUDNN_DEFAULT_MATH", ..., for the records.
constexpr std::string_view math_enumerator(ConvolutionMath math) {
  switch (math) {
    case ConvolutionMath::default_math: return "CUDNN_DEFAULT_MATH";
    case ConvolutionMath::tensor_op: return "CUDNN_TENSOR_OP_MATH";
    case ConvolutionMath::tensor_op_allow_conversion:
      return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
    case ConvolutionMath::fma: return "CUDNN_FMA_MATH";
  }
  return "?";
}

// Whether cuDNN may run a kernel of math type `offered` when `requested` is what the user allows.
// Three levels: fma (FMA kernels only); default and tensor_op (Tensor Cores, TF32 for fp32 data
// included: cuDNN documents TF32 as permitted under default, and its heuristic may pair either
// request with the other; PyTorch's Conv_v7.cpp runs whichever pair it returns); and
// tensor_op_allow_conversion (which adds down-converting fp32 data).
constexpr bool math_permits(ConvolutionMath requested, ConvolutionMath offered) {
  const auto level = [](ConvolutionMath m) {
    switch (m) {
      case ConvolutionMath::fma: return 0;
      case ConvolutionMath::default_math:
      case ConvolutionMath::tensor_op: return 1;
      case ConvolutionMath::tensor_op_allow_conversion: return 2;
    }
    return 2;
  };
  return level(offered) <= level(requested);
}

// The tensors in NCHW order, each packed (cudnnSetTensor4dDescriptor with CUDNN_TENSOR_NCHW), and
// the convolution (cudnnSetConvolution2dDescriptor, cross-correlation, and the group count). int,
// as cuDNN takes every size.
struct ConvolutionShape {
  std::array<int, 4> x{};  // N, C, H, W
  std::array<int, 4> w{};  // K, C / groups, R, S (cudnnSetFilter4dDescriptor, NCHW)
  std::array<int, 4> y{};  // N, K, OH, OW
  std::array<int, 2> pad{};
  std::array<int, 2> stride{};
  std::array<int, 2> dilation{};
  int groups = 1;
};

// The tensor a pass writes: y (forward), dx (backward data, x's dims) or dw (backward filter, w's).
constexpr const std::array<int, 4>& output_dims(ConvolutionPass pass, const ConvolutionShape& s) {
  switch (pass) {
    case ConvolutionPass::forward: return s.y;
    case ConvolutionPass::backward_data: return s.x;
    case ConvolutionPass::backward_filter: return s.w;
  }
  return s.y;
}

constexpr std::size_t element_count(const std::array<int, 4>& dims) {
  return static_cast<std::size_t>(dims[0]) * static_cast<std::size_t>(dims[1]) *
         static_cast<std::size_t>(dims[2]) * static_cast<std::size_t>(dims[3]);
}

}  // namespace ampbench::kernels
