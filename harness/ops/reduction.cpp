// The reduction family: sum, mean, l2_norm, and mean pooling with its backward. Each reference is
// an exact sum, then at most one correctly rounded operation.
#include "harness/ops/definition.hpp"
#include "reference/exact/dot.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace reduction_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;

std::vector<Operand> vector_x(const OpInfo&, const Shape& shape) {
  return {{"x", {shape.sizes[0]}}};
}

std::vector<std::size_t> one_output(const OpInfo&, const Shape&) {
  return {1};
}

// ---- sum, mean, l2_norm of N values -------------------------------------------------------------

CpuRun sum_run(const OpInfo&, const Shape&, const Arithmetic& arithmetic, Summation summation,
               const Inputs& in) {
  CpuRun run;
  run.output = {backends::cpu::sum(arithmetic, summation, values(in, 0), run.events)};
  return run;
}
CpuRun mean_run(const OpInfo&, const Shape&, const Arithmetic& arithmetic, Summation summation,
                const Inputs& in) {
  CpuRun run;
  run.output = {backends::cpu::mean(arithmetic, summation, values(in, 0), run.events)};
  return run;
}
CpuRun l2_norm_run(const OpInfo&, const Shape&, const Arithmetic& arithmetic, Summation summation,
                   const Inputs& in) {
  CpuRun run;
  run.output = {backends::cpu::l2_norm(arithmetic, summation, values(in, 0), run.events)};
  return run;
}

Reference sum_reference(const OpInfo&, const Shape&, const Inputs& in,
                        const numeric::Format& output, numeric::Rounding mode, Reference result,
                        std::uint64_t seed) {
  const reference::ExactValue v = reference::exact_sum(values(in, 0));
  result.rounded[0] = v.round(output, mode, draw(mode, seed, 0)).value;
  result.nearest[0] = v.to_double();
  return result;
}

// The mean and the 2-norm: one correctly rounded operation (a quotient, a square root) on an
// exact sum: relative error 2^-P.
Reference mean_or_norm_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                 const numeric::Format& output, numeric::Rounding mode,
                                 Reference result, std::uint64_t seed) {
  const bool mean = op.op == Op::mean;
  reference::ExactAccumulator acc;
  for (const double x : values(in, 0)) {
    if (mean) {
      acc.add(x);
    } else {
      acc.add_product(x, x);
    }
  }
  const reference::ExactValue total = acc.value();
  const double items = static_cast<double>(shape.sizes[0]);
  reference::ZivPolicy policy;
  policy.error_bound = 2;
  const auto r = reference::correctly_rounded(
      output, mode,
      [&] {
        const Real t = to_real(total);
        return mean ? Real(t / items) : reference::math::sqrt(t);
      },
      policy, draw(mode, seed, 0));
  result.rounded[0] = r.rounded.value;
  result.nearest[0] = r.value;
  return result;
}

std::vector<double> sum_or_mean_bounds(const OpInfo& op, const Shape& shape,
                                       const Arithmetic& arithmetic, Summation summation,
                                       const Inputs& in, std::span<const std::size_t> positions) {
  const bool mean = op.op == Op::mean;
  const std::size_t k = shape.sizes[0];
  return summation_bounds(arithmetic, summation, {.k = k, .divided = mean}, positions,
                          [&](std::size_t) {
                            double total = 0;
                            for (const double v : values(in, 0)) total += std::fabs(v);
                            if (mean) total /= static_cast<double>(k);
                            return total;
                          });
}

// ---- mean_pool: the mean of each row, and its backward ------------------------------------------

std::vector<Operand> rows_x(const OpInfo&, const Shape& shape) {
  return {{"x", {shape.sizes[0], shape.sizes[1]}}};
}
std::vector<std::size_t> row_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[0]};
}
CpuRun mean_pool_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic, Summation,
                     const Inputs& in) {
  CpuRun run;
  run.output = backends::cpu::mean_rows(arithmetic, values(in, 0), shape.sizes[0], shape.sizes[1],
                                        run.events);
  return run;
}

std::vector<Operand> mean_pool_backward_operands(const OpInfo&, const Shape& shape) {
  return {{"x", {shape.sizes[0], shape.sizes[1]}}, {"dy", {shape.sizes[0]}}};
}
CpuRun mean_pool_backward_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                              Summation, const Inputs& in) {
  CpuRun run;
  run.output =
      backends::cpu::mean_rows_backward(arithmetic, values(in, 1), shape.sizes[1], run.events);
  return run;
}

