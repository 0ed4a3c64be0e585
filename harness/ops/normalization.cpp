// The normalization family: layer_norm, rms_norm and training-mode batch_norm, and the gradients
// of layer norm and batch norm (dx, dgamma, dbeta). References in multiprecision, row by row for
// layer and RMS norm, channel by channel for batch norm; dbeta is an exact column sum.
#include <fmt/format.h>

#include "harness/metrics/metrics.hpp"
#include "harness/ops/definition.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace normalization_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;

std::vector<Operand> x_gamma_beta(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, parameter("gamma", {s[1]}), parameter("beta", {s[1]})};
}
// Batch norm's weight and bias: kept in their own format under a promote entry (HeldIn).
std::vector<Operand> batch_x_gamma_beta(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}},
          parameter("gamma", {s[1]}, HeldIn::input_or_own),
          parameter("beta", {s[1]}, HeldIn::input_or_own)};
}
std::vector<Operand> batch_x_dy_gamma(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {
      {"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}, parameter("gamma", {s[1]}, HeldIn::input_or_own)};
}
std::vector<Operand> x_gamma(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, parameter("gamma", {s[1]})};
}
std::vector<Operand> x_dy_gamma(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}, parameter("gamma", {s[1]})};
}
std::vector<Operand> x_dy(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"x", {s[0], s[1]}}, {"dy", {s[0], s[1]}}};
}
std::vector<std::size_t> column_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[1]};
}

// ---- layer_norm and rms_norm, per row
// -------------------------------------------------------------

CpuRun row_norm_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic, Summation,
                    const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = op.op == Op::layer_norm
                   ? backends::cpu::layer_norm(arithmetic, values(in, 0), s[0], s[1], kLayerNormEps,
                                               values(in, 1), values(in, 2), run.events)
                   : backends::cpu::rms_norm(arithmetic, values(in, 0), s[0], s[1], kRmsNormEps,
                                             values(in, 1), run.events);
  return run;
}

Reference row_norm_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                             const numeric::Format& output, numeric::Rounding mode,
                             Reference result, std::uint64_t seed) {
  const std::size_t cols = shape.sizes[1];
  return forward_rows<Real>(shape, in, cols, output, mode, std::move(result), seed,
                            [&](std::span<const double> row_values) {
                              // A constant row (a single column, or --dist constant): every
                              // deviation from the mean is exactly 0, and layer_norm's output
                              // exactly beta (0 without it), whatever the rounding of 1 / sqrt(eps)
                              // that the zero multiplies.
                              const bool constant_row =
                                  std::all_of(row_values.begin(), row_values.end(),
                                              [&](double v) { return v == row_values.front(); });
                              RowEvaluation<Real> made;
                              made.bound = row_bound(row_values, 0, cols);
                              made.evaluate = [&op, &in, row_values, cols, constant_row] {
                                const std::vector<Real> rx = to_reals(row_values);
                                const std::span<const Real> sx(rx);
                                const auto gamma = to_reals(values(in, 1));
                                if (op.op == Op::rms_norm) {
                                  return reference::ops::rms_norm<Real>(
                                      sx, 1, cols, reference::to_real(kRmsNormEps), gamma);
                                }
                                const auto beta = to_reals(values(in, 2));
                                auto y = reference::ops::layer_norm<Real>(
                                    sx, 1, cols, reference::to_real(kLayerNormEps), gamma, beta);
                                if (constant_row)
                                  mpfr_clear_inexflag();  // the row's values are exact
                                return y;
                              };
                              return made;
                            });
}

// ---- batch_norm, per channel
// ----------------------------------------------------------------------

// Training statistics of one value per channel: the variance is 0/0 for the unbiased estimate and
// PyTorch refuses it ("Expected more than 1 value per channel when training").
void check_batch(const OpInfo& op, const Shape& shape, std::string_view text) {
  if (shape.sizes[0] < 2) {
    throw OpError(
        fmt::format("{} shape '{}': batch norm in training needs more than 1 value per "
                    "channel (N >= 2)",
                    op.name, text));
  }
}

CpuRun batch_norm_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic, Summation,
                      const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::batch_norm(arithmetic, values(in, 0), s[0], s[1], kBatchNormEps,
                                         values(in, 1), values(in, 2), run.events);
  return run;
}

