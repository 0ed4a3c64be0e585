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
#include <optional>
#include <span>
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

// A convolution's Shape holds its 7 sizes N C H W K R S and then stride (h, w), padding (h, w),
// dilation (h, w) and groups: 14 sizes.
inline constexpr std::size_t kShapeSizes = 14;
Geometry geometry(const Shape& shape);
Shape to_shape(const Geometry& g);

// Parses "NxCxHxW:KxRxS[,stride=A][,pad=A][,dilation=A][,groups=G]" (K filters), each A one size or
// HxW; throws OpError naming the op, the text and the part that is wrong (a size that is not
// positive, an unknown option, channels or filters not divisible by the groups, a kernel larger
// than the padded image).
Shape parse(std::string_view op_name, std::string_view text);
// The same text back, options only where they differ from the defaults.
std::string to_string(const Shape& shape);

enum class Pass { forward, backward_data, backward_filter };

// The operands and the output of a pass: forward x, w -> y; data gradient dy, w -> dx; filter
// gradient x, dy -> dw.
std::vector<Operand> operands(Pass pass, const Geometry& g);
std::vector<std::size_t> output_shape(Pass pass, const Geometry& g);

// One gemm per group: its shape MxNxK, its operands, and where each of its outputs goes. A template
// over the scalar type, so that the training reference lowers multiprecision tensors the same way.
template <class T>
struct Lowered {
  Shape shape;
  std::vector<T> a, b;
  std::vector<std::size_t> place;
};

namespace detail {
// The input position a tap reads: out * stride - pad + tap * dilation, or nothing in the padding.
inline std::optional<std::size_t> tap(std::size_t out, std::size_t k, std::size_t stride,
                                      std::size_t pad, std::size_t dilation, std::size_t size) {
  const std::size_t shifted = out * stride + k * dilation;
  if (shifted < pad || shifted - pad >= size) return std::nullopt;
  return shifted - pad;
}

}  // namespace detail

