// 2-D convolution (NCHW; cross-correlation, as cuDNN and PyTorch compute it) and its two gradients,
// each as the matrix products it is. Every output of a convolution, of its data gradient and of its
// filter gradient is a dot product; lowered per group into a gemm (im2col), the catalog runs,
// references and bounds them with the gemm machinery, and a Tensor Core model applies as it does to
// cuDNN's implicit-GEMM kernels. Taps that fall into the padding (or, for the data gradient,
// between the strides) contribute exact zero products: they change neither the value nor the
// events.
//
// The order of each sum is the lowering's K order: (channel, kernel row, kernel column) for the
// forward pass and the filter gradient's columns, (filter, kernel row, kernel column) for the data
// gradient, (image, output row, output column) for the filter gradient. cuDNN's order depends on
// the algorithm it picks; the sum order only matters to the sequential emulation, not to the
// reference or the bound.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "harness/ops/catalog.hpp"
#include "harness/ops/gemm_part.hpp"

namespace ampbench::ops::convolution {

struct Geometry {
  std::size_t batch = 1, channels = 1, height = 1, width = 1;  // x: N x C x H x W
  std::size_t filters = 1, kernel_h = 1, kernel_w = 1;         // w: O x C/groups x R x S
  std::size_t stride_h = 1, stride_w = 1;
  std::size_t pad_h = 0, pad_w = 0;
  std::size_t dilation_h = 1, dilation_w = 1;
  std::size_t groups = 1;

  std::size_t out_h() const;
  std::size_t out_w() const;
  std::size_t group_channels() const { return channels / groups; }
  std::size_t group_filters() const { return filters / groups; }
};

// A convolution's Shape holds its 7 sizes N C H W O R S and then stride (h, w), padding (h, w),
// dilation (h, w) and groups: 14 sizes.
inline constexpr std::size_t kShapeSizes = 14;
Geometry geometry(const Shape& shape);
Shape to_shape(const Geometry& g);

// Parses "NxCxHxWxOxRxS[,stride=A][,pad=A][,dilation=A][,groups=G]", each A one size or HxW; throws
// OpError naming the op, the text and the part that is wrong (a size that is not positive, an
// unknown option, channels or filters not divisible by the groups, a kernel larger than the padded
// image).
Shape parse(std::string_view op_name, std::string_view text);
// The same text back, options only where they differ from the defaults.
std::string to_string(const Shape& shape);

enum class Pass { forward, backward_data, backward_filter };

// The operands and the output of a pass: forward x, w -> y; data gradient dy, w -> dx; filter
// gradient x, dy -> dw.
std::vector<Operand> operands(Pass pass, const Geometry& g);
std::vector<std::size_t> output_shape(Pass pass, const Geometry& g);

// One gemm per group.
std::vector<GemmPart> lower(Pass pass, const Geometry& g, const Inputs& in);
// The elements the lowered operands of a pass hold in all (for the audit's memory limit).
std::size_t lowered_elements(Pass pass, const Geometry& g);

}  // namespace ampbench::ops::convolution
