// The softmax and loss family: softmax, log_softmax, logsumexp, cross-entropy and their backward
// ops. Their references evaluate in Asymptotic (reference/mp/asymptotic.hpp), so that
// exponentials beyond MPFR's range keep their sign and order.
#include <numeric>

#include "harness/ops/definition.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace softmax_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;
using reference::Asymptotic;

std::vector<Operand> rows_x(const OpInfo&, const Shape& shape) {
  return {{"x", {shape.sizes[0], shape.sizes[1]}}};
}
std::vector<Operand> rows_x_dy(const OpInfo&, const Shape& shape) {
  return {{"x", {shape.sizes[0], shape.sizes[1]}}, {"dy", {shape.sizes[0], shape.sizes[1]}}};
}
std::vector<Operand> logits_targets(const OpInfo&, const Shape& shape) {
  return {{"logits", {shape.sizes[0], shape.sizes[1]}},
          {"targets", {shape.sizes[0]}, true, shape.sizes[1]}};
}
std::vector<std::size_t> row_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[0]};
}
std::vector<std::size_t> one_output(const OpInfo&, const Shape&) {
  return {1};
}

// ---- forward
// -------------------------------------------------------------------------------------

CpuRun softmax_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic, Summation,
                   const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = op.op == Op::softmax
                   ? backends::cpu::softmax(arithmetic, values(in, 0), s[0], s[1], run.events)
               : op.op == Op::log_softmax
                   ? backends::cpu::log_softmax(arithmetic, values(in, 0), s[0], s[1], run.events)
                   : backends::cpu::logsumexp(arithmetic, values(in, 0), s[0], s[1], run.events);
  return run;
}

// Row by row, the row's bound that of its sum and its spread (row_bound).
Reference softmax_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                            const numeric::Format& output, numeric::Rounding mode, Reference result,
                            std::uint64_t seed) {
  const std::size_t cols = shape.sizes[1];
  const std::size_t per_row = op.op == Op::logsumexp ? 1 : cols;
  return forward_rows<Asymptotic>(shape, in, per_row, output, mode, std::move(result), seed,
                                  [&](std::span<const double> row_values) {
                                    RowEvaluation<Asymptotic> made;
                                    made.bound = row_bound(row_values, 0, cols);
                                    made.evaluate = [&op, row_values, cols] {
                                      const std::vector<Asymptotic> ax = to_asymptotic(row_values);
                                      const std::span<const Asymptotic> sx(ax);
                                      switch (op.op) {
                                        case Op::softmax:
                                          return reference::ops::softmax<Asymptotic>(sx, 1, cols);
                                        case Op::log_softmax:
                                          return reference::ops::log_softmax<Asymptotic>(sx, 1,
                                                                                         cols);
                                        default:
                                          return reference::ops::logsumexp<Asymptotic>(sx, 1, cols);
                                      }
                                    };
                                    return made;
                                  });
}

CpuRun cross_entropy_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic, Summation,
                         const Inputs& in) {
  CpuRun run;
  run.output = {backends::cpu::cross_entropy(arithmetic, values(in, 0), in.indices.at(1),
                                             shape.sizes[0], shape.sizes[1], 0.0, run.events)};
  return run;
}

// The mean loss: one evaluation of every row, its bound the largest row's plus the mean's sum.
Reference cross_entropy_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                                  const numeric::Format& output, numeric::Rounding mode,
                                  Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  const std::span<const double> x = values(in, 0);
  const auto& targets = in.indices.at(1);
  AsymptoticRowReference loss([&] {
    return std::vector<Asymptotic>{reference::ops::cross_entropy<Asymptotic>(
        to_asymptotic(x), rows, cols, targets, Asymptotic(0))};
  });
  std::uint64_t bound = 64 + 8 * rows;
  for (std::size_t r = 0; r < rows; ++r) bound = std::max(bound, row_bound(x, r, cols) + 8 * rows);
  const auto v =
      loss.element(0, output, mode, std::min<std::uint64_t>(bound, 1u << 31), draw(mode, seed, 0));
  result.rounded[0] = v.rounded.value;
  result.nearest[0] = v.value;
  return result;
}

// ---- backward
// ------------------------------------------------------------------------------------

CpuRun softmax_backward_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                            Summation, const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  if (op.op == Op::cross_entropy_backward) {
    run.output = backends::cpu::cross_entropy_backward(arithmetic, values(in, 0), in.indices.at(1),
                                                       s[0], s[1], run.events);
  } else if (op.op == Op::softmax_backward) {
    run.output = backends::cpu::softmax_backward(arithmetic, values(in, 0), values(in, 1), s[0],
                                                 s[1], run.events);
  } else {
    run.output = backends::cpu::log_softmax_backward(arithmetic, values(in, 0), values(in, 1), s[0],
                                                     s[1], run.events);
  }
  return run;
}