// Column by column: each output depends on its channel's batch statistics. The formula
// (reference/mp/ops.hpp) takes deviations from a corrected mean, so the bound is that of the
// sums: about N units of 2^-P.
Reference batch_norm_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                               const numeric::Format& output, numeric::Rounding mode,
                               Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  std::map<std::size_t, std::vector<std::size_t>> by_column;
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    by_column[result.positions[e] % cols].push_back(e);
  }
  for (const auto& [column, elements] : by_column) {
    RowReference evaluate([&, column = column] {
      std::vector<double> x(rows);
      for (std::size_t r = 0; r < rows; ++r) x[r] = values(in, 0)[r * cols + column];
      const auto rx = to_reals(x);
      const std::vector<Real> gamma{reference::to_real(values(in, 1)[column])};
      const std::vector<Real> beta{reference::to_real(values(in, 2)[column])};
      auto y = reference::ops::batch_norm_training<Real>(
                   rx, rows, 1, 1, reference::to_real(kBatchNormEps), gamma, beta)
                   .y;
      // A constant channel: every deviation is exactly 0 and every output exactly beta,
      // whatever the rounding of 1 / sqrt(eps) that the zero multiplies.
      if (std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); })) {
        mpfr_clear_inexflag();
      }
      return y;
    });
    for (const std::size_t e : elements) {
      const std::size_t p = result.positions[e];
      const auto v = evaluate.element(p / cols, output, mode, 64 + 8 * rows, draw(mode, seed, p));
      result.rounded[e] = v.rounded.value;
      result.nearest[e] = v.value;
    }
  }
  return result;
}

// ---- layer norm's gradients
// -------------------------------------------------------------------------

CpuRun layer_norm_backward_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic,
                               Summation, const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::layer_norm_backward(arithmetic, values(in, 0), values(in, 1), s[0],
                                                  s[1], kLayerNormEps, values(in, 2), run.events);
  return run;
}

// dx per row, wider by the cancellation of g - mean(g) - xhat mean(g xhat), g = dy gamma: the
// three terms against the result.
Reference layer_norm_backward_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                                        const numeric::Format& output, numeric::Rounding mode,
                                        Reference result, std::uint64_t seed) {
  const std::size_t cols = shape.sizes[1];
  const auto condition_of = [&](std::size_t, std::span<const double> xr,
                                std::span<const double> dyr) {
    const double n_cols = static_cast<double>(cols);
    double mu = 0, variance = 0;
    for (const double v : xr) mu += v / n_cols;
    for (const double v : xr) variance += (v - mu) * (v - mu) / n_cols;
    const double rstd = 1.0 / std::sqrt(variance + kLayerNormEps);
    std::vector<double> g(cols), xhat(cols);
    double g_mean = 0, gx_mean = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      xhat[c] = (xr[c] - mu) * rstd;
      g[c] = dyr[c] * values(in, 2)[c];
      g_mean += g[c] / n_cols;
      gx_mean += g[c] * xhat[c] / n_cols;
    }
    double worst = 1;
    for (std::size_t c = 0; c < cols; ++c) {
      worst =
          std::max(worst, ratio(std::fabs(g[c]) + std::fabs(g_mean) + std::fabs(xhat[c] * gx_mean),
                                g[c] - g_mean - xhat[c] * gx_mean));
    }
    return worst;
  };
  const auto evaluate = [&](std::size_t, std::span<const double> xr, std::span<const double> dyr) {
    const auto rx = to_reals(xr);
    const auto rdy = to_reals(dyr);
    return reference::ops::layer_norm_backward<Real>(
               rx, rdy, 1, cols, reference::to_real(kLayerNormEps), to_reals(values(in, 2)))
        .dx;
  };
  return row_backward_reference<Real>(shape, in, true, output, mode, std::move(result), seed,
                                      condition_of, evaluate);
}

CpuRun layer_norm_parameter_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                                Summation, const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  auto g = backends::cpu::layer_norm_parameter_backward(arithmetic, values(in, 0), values(in, 1),
                                                        s[0], s[1], kLayerNormEps, run.events);
  run.output = std::move(op.op == Op::layer_norm_backward_gamma ? g.dgamma : g.dbeta);
  return run;
}

