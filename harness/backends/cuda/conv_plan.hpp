// What the CUDA backend runs for a convolution, decided on the host without a GPU or a CUDA header:
// which cuDNN data type, compute type and math type a policy's formats get (after PyTorch's
// cuDNN convolutions), what cuDNN cannot run, and the descriptors of a convolution's geometry.
// Plain C++, built in every configuration; docs/cudnn-convolution.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/backends/cuda/plan.hpp"
#include "harness/ops/convolution.hpp"
#include "kernels/convolution_shape.hpp"

namespace ampbench::backends::cuda {

// The cuDNN call of a catalog op: conv2d, conv2d_backward_data, conv2d_backward_filter; none for
// the other ops.
std::optional<kernels::ConvolutionPass> convolution_pass(ops::Op op);

// --conv-math: "default", "tensor_op", "tensor_op_allow_conversion", "fma" (case-insensitive).
std::optional<kernels::ConvolutionMath> conv_math_from_name(std::string_view name);
std::string conv_math_names();  // "default, tensor_op, tensor_op_allow_conversion, fma"

// The plan of a convolution op under `precision`, `math` replacing the policy's math type when
// given; or why cuDNN cannot run it (plan()'s sentence). The rules:
//   data:    the input format's device type (fp32 and tf32 values: fp32); cuDNN writes the output
//            in the same type, so the output format must be it.
//   compute: fp32 accumulation: CUDNN_DATA_FLOAT (for fp16 and bf16 data too, as PyTorch);
//            fp16 accumulation of fp16 data: CUDNN_DATA_HALF; nothing else.
//   math:    fp32 inputs: fma (no TF32, PyTorch with torch.backends.cudnn.allow_tf32 = False);
//            tf32 inputs: default (TF32 permitted, allow_tf32 = True, PyTorch's default);
//            fp16 and bf16 data: tensor_op.
Planning plan_convolution(const ops::OpInfo& op, const policy::OpPrecision& precision,
                          std::optional<kernels::ConvolutionMath> math);

// The descriptors of a geometry: NCHW x, w (K x C/groups x R x S) and y, padding, stride,
// dilation, groups. std::invalid_argument when a size or a tensor's element count exceeds what
// cuDNN's legacy API indexes (INT_MAX: its sizes are int).
kernels::ConvolutionShape convolution_shape(const ops::convolution::Geometry& g);

}  // namespace ampbench::backends::cuda
