// The matmul family: gemm, bmm, dot, linear and the gradients of gemm and linear. gemm and dot are
// run, referenced and bounded here; the others are gemms on rearranged operands (as_gemm) or sets
// of gemms (bmm's batches), which catalog.cpp runs as gemm.
#include <fmt/format.h>

#include <algorithm>

#include "harness/ops/definition.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace matmul_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;
using Sizes = std::vector<std::vector<std::size_t>>;

// Two matrix operands: shapes[0] and shapes[1], when both have two sizes.
bool two_matrices(const Sizes& shapes) {
  return shapes.size() >= 2 && shapes[0].size() == 2 && shapes[1].size() == 2;
}

// ---- gemm: A B (+ C) ----------------------------------------------------------------------------

std::vector<Operand> gemm_operands(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"a", {s[0], s[2]}},
          {"b", {s[2], s[1]}},
          {"c", {s[0], s[1]}, false, 0, true, Role::data, HeldIn::accumulation}};
}

Shape gemm_shape(const OpInfo&, const Sizes& shapes) {  // a M x K, b K x N
  if (!two_matrices(shapes)) return {};
  return Shape{{shapes[0][0], shapes[1][1], shapes[0][1]}};
}

CpuRun gemm_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                Summation summation, const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::gemm(arithmetic, summation, s[0], s[1], s[2], values(in, 0),
                                   values(in, 1), optional_values(in, 2), {}, run.events);
  return run;
}

// Each row of A against the columns that row's positions need.
CpuRun gemm_run_at(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                   Summation summation, const Inputs& in, std::span<const std::size_t> positions) {
  const std::size_t k = shape.sizes[2];
  const std::size_t n = shape.sizes[1];
  const auto c_in = optional_values(in, 2);
  CpuRun run;
  run.output.reserve(positions.size());
  std::size_t e = 0;
  while (e < positions.size()) {
    const std::size_t row = positions[e] / n;
    std::size_t end = e;
    while (end < positions.size() && positions[end] / n == row) ++end;
    const std::size_t columns = end - e;
    std::vector<double> b(k * columns), c_sub;
    for (std::size_t c = 0; c < columns; ++c) {
      const std::size_t j = positions[e + c] % n;
      for (std::size_t l = 0; l < k; ++l) b[l * columns + c] = values(in, 1)[l * n + j];
      if (!c_in.empty()) c_sub.push_back(c_in[row * n + j]);
    }
    const auto a_row = std::span<const double>(values(in, 0)).subspan(row * k, k);
    const auto c_row =
        backends::cpu::gemm(arithmetic, summation, 1, columns, k, a_row, b, c_sub, {}, run.events);
    run.output.insert(run.output.end(), c_row.begin(), c_row.end());
    e = end;
  }
  return run;
}

CpuRun gemm_mma(const OpInfo&, const Shape& shape, const numeric::MmaModel& model,
                const numeric::Format& output, numeric::Rounding mode, const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::gemm_mma(model, output, mode, s[0], s[1], s[2], values(in, 0),
                                       values(in, 1), optional_values(in, 2), run.events);
  return run;
}

Reference gemm_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                         const numeric::Format& output, numeric::Rounding mode, Reference result,
                         std::uint64_t seed) {
  const auto& s = shape.sizes;
  numeric::RoundingOptions options;
  options.format = output;
  options.mode = mode;
  options.seed = seed;
  const reference::GemmOperands operands{s[0],          s[1],          s[2],
                                         values(in, 0), values(in, 1), optional_values(in, 2)};
  auto g = reference::exact_gemm(numeric::formats::fp64, operands, options, result.positions);
  result.rounded = std::move(g.rounded);
  result.nearest = std::move(g.nearest);
  return result;
}

std::vector<double> gemm_bounds(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                                Summation summation, const Inputs& in,
                                std::span<const std::size_t> positions) {
  const std::size_t n = shape.sizes[1];
  const std::size_t k = shape.sizes[2];
  const auto c_in = optional_values(in, 2);
  return summation_bounds(
      arithmetic, summation, {.k = k, .products = true, .with_c = !c_in.empty()}, positions,
      [&](std::size_t position) {
        const std::size_t row = position / n;
        const std::size_t column = position % n;
        double total = 0;
        for (std::size_t l = 0; l < k; ++l) {
          total += std::fabs(values(in, 0)[row * k + l] * values(in, 1)[l * n + column]);
        }
        if (!c_in.empty()) total += std::fabs(c_in[position]);
        return total;
      });
}

// ---- dot: a . b ---------------------------------------------------------------------------------

std::vector<Operand> dot_operands(const OpInfo&, const Shape& shape) {
  return {{"a", {shape.sizes[0]}}, {"b", {shape.sizes[0]}}};
}

std::vector<std::size_t> one_output(const OpInfo&, const Shape&) {
  return {1};
}