// dgamma_c = sum over rows of dy xhat: every column in one multiprecision evaluation, wider by the
// cancellation of the column sums (sum |dy xhat| / |sum dy xhat|, estimated in binary64); each
// xhat carries the error of its row's mean and variance, about `cols` units of 2^-P.
Reference layer_norm_gamma_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                                     const numeric::Format& output, numeric::Rounding mode,
                                     Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0], cols = shape.sizes[1];
  std::vector<double> terms(cols, 0.0), sums(cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = values(in, 0).data() + r * cols;
    double mu = 0, variance = 0;
    for (std::size_t c = 0; c < cols; ++c) mu += row[c] / static_cast<double>(cols);
    for (std::size_t c = 0; c < cols; ++c) {
      variance += (row[c] - mu) * (row[c] - mu) / static_cast<double>(cols);
    }
    const double rstd = 1.0 / std::sqrt(variance + kLayerNormEps);
    for (std::size_t c = 0; c < cols; ++c) {
      const double product = values(in, 1)[r * cols + c] * (row[c] - mu) * rstd;
      terms[c] += std::fabs(product);
      sums[c] += product;
    }
  }
  double condition = 1;
  for (const auto p : result.positions) condition = std::max(condition, ratio(terms[p], sums[p]));
  const int extra = extra_bits(condition);
  RowReference evaluate([&, extra] {
    const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
    return reference::ops::layer_norm_backward<Real>(to_reals(values(in, 0)),
                                                     to_reals(values(in, 1)), rows, cols,
                                                     reference::to_real(kLayerNormEps))
        .dgamma;
  });
  const auto bound = static_cast<std::uint64_t>(
      std::min(64.0 + 8.0 * static_cast<double>(rows + cols), static_cast<double>(1u << 31)));
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    const std::size_t c = result.positions[e];
    const auto v = evaluate.element(c, output, mode, bound, draw(mode, seed, c));
    result.rounded[e] = v.rounded.value;
    result.nearest[e] = v.value;
  }
  return result;
}

// dbeta (layer norm's and batch norm's): column sums of dy, exact.
Reference column_sum_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                               const numeric::Format& output, numeric::Rounding mode,
                               Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0], cols = shape.sizes[1];
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    const std::size_t c = result.positions[e];
    reference::ExactAccumulator acc;
    for (std::size_t r = 0; r < rows; ++r) acc.add(values(in, 1)[r * cols + c]);
    const reference::ExactValue v = acc.value();
    result.rounded[e] = v.round(output, mode, draw(mode, seed, c)).value;
    result.nearest[e] = v.to_double();
  }
  return result;
}

// Column sums of dy: R - 1 additions rounded to accumulate, one rounding to output.
std::vector<double> column_sum_bounds(const OpInfo&, const Shape& shape,
                                      const Arithmetic& arithmetic, Summation, const Inputs& in,
                                      std::span<const std::size_t> positions) {
  const std::size_t rows = shape.sizes[0], cols = shape.sizes[1];
  const double u_accumulate = metrics::unit_roundoff(arithmetic.accumulate, arithmetic.mode);
  const double u_output = metrics::unit_roundoff(arithmetic.output, arithmetic.mode);
  const double coefficient = metrics::with_final_rounding(
      std::pow(1 + u_accumulate, static_cast<double>(rows > 0 ? rows - 1 : 0)) - 1, u_output);
  const double absolute = static_cast<double>(rows > 0 ? rows - 1 : 0) *
                              underflow_error(arithmetic, arithmetic.accumulate) +
                          underflow_error(arithmetic, arithmetic.output);
  std::vector<double> bounds;
  for (const auto c : positions) {
    double magnitude = 0;
    for (std::size_t r = 0; r < rows; ++r) magnitude += std::fabs(values(in, 1)[r * cols + c]);
    bounds.push_back(coefficient * magnitude * (1 + static_cast<double>(rows + 2) * 0x1p-53) +
                     absolute);
  }
  return bounds;
}

// ---- batch norm's gradients
// -------------------------------------------------------------------------

