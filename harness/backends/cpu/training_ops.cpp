// The CPU backend's ops of the training models beyond the forward ops: batch norm's backward and
// global average pooling (the catalog's batch_norm_backward* and mean_pool*).
#include <array>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/backends/cpu/rounders.hpp"

namespace ampbench::backends::cpu {

using namespace detail;

BatchNormGradients batch_norm_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                       std::span<const double> dy, std::size_t rows,
                                       std::size_t cols, double eps, std::span<const double> gamma,
                                       Events& events) {
  require(x.size() == rows * cols && dy.size() == x.size() && rows > 0,
          fmt::format("batch_norm_backward: x and dy must hold {} x {} values", rows, cols));
  require(gamma.empty() || gamma.size() == cols,
          "batch_norm_backward: gamma must have one element per channel");
  require_exact(arithmetic);
  BatchNormGradients g;
  g.dx.resize(x.size());
  g.dgamma.resize(cols);
  g.dbeta.resize(cols);
  // Each channel's output events by gradient (a channel is one thread's: no two write one entry).
  std::vector<std::array<numeric::EventCounts, 3>> output_events(cols);
  events += for_rows(cols, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> column(rows), deviation(rows), square(rows), product(rows), d(rows);
    for (std::size_t c = first; c < end; ++c) {
      Rounders round(arithmetic, e, c);
      auto& r = round.compute;
      // round.output, its event also counted in the channel's entry for gradient `which`.
      const auto output = [&](std::size_t which, double v) {
        const numeric::EventCounts before = e.output;
        const double rounded = round.output(v);
        for (std::size_t k = 0; k < before.count.size(); ++k) {
          output_events[c][which].count[k] += e.output.count[k] - before.count[k];
        }
        return rounded;
      };
      // The statistics as the forward pass forms them.
      for (std::size_t i = 0; i < rows; ++i) column[i] = x[i * cols + c];
      const double n = static_cast<double>(rows);
      const double mu =
          r(accumulate_sum(round.accumulate, Summation::sequential, column.data(), rows) / n);
      for (std::size_t i = 0; i < rows; ++i) {
        deviation[i] = r.sum(column[i], -mu);
        square[i] = r(deviation[i] * deviation[i]);
      }
      const double variance =
          r(accumulate_sum(round.accumulate, Summation::sequential, square.data(), rows) / n);
      const double rstd = r(1.0 / r(std::sqrt(r.sum(variance, eps))));
      // ATen's batch_norm_backward_reduce: sum dy and sum dy (x - mean); then
      // batch_norm_backward_elemt (aten/src/ATen/native/cuda/Normalization.cuh):
      // dx = (dy - (x - mean) proj_scale - mean dy) grad_scale, with
      // proj_scale = sum dy (x - mean) / n * rstd^2 and grad_scale = rstd * gamma.
      for (std::size_t i = 0; i < rows; ++i) {
        d[i] = dy[i * cols + c];
        product[i] = r(d[i] * deviation[i]);
      }
      const double sum_dy = accumulate_sum(round.accumulate, Summation::sequential, d.data(), rows);
      const double sum_dy_xmu =
          accumulate_sum(round.accumulate, Summation::sequential, product.data(), rows);
      g.dbeta[c] = output(2, sum_dy);
      g.dgamma[c] = output(1, r(sum_dy_xmu * rstd));
      const double mean_dy = r(sum_dy / n);
      const double proj_scale = r(r(r(sum_dy_xmu / n) * rstd) * rstd);
      const double grad_scale = gamma.empty() ? rstd : r(rstd * gamma[c]);
      for (std::size_t i = 0; i < rows; ++i) {
        const double centred = r.sum(r.sum(d[i], -r(deviation[i] * proj_scale)), -mean_dy);
        g.dx[i * cols + c] = output(0, r(centred * grad_scale));
      }
    }
  });
  for (const auto& channel : output_events) {
    g.dx_output += channel[0];
    g.dgamma_output += channel[1];
    g.dbeta_output += channel[2];
  }
  return g;
}

std::vector<double> mean_rows(const Arithmetic& arithmetic, std::span<const double> x,
                              std::size_t rows, std::size_t cols, Events& events) {
  require(x.size() == rows * cols && cols > 0, "mean_rows: x must hold rows x cols values");
  return rowwise(arithmetic, x, rows, cols, 1, events,
                 [&](Rounders& round, const double* in, double* out, double*, std::size_t) {
                   const double total =
                       accumulate_sum(round.accumulate, Summation::sequential, in, cols);
                   out[0] = round.output(round.compute(total / static_cast<double>(cols)));
                 });
}

std::vector<double> mean_rows_backward(const Arithmetic& arithmetic, std::span<const double> dy,
                                       std::size_t cols, Events& events) {
  require(cols > 0, "mean_rows_backward: rows of no columns");
  require_exact(arithmetic);
  std::vector<double> dx(dy.size() * cols);
  Rounders round(arithmetic, events, 0);
  for (std::size_t r = 0; r < dy.size(); ++r) {
    const double v = round.output(round.compute(dy[r] / static_cast<double>(cols)));
    for (std::size_t c = 0; c < cols; ++c) dx[r * cols + c] = v;
  }
  return dx;
}

}  // namespace ampbench::backends::cpu