// The mean of each row (an exact sum, divided once), or dy of a row divided once by the row's
// length: one correctly rounded operation on an exact value.
Reference mean_pool_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                              const numeric::Format& output, numeric::Rounding mode,
                              Reference result, std::uint64_t seed) {
  const std::size_t cols = shape.sizes[1];
  reference::ZivPolicy policy;
  policy.error_bound = 2;
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    const std::size_t p = result.positions[e];
    reference::ExactAccumulator acc;
    if (op.op == Op::mean_pool) {
      for (std::size_t c = 0; c < cols; ++c) acc.add(values(in, 0)[p * cols + c]);
    } else {
      acc.add(values(in, 1)[p / cols]);
    }
    const reference::ExactValue total = acc.value();
    const auto r = reference::correctly_rounded(
        output, mode,
        [&] {
          const Real t = to_real(total);  // at the working precision, as the quotient
          return Real(t / static_cast<double>(cols));
        },
        policy, draw(mode, seed, p));
    result.rounded[e] = r.rounded.value;
    result.nearest[e] = r.value;
  }
  return result;
}

// A mean per row, always summed in order.
std::vector<double> mean_pool_bounds(const OpInfo&, const Shape& shape,
                                     const Arithmetic& arithmetic, Summation summation,
                                     const Inputs& in, std::span<const std::size_t> positions) {
  const std::size_t k = shape.sizes[1];
  return summation_bounds(arithmetic, summation,
                          {.k = k, .divided = true, .always_sequential = true}, positions,
                          [&](std::size_t position) {
                            double total = 0;
                            for (std::size_t l = 0; l < k; ++l) {
                              total += std::fabs(values(in, 0)[position * k + l]);
                            }
                            return total / static_cast<double>(k);
                          });
}

// dy / C: one rounding to compute, one to output (binary64's rounding of the quotient before the
// compute format's is innocuous, as 53 >= 2p + 2).
std::vector<double> mean_pool_backward_bounds(const OpInfo&, const Shape& shape,
                                              const Arithmetic& arithmetic, Summation,
                                              const Inputs& in,
                                              std::span<const std::size_t> positions) {
  const std::size_t cols = shape.sizes[1];
  return one_rounding_bounds(arithmetic, true, positions, [&](std::size_t p) {
    return values(in, 1)[p / cols] / static_cast<double>(cols);
  });
}

constexpr std::string_view kSummationBound = "recursive summation (gamma)";
constexpr std::string_view kOneStep = "exact sum, one correctly rounded step";

constexpr Definition kReduction[] = {
    {.info = {Op::sum, "sum", "reduction", "N", "65536", "sum of x", kSummationBound},
     .operands = vector_x,
     .output_shape = one_output,
     .reference_kind = "exact",
     .run = sum_run,
     .reference = sum_reference,
     .bounds = sum_or_mean_bounds},
    {.info = {Op::mean, "mean", "reduction", "N", "65536", "sum of x / N", kSummationBound},
     .operands = vector_x,
     .output_shape = one_output,
     .reference_kind = kOneStep,
     .run = mean_run,
     .reference = mean_or_norm_reference,
     .bounds = sum_or_mean_bounds},
    {.info = {Op::l2_norm, "l2_norm", "reduction", "N", "65536", "sqrt(sum of x^2)", "none"},
     .operands = vector_x,
     .output_shape = one_output,
     .reference_kind = kOneStep,
     .run = l2_norm_run,
     .reference = mean_or_norm_reference},
    {.info = {Op::mean_pool, "mean_pool", "reduction", "RxC", "64x1024",
              "the mean of each row (global average pooling of N*C rows of H*W values)",
              kSummationBound, "mean"},
     .operands = rows_x,
     .output_shape = row_output,
     .reference_kind = kOneStep,
     .run = mean_pool_run,
     .sampling = rows_of(1),
     .reference = mean_pool_reference,
     .bounds = mean_pool_bounds},
    {.info = {Op::mean_pool_backward, "mean_pool_backward", "reduction", "RxC", "64x1024",
              "dx = dy[row] / C over each row (dy R), for the forward mean_pool",
              "one rounding (u)", "mean"},
     .operands = mean_pool_backward_operands,
     .reference_kind = kOneStep,
     .run = mean_pool_backward_run,
     .reference = mean_pool_reference,
     .bounds = mean_pool_backward_bounds},
};

}  // namespace reduction_family
}  // namespace

std::span<const Definition> reduction_ops() {
  return reduction_family::kReduction;
}

}  // namespace ampbench::ops
