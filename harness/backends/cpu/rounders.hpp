// What the CPU backend's op families share: rounders that round to a format and count the events,
// the row-parallel driver, sums in the accumulation format, and the pieces of the softmax and
// normalisation rows. Internal to harness/backends/cpu: the op files include it, nothing else.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/numeric/nan_max.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::backends::cpu::detail {

using numeric::Format;

// Rounds values to one format, counting the events. Stochastic modes draw from a stream that
// depends only on (row, position in the row), so results do not depend on the thread count.
class Rounder {
 public:
  Rounder(const Format& f, numeric::Rounding mode, numeric::EventCounts& counts,
          std::uint64_t stream)
      : f_(f), mode_(mode), counts_(counts), stream_(stream) {}
  // x, the binary64 result of an operation that binary64 performed exactly, rounded to the format.
  double operator()(double x) { return round(x, false); }
  // a + b rounded to the format. Binary64 may itself round the sum (operands far apart); the value
  // is still right (53 >= 2p + 2), and its exact error (TwoSum) tells whether the operation was
  // inexact when the binary64 sum happens to be a value of the format.
  double sum(double a, double b) {
    const double t = a + b;
    const double b_virtual = t - a;
    const double error = (a - (t - b_virtual)) + (b - b_virtual);
    return round(t, std::isfinite(t) && error != 0);
  }
  // a * b + c rounded once to the format. For p <= 26 the product is exact in binary64 and the sum
  // is taken to binary64 by rounding to odd (the nearest sum, moved to its odd neighbour when
  // TwoSum shows it inexact and even): rounding that to a format with p <= 51 is the correct
  // rounding of the exact a * b + c (Boldo and Melquiond, "Emulation of FMA and correctly rounded
  // sums: proved algorithms using rounding to odd", IEEE TC 2008). binary64 itself uses the
  // hardware's fused multiply-add, whose inexact flag tells what the value cannot.
  double fused(double a, double b, double c) {
    if (f_.precision > 26) {
      std::feclearexcept(FE_INEXACT);
      const double r = std::fma(a, b, c);
      return round(r, std::fetestexcept(FE_INEXACT) != 0);
    }
    const double product = a * b;
    double t = product + c;
    const double b_virtual = t - product;
    const double error = (product - (t - b_virtual)) + (c - b_virtual);
    if (!std::isfinite(t) || error == 0) return round(t, false);
    std::uint64_t bits = std::bit_cast<std::uint64_t>(t);
    if ((bits & 1) == 0) t = std::nextafter(t, error > 0 ? HUGE_VAL : -HUGE_VAL);
    return round(t, true);
  }

 private:
  double round(double x, bool inexact_before) {
    const std::uint32_t random =
        numeric::is_stochastic(mode_) ? numeric::stochastic_draw(stream_, index_++) : 0u;
    const numeric::Rounded r = numeric::round_to(f_, mode_, x, random);
    counts_.add(inexact_before && r.event == numeric::RoundingEvent::exact
                    ? numeric::RoundingEvent::inexact
                    : r.event);
    return r.value;
  }

  Format f_;
  numeric::Rounding mode_;
  numeric::EventCounts& counts_;
  std::uint64_t stream_;
  std::uint64_t index_ = 0;
};

// The three rounders of one row of work.
struct Rounders {
  Rounders(const Arithmetic& a, Events& events, std::uint64_t row)
      : compute(a.compute, a.mode, events.intermediate, numeric::splitmix64(row, 0)),
        accumulate(a.accumulate, a.mode, events.intermediate, numeric::splitmix64(row, 1)),
        output(a.output, a.mode, events.output, numeric::splitmix64(row, 2)) {}
  Rounder compute;
  Rounder accumulate;
  Rounder output;
};

inline void require_exact(const Arithmetic& a) {
  if (auto problem = why_not_emulable(a)) throw std::invalid_argument(*problem);
}

inline void require(bool condition, const std::string& what) {
  if (!condition) throw std::invalid_argument(what);
}

// Runs work(first_row, end_row, events) over [0, rows) on up to all cores, in contiguous blocks,
// and adds the events in block order.
template <class Work>
Events for_rows(std::size_t rows, Work work) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t blocks = std::min<std::size_t>(cores, std::max<std::size_t>(rows, 1));
  std::vector<Events> events(blocks);
  {
    std::vector<std::jthread> pool;
    for (std::size_t b = 1; b < blocks; ++b) {
      pool.emplace_back([&, b] { work(rows * b / blocks, rows * (b + 1) / blocks, events[b]); });
    }
    work(0, rows / blocks, events[0]);
  }
  Events total;
  for (const auto& e : events) total += e;
  return total;
}

// The sum of x[0..n) (each already rounded to `accumulate`'s inputs), rounded as `summation` says.
inline double accumulate_sum(Rounder& round, Summation summation, const double* x, std::size_t n) {
  if (n == 0) return 0.0;
  if (summation == Summation::sequential || n == 1) {
    double s = x[0];
    for (std::size_t i = 1; i < n; ++i) s = round.sum(s, x[i]);
    return s;
  }
  const std::size_t half = n / 2;
  const double left = accumulate_sum(round, summation, x, half);
  const double right = accumulate_sum(round, summation, x + half, n - half);
  return round.sum(left, right);
}

// The row's maximum, NaN when the row holds one: the CUDA kernels' maximum.
inline double row_max(const double* x, std::size_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n; ++i) m = numeric::max_propagating_nan(m, x[i]);
  return m;
}

// The shared first half of the softmax family for one row: the max and the rounded sum of the
// rounded exponentials of the rounded differences; `shifted` and `exps` receive them.
inline double exp_sum(Rounders& round, const double* x, std::size_t cols, double* shifted,
                      double* exps, double& m) {
  m = row_max(x, cols);
  for (std::size_t c = 0; c < cols; ++c) {
    shifted[c] = round.compute.sum(x[c], -m);
    exps[c] = round.compute(std::exp(shifted[c]));
  }
  return accumulate_sum(round.accumulate, Summation::sequential, exps, cols);
}

// Layer norm's statistics of one row, two passes as kernels compute them: deviations from the
// mean into work[0, cols), their squares into work[cols, 2 cols); returns 1 / sqrt(var + eps).
inline double normalize_row(Rounders& round, const double* in, std::size_t cols, double eps,
                            double* work) {
  const double n = static_cast<double>(cols);
  const double mu =
      round.compute(accumulate_sum(round.accumulate, Summation::sequential, in, cols) / n);
  for (std::size_t c = 0; c < cols; ++c) {
    work[c] = round.compute.sum(in[c], -mu);
    work[cols + c] = round.compute(work[c] * work[c]);
  }
  const double variance =
      round.compute(accumulate_sum(round.accumulate, Summation::sequential, work + cols, cols) / n);
  return round.compute(1.0 / round.compute(std::sqrt(round.compute.sum(variance, eps))));
}

template <class Row>
std::vector<double> rowwise(const Arithmetic& arithmetic, std::span<const double> x,
                            std::size_t rows, std::size_t cols, std::size_t out_per_row,
                            Events& events, Row row) {
  require_exact(arithmetic);
  require(x.size() == rows * cols,
          fmt::format("{} elements do not make {} rows of {}", x.size(), rows, cols));
  std::vector<double> y(rows * out_per_row);
  events += for_rows(rows, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> work(2 * cols);
    for (std::size_t r = first; r < end; ++r) {
      Rounders round(arithmetic, e, r);
      row(round, x.data() + r * cols, y.data() + r * out_per_row, work.data(), r);
    }
  });
  return y;
}

}  // namespace ampbench::backends::cpu::detail