CpuRun dot_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic, Summation summation,
               const Inputs& in) {
  CpuRun run;
  run.output = backends::cpu::gemm(arithmetic, summation, 1, 1, shape.sizes[0], values(in, 0),
                                   values(in, 1), {}, {}, run.events);
  return run;
}

CpuRun dot_mma(const OpInfo&, const Shape& shape, const numeric::MmaModel& model,
               const numeric::Format& output, numeric::Rounding mode, const Inputs& in) {
  CpuRun run;
  run.output = backends::cpu::gemm_mma(model, output, mode, 1, 1, shape.sizes[0], values(in, 0),
                                       values(in, 1), {}, run.events);
  return run;
}

Reference dot_reference(const OpInfo&, const Shape&, const Inputs& in,
                        const numeric::Format& output, numeric::Rounding mode, Reference result,
                        std::uint64_t seed) {
  const reference::ExactValue v =
      reference::exact_dot(numeric::formats::fp64, values(in, 0), values(in, 1));
  result.rounded[0] = v.round(output, mode, draw(mode, seed, 0)).value;
  result.nearest[0] = v.to_double();
  return result;
}

std::vector<double> dot_bounds(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                               Summation summation, const Inputs& in,
                               std::span<const std::size_t> positions) {
  const std::size_t k = shape.sizes[0];
  return summation_bounds(arithmetic, summation, {.k = k, .products = true}, positions,
                          [&](std::size_t) {
                            double total = 0;
                            for (std::size_t l = 0; l < k; ++l) {
                              total += std::fabs(values(in, 0)[l] * values(in, 1)[l]);
                            }
                            return total;
                          });
}

// ---- bmm: a batch of products, one gemm per batch -----------------------------------------------

std::vector<Operand> bmm_operands(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"a", {s[0], s[1], s[3]}}, {"b", {s[0], s[3], s[2]}}};
}

std::vector<std::size_t> bmm_output(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {s[0], s[1], s[2]};
}

Shape bmm_shape(const OpInfo&, const Sizes& shapes) {  // a B x M x K, b B x K x N
  if (shapes.size() < 2 || shapes[0].size() != 3 || shapes[1].size() != 3) return {};
  return Shape{{shapes[0][0], shapes[0][1], shapes[1][2], shapes[0][2]}};
}

std::vector<GemmPart> bmm_parts(const OpInfo&, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;  // B, M, N, K
  const std::size_t outputs = s[1] * s[2];
  std::vector<GemmPart> parts(s[0]);
  for (std::size_t b = 0; b < s[0]; ++b) {
    GemmPart& part = parts[b];
    part.shape = Shape{{s[1], s[2], s[3]}};
    for (const std::size_t size : {s[1] * s[3], s[3] * s[2]}) {
      const auto first =
          in.values.at(part.inputs.values.size()).begin() + static_cast<std::ptrdiff_t>(b * size);
      part.inputs.values.emplace_back(first, first + static_cast<std::ptrdiff_t>(size));
      part.inputs.indices.emplace_back();
    }
    part.place.resize(outputs);
    for (std::size_t l = 0; l < outputs; ++l) part.place[l] = b * outputs + l;
  }
  return parts;
}

// ---- the ops that are one gemm on rearranged operands -------------------------------------------

std::vector<double> transposed(const std::vector<double>& x, std::size_t rows, std::size_t cols) {
  std::vector<double> t(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  }
  return t;
}

// dA = dY B^T: an M x K product summing over N.
std::vector<Operand> gemm_backward_a_operands(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"dy", {s[0], s[1]}}, {"b", {s[2], s[1]}}};
}
std::vector<std::size_t> gemm_backward_a_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[0], shape.sizes[2]};
}
Shape gemm_backward_a_shape(const OpInfo&, const Sizes& shapes) {  // dy M x N, b K x N
  if (!two_matrices(shapes)) return {};
  return Shape{{shapes[0][0], shapes[0][1], shapes[1][0]}};
}
GemmPart gemm_backward_a_gemm(const OpInfo&, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;
  GemmPart g;
  g.shape = Shape{{s[0], s[2], s[1]}};
  g.inputs.values = {in.values.at(0), transposed(in.values.at(1), s[2], s[1])};
  g.inputs.indices = {{}, {}};
  return g;
}

// dB = A^T dY: a K x N product summing over M.
std::vector<Operand> gemm_backward_b_operands(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"a", {s[0], s[2]}}, {"dy", {s[0], s[1]}}};
}
std::vector<std::size_t> gemm_backward_b_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[2], shape.sizes[1]};
}
GemmPart gemm_backward_b_gemm(const OpInfo&, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;
  GemmPart g;
  g.shape = Shape{{s[2], s[1], s[0]}};
  g.inputs.values = {transposed(in.values.at(0), s[0], s[2]), in.values.at(1)};
  g.inputs.indices = {{}, {}};
  return g;
}