// The cancellation, per row in binary64: softmax: dy_j - sum dy y; log_softmax: dy_j - y_j sum dy;
// cross-entropy: y_t - 1 (every class, as its target may be any).
Reference softmax_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                     const numeric::Format& output, numeric::Rounding mode,
                                     Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  const bool has_dy = op.op != Op::cross_entropy_backward;
  const auto condition_of = [&](std::size_t, std::span<const double> xr,
                                std::span<const double> dyr) {
    const double top = *std::max_element(xr.begin(), xr.end());
    std::vector<double> y(cols);
    double total = 0;
    for (std::size_t c = 0; c < cols; ++c) total += (y[c] = std::exp(xr[c] - top));
    for (auto& v : y) v /= total;
    double inner = 0, dy_sum = 0;
    for (std::size_t c = 0; c < cols && has_dy; ++c) {
      inner += dyr[c] * y[c];
      dy_sum += dyr[c];
    }
    double worst = 1;
    for (std::size_t c = 0; c < cols; ++c) {
      if (op.op == Op::softmax_backward) {
        worst = std::max(worst, ratio(std::fabs(dyr[c]) + std::fabs(inner), dyr[c] - inner));
      } else if (op.op == Op::log_softmax_backward) {
        worst = std::max(
            worst, ratio(std::fabs(dyr[c]) + std::fabs(y[c] * dy_sum), dyr[c] - y[c] * dy_sum));
      } else {
        worst = std::max(worst, ratio(1.0, y[c] - 1.0));
      }
    }
    return worst;
  };
  const auto evaluate = [&](std::size_t row, std::span<const double> xr,
                            std::span<const double> dyr) {
    const auto ax = to_asymptotic(xr);
    const auto ady = to_asymptotic(dyr);
    if (op.op == Op::softmax_backward) {
      return reference::ops::softmax_backward<Asymptotic>(ax, ady, 1, cols);
    }
    if (op.op == Op::log_softmax_backward) {
      return reference::ops::log_softmax_backward<Asymptotic>(ax, ady, 1, cols);
    }
    const std::vector<std::int64_t> t{in.indices.at(1).at(row)};
    auto g = reference::ops::cross_entropy_backward<Asymptotic>(ax, 1, cols, t);
    for (auto& v : g) v /= static_cast<double>(rows);  // the mean is over all rows
    return g;
  };
  return row_backward_reference<Asymptotic>(shape, in, has_dy, output, mode, std::move(result),
                                            seed, condition_of, evaluate);
}

constexpr Definition forward(OpInfo info, Definition::OutputOf output = nullptr) {
  return {.info = info,
          .operands = rows_x,
          .output_shape = output,
          .run = softmax_run,
          .sampling = rows_of(1),
          .reference = softmax_reference};
}
constexpr Definition backward(OpInfo info) {
  return {.info = info,
          .operands = rows_x_dy,
          .run = softmax_backward_run,
          .sampling = rows_of(2),
          .reference = softmax_backward_reference};
}

constexpr Definition kSoftmax[] = {
    forward({Op::softmax, "softmax", "softmax", "RxC", "64x1024", "exp(x - max) / sum, per row",
             "none"}),
    forward({Op::log_softmax, "log_softmax", "softmax", "RxC", "64x1024",
             "(x - max) - log sum, per row", "none"}),
    forward({Op::logsumexp, "logsumexp", "softmax", "RxC", "64x1024",
             "max + log sum exp(x - max), per row", "none"},
            row_output),
    {.info = {Op::cross_entropy, "cross_entropy", "loss", "RxC", "64x1000",
              "mean over R rows of -log softmax(logits)[target], C classes", "none"},
     .operands = logits_targets,
     .output_shape = one_output,
     .run = cross_entropy_run,
     .reference = cross_entropy_reference},
    backward({Op::softmax_backward, "softmax_backward", "softmax", "RxC", "64x1024",
              "dx = y (dy - sum dy y), y = softmax(x), per row", "none", "softmax"}),
    backward({Op::log_softmax_backward, "log_softmax_backward", "softmax", "RxC", "64x1024",
              "dx = dy - softmax(x) sum dy, per row", "none", "log_softmax"}),
    // The mean's 1/R makes every output depend on the batch size: sampled runs run whole.
    {.info = {Op::cross_entropy_backward, "cross_entropy_backward", "loss", "RxC", "64x1000",
              "d mean loss / d logits = (softmax(x) - onehot(target)) / R", "none",
              "cross_entropy"},
     .operands = logits_targets,
     .run = softmax_backward_run,
     .reference = softmax_backward_reference},
};

}  // namespace softmax_family
}  // namespace

std::span<const Definition> softmax_ops() {
  return softmax_family::kSoftmax;
}

}  // namespace ampbench::ops
