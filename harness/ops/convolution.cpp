#include "harness/ops/convolution.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <utility>

#include "harness/ops/definition.hpp"

namespace ampbench::ops::convolution {
namespace {

std::optional<std::size_t> parse_size(std::string_view text) {
  std::size_t size = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return size;
}

// "A" or "HxW".
std::optional<std::pair<std::size_t, std::size_t>> parse_pair(std::string_view text) {
  const auto x = text.find('x');
  if (x == std::string_view::npos) {
    const auto v = parse_size(text);
    if (!v) return std::nullopt;
    return std::pair{*v, *v};
  }
  const auto h = parse_size(text.substr(0, x));
  const auto w = parse_size(text.substr(x + 1));
  if (!h || !w) return std::nullopt;
  return std::pair{*h, *w};
}

std::string pair_text(std::size_t h, std::size_t w) {
  return h == w ? fmt::format("{}", h) : fmt::format("{}x{}", h, w);
}

}  // namespace

std::size_t Geometry::out_h() const {
  const std::size_t span = dilation_h * (kernel_h - 1) + 1;
  return height + 2 * pad_h < span ? 0 : (height + 2 * pad_h - span) / stride_h + 1;
}

std::size_t Geometry::out_w() const {
  const std::size_t span = dilation_w * (kernel_w - 1) + 1;
  return width + 2 * pad_w < span ? 0 : (width + 2 * pad_w - span) / stride_w + 1;
}

Geometry geometry(const Shape& shape) {
  const auto& s = shape.sizes;
  if (s.size() != kShapeSizes) throw OpError("not a convolution shape");
  Geometry g;
  g.batch = s[0];
  g.channels = s[1];
  g.height = s[2];
  g.width = s[3];
  g.filters = s[4];
  g.kernel_h = s[5];
  g.kernel_w = s[6];
  g.stride_h = s[7];
  g.stride_w = s[8];
  g.pad_h = s[9];
  g.pad_w = s[10];
  g.dilation_h = s[11];
  g.dilation_w = s[12];
  g.groups = s[13];
  return g;
}

Shape to_shape(const Geometry& g) {
  return Shape{{g.batch, g.channels, g.height, g.width, g.filters, g.kernel_h, g.kernel_w,
                g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w, g.groups}};
}

Shape parse(std::string_view op_name, std::string_view text) {
  const auto fail = [&](const std::string& what) {
    return OpError(
        fmt::format("{} shape '{}': {} (expected "
                    "NxCxHxW:KxRxS[,stride=A][,pad=A][,dilation=A][,groups=G], A one "
                    "size or HxW)",
                    op_name, text, what));
  };
  const auto comma = text.find(',');
  const std::string_view dims = text.substr(0, comma);
  const auto colon = dims.find(':');
  if (colon == std::string_view::npos) throw fail("no ':' between the image and the filters");
  // "NxCxHxW" then "KxRxS": the image's 4 sizes, the filters' 3.
  std::vector<std::size_t> sizes;
  for (const auto& [part_text, count] : {std::pair{dims.substr(0, colon), std::size_t{4}},
                                         std::pair{dims.substr(colon + 1), std::size_t{3}}}) {
    std::string_view rest = part_text;
    std::size_t parsed = 0;
    while (true) {
      const auto x = rest.find('x');
      const std::string_view part = rest.substr(0, x);
      const auto size = parse_size(part);
      if (!size || *size == 0) throw fail(fmt::format("'{}' is not a positive size", part));
      sizes.push_back(*size);
      ++parsed;
      if (x == std::string_view::npos) break;
      rest = rest.substr(x + 1);
    }
    if (parsed != count) {
      throw fail(fmt::format("'{}' has {} sizes where {} are needed", part_text, parsed, count));
    }
  }
  sizes.insert(sizes.end(), {1, 1, 0, 0, 1, 1, 1});  // the options' defaults
  Geometry g = geometry(Shape{sizes});
  std::string_view options = comma == std::string_view::npos ? "" : text.substr(comma + 1);
  while (comma != std::string_view::npos) {
    const auto next = options.find(',');
    const std::string_view option = options.substr(0, next);
    const auto equals = option.find('=');
    const std::string_view key = option.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : option.substr(equals + 1);
    if (key == "groups") {
      const auto groups = parse_size(value);
      if (!groups || *groups == 0) throw fail(fmt::format("groups '{}' is not positive", value));
      g.groups = *groups;
    } else if (key == "stride" || key == "pad" || key == "dilation") {
      const auto pair = parse_pair(value);
      if (!pair || (key != "pad" && (pair->first == 0 || pair->second == 0))) {
        throw fail(fmt::format("{} '{}' is not {} size or HxW", key, value,
                               key == "pad" ? "a" : "a positive"));
      }
      std::size_t& h = key == "stride" ? g.stride_h : key == "pad" ? g.pad_h : g.dilation_h;
      std::size_t& w = key == "stride" ? g.stride_w : key == "pad" ? g.pad_w : g.dilation_w;
      h = pair->first;
      w = pair->second;
    } else {
      throw fail(fmt::format("unknown option '{}'", option));
    }
    if (next == std::string_view::npos) break;
    options = options.substr(next + 1);
  }
  if (g.channels % g.groups != 0 || g.filters % g.groups != 0) {
    throw fail(fmt::format("{} channels and {} filters are not both divisible by {} groups",
                           g.channels, g.filters, g.groups));
  }
  if (g.out_h() == 0 || g.out_w() == 0) {
    throw fail(
        fmt::format("the {}x{} kernel (dilation {}) does not fit the {}x{} image padded by {}",
                    g.kernel_h, g.kernel_w, pair_text(g.dilation_h, g.dilation_w), g.height,
                    g.width, pair_text(g.pad_h, g.pad_w)));
  }
  return to_shape(g);
}

std::string to_string(const Shape& shape) {
  const Geometry g = geometry(shape);
  std::string text = fmt::format("{}x{}x{}x{}:{}x{}x{}", g.batch, g.channels, g.height, g.width,
                                 g.filters, g.kernel_h, g.kernel_w);
  if (g.stride_h != 1 || g.stride_w != 1) text += ",stride=" + pair_text(g.stride_h, g.stride_w);
  if (g.pad_h != 0 || g.pad_w != 0) text += ",pad=" + pair_text(g.pad_h, g.pad_w);
  if (g.dilation_h != 1 || g.dilation_w != 1) {
    text += ",dilation=" + pair_text(g.dilation_h, g.dilation_w);
  }
  if (g.groups != 1) text += fmt::format(",groups={}", g.groups);
  return text;
}

std::vector<Operand> operands(Pass pass, const Geometry& g) {
  const Operand x{"x", {g.batch, g.channels, g.height, g.width}};
  const Operand w{"w", {g.filters, g.group_channels(), g.kernel_h, g.kernel_w}};
  const Operand dy{"dy", {g.batch, g.filters, g.out_h(), g.out_w()}};
  switch (pass) {
    case Pass::forward: return {x, w};
    case Pass::backward_data: return {dy, w};
    case Pass::backward_filter: return {x, dy};
  }
  return {};
}

std::vector<std::size_t> output_shape(Pass pass, const Geometry& g) {
  switch (pass) {
    case Pass::forward: return {g.batch, g.filters, g.out_h(), g.out_w()};
    case Pass::backward_data: return {g.batch, g.channels, g.height, g.width};
    case Pass::backward_filter: return {g.filters, g.group_channels(), g.kernel_h, g.kernel_w};
  }
  return {};
}

std::size_t lowered_elements(Pass pass, const Geometry& g) {
  const std::size_t taps = g.kernel_h * g.kernel_w;
  const std::size_t image = g.batch * g.out_h() * g.out_w();
  const std::size_t columns = g.group_channels() * taps;  // im2col's row length, per group
  switch (pass) {
    case Pass::forward:
    case Pass::backward_filter: return g.groups * image * columns;
    case Pass::backward_data:
      return g.groups * g.batch * g.height * g.width * g.group_filters() * taps;
  }
  return 0;
}

std::vector<GemmPart> lower(Pass pass, const Geometry& g, const Inputs& in) {
  std::vector<GemmPart> parts;
  for (auto& l : lower<double>(pass, g, in.values.at(0), in.values.at(1))) {
    GemmPart part;
    part.shape = std::move(l.shape);
    part.inputs.values = {std::move(l.a), std::move(l.b)};
    part.inputs.indices = {{}, {}};
    part.place = std::move(l.place);
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace ampbench::ops::convolution

// ---- the convolution family: conv2d and its two gradients, each a set of lowered gemms
// -----------

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace convolution_family {

convolution::Pass pass_of(const OpInfo& op) {
  return op.op == Op::conv2d                 ? convolution::Pass::forward
         : op.op == Op::conv2d_backward_data ? convolution::Pass::backward_data
                                             : convolution::Pass::backward_filter;
}

std::vector<Operand> conv_operands(const OpInfo& op, const Shape& shape) {
  return convolution::operands(pass_of(op), convolution::geometry(shape));
}

std::vector<std::size_t> conv_output(const OpInfo& op, const Shape& shape) {
  return convolution::output_shape(pass_of(op), convolution::geometry(shape));
}

// Stride 1, no padding, no dilation (the operands cannot tell them); groups from the channels of
// x and w.
Shape conv_shape(const OpInfo& op, const std::vector<std::vector<std::size_t>>& shapes) {
  if (shapes.size() != 2 || shapes[0].size() != 4 || shapes[1].size() != 4) return {};
  const auto& first = shapes[0];
  const auto& second = shapes[1];
  convolution::Geometry g;
  if (op.op == Op::conv2d || op.op == Op::conv2d_backward_filter) {
    g.batch = first[0];
    g.channels = first[1];
    g.height = first[2];
    g.width = first[3];
  }
  if (op.op == Op::conv2d) {  // x N C H W, w O C/g R S
    g.filters = second[0];
    g.kernel_h = second[2];
    g.kernel_w = second[3];
    g.groups = second[1] > 0 && g.channels % second[1] == 0 ? g.channels / second[1] : 1;
  } else if (op.op == Op::conv2d_backward_data) {  // dy N O OH OW, w O C/g R S
    g.batch = first[0];
    g.filters = first[1];
    g.kernel_h = second[2];
    g.kernel_w = second[3];
    g.channels = second[1];
    g.height = first[2] + g.kernel_h - 1;
    g.width = first[3] + g.kernel_w - 1;
  } else {  // x N C H W, dy N O OH OW
    g.filters = second[1];
    g.kernel_h = g.height >= second[2] ? g.height - second[2] + 1 : 0;
    g.kernel_w = g.width >= second[3] ? g.width - second[3] + 1 : 0;
  }
  if (g.kernel_h == 0 || g.kernel_w == 0 || g.filters % g.groups != 0) return {};
  return convolution::to_shape(g);
}

Shape conv_parse(const OpInfo& op, std::string_view text) {
  return convolution::parse(op.name, text);
}

// The lowered (im2col) operand must fit the audit's limit too.
void check_lowered(const OpInfo& op, const Shape& shape, std::string_view text) {
  checked_product({convolution::lowered_elements(pass_of(op), convolution::geometry(shape))},
                  fmt::format("{} shape '{}': the lowered (im2col) operand", op.name, text));
}

std::vector<GemmPart> conv_parts(const OpInfo& op, const Shape& shape, const Inputs& in) {
  return convolution::lower(pass_of(op), convolution::geometry(shape), in);
}

constexpr std::string_view kConvSyntax = "NxCxHxW:KxRxS";
constexpr std::string_view kConvShape = "4x32x16x16:32x3x3,pad=1";
constexpr std::string_view kSummationBound = "recursive summation (gamma)";

// Each pass a set of lowered gemms.
constexpr Definition pass(OpInfo info) {
  return {.info = info,
          .operands = conv_operands,
          .output_shape = conv_output,
          .shape_of = conv_shape,
          .reference_kind = "exact",
          .gemm_parts = conv_parts,
          .tensor_core = true,
          .parse = conv_parse,
          .check = check_lowered};
}

constexpr Definition kConvolution[] = {
    pass({Op::conv2d, "conv2d", "convolution", kConvSyntax, kConvShape,
          "y = x * w (cross-correlation, NCHW), x N x C x H x W, w K x C/groups x R x S; options "
          ",stride= ,pad= ,dilation= (A or HxW) ,groups=",
          kSummationBound}),
    pass({Op::conv2d_backward_data, "conv2d_backward_data", "convolution", kConvSyntax, kConvShape,
          "dx from dy (N x K x OH x OW) and w, for the forward conv2d", kSummationBound, "conv2d"}),
    pass({Op::conv2d_backward_filter, "conv2d_backward_filter", "convolution", kConvSyntax,
          kConvShape, "dw from x and dy (N x K x OH x OW), for the forward conv2d", kSummationBound,
          "conv2d"}),
};

}  // namespace convolution_family
}  // namespace

std::span<const Definition> convolution_ops() {
  return convolution_family::kConvolution;
}

}  // namespace ampbench::ops