// linear: x W with its bias as every row of C (added last, in the accumulation format, as
// cpu::gemm adds a bias).
std::vector<Operand> linear_operands(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[2]}}, {"w", {s[2], s[1]}}, parameter("bias", {s[1]}, HeldIn::output)};
}
GemmPart linear_gemm(const OpInfo&, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;
  GemmPart g;
  g.shape = shape;
  std::vector<double> c(s[0] * s[1]);
  for (std::size_t i = 0; i < s[0]; ++i) {
    std::copy(in.values.at(2).begin(), in.values.at(2).end(),
              c.begin() + static_cast<std::ptrdiff_t>(i * s[1]));
  }
  g.inputs.values = {in.values.at(0), in.values.at(1), std::move(c)};
  g.inputs.indices = {{}, {}, {}};
  return g;
}

// linear's bias gradient: the 1 x C product of a row of ones with dy, as the trainer forms it.
std::vector<Operand> linear_backward_bias_operands(const OpInfo&, const Shape& shape) {
  Operand dy{"dy", {shape.sizes[0], shape.sizes[1]}};
  dy.held_in = HeldIn::output;
  return {dy};
}
std::vector<std::size_t> column_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[1]};
}
GemmPart linear_backward_bias_gemm(const OpInfo&, const Shape& shape, const Inputs& in) {
  const auto& s = shape.sizes;
  GemmPart g;
  g.shape = Shape{{1, s[1], s[0]}};
  g.inputs.values = {std::vector<double>(s[0], 1.0), in.values.at(0)};
  g.inputs.indices = {{}, {}};
  return g;
}

std::vector<std::size_t> gemm_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[0], shape.sizes[1]};
}

constexpr std::string_view kSummationBound = "recursive summation (gamma)";

constexpr Definition kMatmul[] = {
    {.info = {Op::gemm, "gemm", "matmul", "MxNxK", "256x256x256",
              "A B (+ C), A M x K, B K x N, C M x N (row-major)", kSummationBound},
     .operands = gemm_operands,
     .output_shape = gemm_output,
     .shape_of = gemm_shape,
     .reference_kind = "exact",
     .tensor_core = true,
     .run = gemm_run,
     .run_at = gemm_run_at,
     .run_mma = gemm_mma,
     .reference = gemm_reference,
     .bounds = gemm_bounds},
    {.info = {Op::bmm, "bmm", "matmul", "BxMxNxK", "8x128x128x128",
              "a batch of B products A_b B_b, A_b M x K, B_b K x N", kSummationBound},
     .operands = bmm_operands,
     .output_shape = bmm_output,
     .shape_of = bmm_shape,
     .reference_kind = "exact",
     .gemm_parts = bmm_parts,
     .tensor_core = true},
    {.info = {Op::dot, "dot", "matmul", "N", "4096", "a . b", kSummationBound},
     .operands = dot_operands,
     .output_shape = one_output,
     .reference_kind = "exact",
     .tensor_core = true,
     .run = dot_run,
     .run_mma = dot_mma,
     .reference = dot_reference,
     .bounds = dot_bounds},
    {.info = {Op::gemm_backward_a, "gemm_backward_a", "matmul", "MxNxK", "256x256x256",
              "dA = dY B^T for the forward A B (dY M x N, B K x N)", kSummationBound, "gemm"},
     .operands = gemm_backward_a_operands,
     .output_shape = gemm_backward_a_output,
     .shape_of = gemm_backward_a_shape,
     .reference_kind = "exact",
     .as_gemm = gemm_backward_a_gemm,
     .tensor_core = true},
    {.info = {Op::gemm_backward_b, "gemm_backward_b", "matmul", "MxNxK", "256x256x256",
              "dB = A^T dY for the forward A B (A M x K, dY M x N)", kSummationBound, "gemm"},
     .operands = gemm_backward_b_operands,
     .output_shape = gemm_backward_b_output,
     .shape_of = gemm_shape,  // a M x K, dy M x N: M, N from dy's columns, K
     .reference_kind = "exact",
     .as_gemm = gemm_backward_b_gemm,
     .tensor_core = true},
    {.info = {Op::linear, "linear", "matmul", "MxNxK", "256x256x256",
              "x W + bias (addmm; nn.Linear's x W^T with W stored transposed), x M x K, W K x N, "
              "bias N in the output's type",
              kSummationBound, "linear"},
     .operands = linear_operands,
     .output_shape = gemm_output,
     .shape_of = gemm_shape,
     .reference_kind = "exact",
     .as_gemm = linear_gemm,
     .tensor_core = true},
    {.info = {Op::linear_backward_bias, "linear_backward_bias", "matmul", "RxC", "256x256",
              "dbias = sum over the rows of dy (dy R x C in the output's type), for the forward "
              "linear",
              kSummationBound, "linear"},
     .operands = linear_backward_bias_operands,
     .output_shape = column_output,
     .reference_kind = "exact",
     .as_gemm = linear_backward_bias_gemm},
};

}  // namespace matmul_family
}  // namespace

std::span<const Definition> matmul_ops() {
  return matmul_family::kMatmul;
}

}  // namespace ampbench::ops