CpuRun batch_norm_backward_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                               Summation, const Inputs& in) {
  const auto& s = shape.sizes;
  backends::cpu::Events all;
  auto g = backends::cpu::batch_norm_backward(
      arithmetic, values(in, 0), values(in, 1), s[0], s[1], kBatchNormEps,
      op.op == Op::batch_norm_backward ? std::span<const double>(values(in, 2))
                                       : std::span<const double>(),
      all);
  return op.op == Op::batch_norm_backward         ? one_gradient(g.dx, g.dx_output, all)
         : op.op == Op::batch_norm_backward_gamma ? one_gradient(g.dgamma, g.dgamma_output, all)
                                                  : one_gradient(g.dbeta, g.dbeta_output, all);
}

// Batch norm's dx and dgamma (reference/mp/ops.hpp), channel by channel: each output depends on
// its channel's batch statistics and sums. Conditioning, estimated in binary64 from the same
// formulas: dx_i = gamma rstd (dy_i - mean dy - xhat_i mean(dy xhat)) against
// |dy_i| + |mean dy| + |xhat_i mean(dy xhat)|, dgamma = sum dy xhat against sum |dy xhat|; the
// channel is evaluated wider by that ratio (extra_bits). The Ziv bound is that of the sums and
// statistics, about N units of 2^-P, as for the forward batch_norm.
Reference batch_norm_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                        const numeric::Format& output, numeric::Rounding mode,
                                        Reference result, std::uint64_t seed) {
  const std::size_t rows = shape.sizes[0];
  const std::size_t cols = shape.sizes[1];
  const bool dx = op.op == Op::batch_norm_backward;
  std::map<std::size_t, std::vector<std::size_t>> by_column;
  for (std::size_t e = 0; e < result.positions.size(); ++e) {
    by_column[dx ? result.positions[e] % cols : result.positions[e]].push_back(e);
  }
  std::vector<double> x(rows), dy(rows), xhat(rows);
  for (const auto& [column, elements] : by_column) {
    for (std::size_t r = 0; r < rows; ++r) {
      x[r] = values(in, 0)[r * cols + column];
      dy[r] = values(in, 1)[r * cols + column];
    }
    const double n = static_cast<double>(rows);
    double mu = 0, variance = 0;
    for (const double v : x) mu += v / n;
    for (const double v : x) variance += (v - mu) * (v - mu) / n;
    const double rstd = 1.0 / std::sqrt(variance + kBatchNormEps);
    double dy_mean = 0, dy_xhat_mean = 0, magnitude = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      xhat[r] = (x[r] - mu) * rstd;
      dy_mean += dy[r] / n;
      dy_xhat_mean += dy[r] * xhat[r] / n;
      magnitude += std::fabs(dy[r] * xhat[r]);
    }
    double condition = 1;
    if (dx) {
      for (const std::size_t e : elements) {
        const std::size_t r = result.positions[e] / cols;
        condition = std::max(condition, ratio(std::fabs(dy[r]) + std::fabs(dy_mean) +
                                                  std::fabs(xhat[r] * dy_xhat_mean),
                                              dy[r] - dy_mean - xhat[r] * dy_xhat_mean));
      }
    } else {
      condition = ratio(magnitude, dy_xhat_mean * n);
    }
    const int extra = extra_bits(condition);
    const bool constant = std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); });
    RowReference evaluate([&, column = column, extra, constant] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      const std::vector<Real> gamma =
          dx ? std::vector<Real>{reference::to_real(values(in, 2)[column])} : std::vector<Real>{};
      auto g = reference::ops::batch_norm_backward<Real>(to_reals(x), to_reals(dy), rows, 1, 1,
                                                         reference::to_real(kBatchNormEps), gamma);
      // A constant channel: every xhat is exactly 0, and so is dgamma, whatever the rounding of
      // 1 / sqrt(eps) that the zeros multiply.
      if (!dx && constant) mpfr_clear_inexflag();
      return dx ? std::move(g.dx) : std::move(g.dgamma);
    });
    for (const std::size_t e : elements) {
      const std::size_t p = result.positions[e];
      const auto v =
          evaluate.element(dx ? p / cols : 0, output, mode, 64 + 8 * rows, draw(mode, seed, p));
      result.rounded[e] = v.rounded.value;
      result.nearest[e] = v.value;
    }
  }
  return result;
}

constexpr std::string_view kSummationBound = "recursive summation (gamma)";