// The pass's two operands in operands() order.
template <class T>
std::vector<Lowered<T>> lower(Pass pass, const Geometry& g, std::span<const T> first,
                              std::span<const T> second) {
  const std::size_t oh = g.out_h(), ow = g.out_w();
  const std::size_t cg = g.group_channels(), og = g.group_filters();
  const std::size_t taps = g.kernel_h * g.kernel_w;
  const auto x_at = [&](std::span<const T> x, std::size_t n, std::size_t c, std::size_t h,
                        std::size_t w) {
    return x[((n * g.channels + c) * g.height + h) * g.width + w];
  };
  const auto dy_at = [&](std::span<const T> dy, std::size_t n, std::size_t o, std::size_t h,
                         std::size_t w) { return dy[((n * g.filters + o) * oh + h) * ow + w]; };
  const auto w_at = [&](std::span<const T> w, std::size_t o, std::size_t c, std::size_t r,
                        std::size_t s) {
    return w[((o * cg + c) * g.kernel_h + r) * g.kernel_w + s];
  };
  // im2col of group `group` of x: rows (n, oh, ow), columns (c, r, s).
  const auto im2col = [&](std::size_t group) {
    const std::span<const T> x = first;
    std::vector<T> a(g.batch * oh * ow * cg * taps, T(0));
    std::size_t row = 0;
    for (std::size_t n = 0; n < g.batch; ++n) {
      for (std::size_t i = 0; i < oh; ++i) {
        for (std::size_t j = 0; j < ow; ++j, ++row) {
          T* out = &a[row * cg * taps];
          for (std::size_t c = 0; c < cg; ++c) {
            for (std::size_t r = 0; r < g.kernel_h; ++r) {
              const auto h = detail::tap(i, r, g.stride_h, g.pad_h, g.dilation_h, g.height);
              for (std::size_t s = 0; s < g.kernel_w; ++s, ++out) {
                const auto w = detail::tap(j, s, g.stride_w, g.pad_w, g.dilation_w, g.width);
                if (h && w) *out = x_at(x, n, group * cg + c, *h, *w);
              }
            }
          }
        }
      }
    }
    return a;
  };

  std::vector<Lowered<T>> products(g.groups);
  for (std::size_t group = 0; group < g.groups; ++group) {
    Lowered<T>& p = products[group];
    std::vector<T> a, b;
    if (pass == Pass::forward) {
      // y[n, o, i, j] = sum over (c, r, s) of x[n, c, i stride + r dilation - pad, ...] w[o, c, r,
      // s]
      const std::size_t m = g.batch * oh * ow, k = cg * taps;
      p.shape = Shape{{m, og, k}};
      a = im2col(group);
      b.resize(k * og);
      for (std::size_t o = 0; o < og; ++o) {
        for (std::size_t l = 0; l < k; ++l) b[l * og + o] = second[(group * og + o) * k + l];
      }
      p.place.resize(m * og);
      for (std::size_t row = 0; row < m; ++row) {
        const std::size_t n = row / (oh * ow), pixel = row % (oh * ow);
        for (std::size_t o = 0; o < og; ++o) {
          p.place[row * og + o] = (n * g.filters + group * og + o) * oh * ow + pixel;
        }
      }
    } else if (pass == Pass::backward_data) {
      // dx[n, c, h, w] = sum over (o, r, s) with h = i stride + r dilation - pad (and w alike) of
      // dy[n, o, i, j] w[o, c, r, s]; taps with no such (i, j) read 0.
      const std::size_t m = g.batch * g.height * g.width, k = og * taps;
      p.shape = Shape{{m, cg, k}};
      a.assign(m * k, T(0));
      for (std::size_t n = 0; n < g.batch; ++n) {
        for (std::size_t h = 0; h < g.height; ++h) {
          for (std::size_t w = 0; w < g.width; ++w) {
            T* out = &a[((n * g.height + h) * g.width + w) * k];
            for (std::size_t o = 0; o < og; ++o) {
              for (std::size_t r = 0; r < g.kernel_h; ++r) {
                const std::size_t top = h + g.pad_h;
                const bool row_ok = top >= r * g.dilation_h &&
                                    (top - r * g.dilation_h) % g.stride_h == 0 &&
                                    (top - r * g.dilation_h) / g.stride_h < oh;
                for (std::size_t s = 0; s < g.kernel_w; ++s, ++out) {
                  const std::size_t left = w + g.pad_w;
                  const bool column_ok = left >= s * g.dilation_w &&
                                         (left - s * g.dilation_w) % g.stride_w == 0 &&
                                         (left - s * g.dilation_w) / g.stride_w < ow;
                  if (row_ok && column_ok) {
                    *out = dy_at(first, n, group * og + o, (top - r * g.dilation_h) / g.stride_h,
                                 (left - s * g.dilation_w) / g.stride_w);
                  }
                }
              }
            }
          }
        }
      }
      b.resize(k * cg);
      for (std::size_t o = 0; o < og; ++o) {
        for (std::size_t c = 0; c < cg; ++c) {
          for (std::size_t t = 0; t < taps; ++t) {
            b[(o * taps + t) * cg + c] =
                w_at(second, group * og + o, c, t / g.kernel_w, t % g.kernel_w);
          }
        }
      }
      p.place.resize(m * cg);
      for (std::size_t row = 0; row < m; ++row) {
        const std::size_t n = row / (g.height * g.width), pixel = row % (g.height * g.width);
        for (std::size_t c = 0; c < cg; ++c) {
          p.place[row * cg + c] = (n * g.channels + group * cg + c) * g.height * g.width + pixel;
        }
      }
    } else {
      // dw[o, c, r, s] = sum over (n, i, j) of dy[n, o, i, j] x[n, c, i stride + r dilation - pad,
      // ...]: dy of the group (og x N OH OW) times im2col (N OH OW x cg R S).
      const std::size_t k = g.batch * oh * ow, columns = cg * taps;
      p.shape = Shape{{og, columns, k}};
      a.resize(og * k);
      for (std::size_t o = 0; o < og; ++o) {
        for (std::size_t n = 0; n < g.batch; ++n) {
          for (std::size_t i = 0; i < oh * ow; ++i) {
            a[o * k + n * oh * ow + i] = dy_at(second, n, group * og + o, i / ow, i % ow);
          }
        }
      }
      b = im2col(group);
      p.place.resize(og * columns);
      for (std::size_t o = 0; o < og; ++o) {
        for (std::size_t l = 0; l < columns; ++l) {
          p.place[o * columns + l] = (group * og + o) * columns + l;
        }
      }
    }
    p.a = std::move(a);
    p.b = std::move(b);
  }
  return products;
}

// The same for the catalog's binary64 operands, as GemmParts.
std::vector<GemmPart> lower(Pass pass, const Geometry& g, const Inputs& in);
// The elements the lowered operands of a pass hold in all (for the audit's memory limit).
std::size_t lowered_elements(Pass pass, const Geometry& g);

}  // namespace ampbench::ops::convolution