// Per row, the first `data` operands cut to the row in sampled runs.
constexpr Definition per_row(OpInfo info, Definition::OperandsOf operands, Definition::Run run,
                             std::size_t data, Definition::ReferenceAt reference) {
  return {.info = info,
          .operands = operands,
          .run = run,
          .sampling = rows_of(data),
          .reference = reference};
}
// Batch statistics and sums over the rows make every output depend on a whole column: the batch
// norm ops and the parameter gradients run whole in sampled runs.
constexpr Definition whole(OpInfo info, Definition::OperandsOf operands, Definition::Run run,
                           Definition::ReferenceAt reference) {
  return {.info = info, .operands = operands, .run = run, .reference = reference};
}
// A parameter's gradient, one per column: dgamma in multiprecision, dbeta an exact column sum.
constexpr Definition parameter_gradient(OpInfo info, Definition::Run run,
                                        Definition::ReferenceAt reference,
                                        Definition::Bounds bounds = nullptr) {
  return {.info = info,
          .operands = x_dy,
          .output_shape = column_output,
          .reference_kind = bounds ? "exact" : "multiprecision (Ziv)",
          .run = run,
          .reference = reference,
          .bounds = bounds};
}

constexpr Definition kNormalization[] = {
    per_row({Op::layer_norm, "layer_norm", "normalization", "RxC", "64x1024",
             "(x - mean) / sqrt(var + 1e-5) * gamma + beta, per row", "none"},
            x_gamma_beta, row_norm_run, 1, row_norm_reference),
    per_row({Op::rms_norm, "rms_norm", "normalization", "RxC", "64x1024",
             "x / sqrt(mean(x^2) + 1e-6) * gamma, per row", "none"},
            x_gamma, row_norm_run, 1, row_norm_reference),
    {.info = {Op::batch_norm, "batch_norm", "normalization", "NxC", "256x256",
              "training mode: (x - batch mean) / sqrt(batch var + 1e-5) * gamma + beta, per "
              "channel",
              "none"},
     .operands = batch_x_gamma_beta,
     .run = batch_norm_run,
     .reference = batch_norm_reference,
     .check = check_batch},
    per_row(
        {Op::layer_norm_backward, "layer_norm_backward", "normalization", "RxC", "64x1024",
         "dx = rstd (g - mean g - xhat mean(g xhat)), g = dy gamma, per row", "none", "layer_norm"},
        x_dy_gamma, layer_norm_backward_run, 2, layer_norm_backward_reference),
    parameter_gradient(
        {Op::layer_norm_backward_gamma, "layer_norm_backward_gamma", "normalization", "RxC",
         "64x1024", "dgamma = sum over the rows of dy * xhat, xhat = (x - mean) rstd per row",
         "none", "layer_norm"},
        layer_norm_parameter_run, layer_norm_gamma_reference),
    parameter_gradient(
        {Op::layer_norm_backward_beta, "layer_norm_backward_beta", "normalization", "RxC",
         "64x1024", "dbeta = sum over the rows of dy", kSummationBound, "layer_norm"},
        layer_norm_parameter_run, column_sum_reference, column_sum_bounds),
    whole({Op::batch_norm_backward, "batch_norm_backward", "normalization", "NxC", "256x256",
           "dx = gamma rstd (dy - mean dy - xhat mean(dy xhat)), per channel, for the "
           "training-mode batch_norm",
           "none", "batch_norm"},
          batch_x_dy_gamma, batch_norm_backward_run, batch_norm_backward_reference),
    parameter_gradient(
        {Op::batch_norm_backward_gamma, "batch_norm_backward_gamma", "normalization", "NxC",
         "256x256",
         "dgamma = sum over the batch of dy * xhat, xhat = (x - batch mean) rstd per channel",
         "none", "batch_norm"},
        batch_norm_backward_run, batch_norm_backward_reference),
    parameter_gradient(
        {Op::batch_norm_backward_beta, "batch_norm_backward_beta", "normalization", "NxC",
         "256x256", "dbeta = sum over the batch of dy, per channel", kSummationBound, "batch_norm"},
        batch_norm_backward_run, column_sum_reference, column_sum_bounds),
};

}  // namespace normalization_family
}  // namespace

std::span<const Definition> normalization_ops() {
  return normalization_family::kNormalization;
}

}  // namespace ampbench::ops
