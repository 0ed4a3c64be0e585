#include "harness/backends/cpu/emulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <stdexcept>
#include <thread>

#include "harness/backends/cpu/rounders.hpp"
#include "harness/numeric/clones.hpp"

namespace ampbench::backends::cpu {

using namespace detail;

bool exact_emulation(const Format& f) {
  return f.precision <= 25 || f.precision == 53;
}

std::optional<std::string> why_not_emulable(const Arithmetic& a) {
  if (a.mode != numeric::Rounding::nearest_even) {
    return fmt::format(
        "rounding mode {}: binary64 containers emulate only round-to-nearest-even exactly (a "
        "directed or stochastic rounding of a binary64 result that binary64 already rounded can "
        "differ from the rounding of the exact result)",
        numeric::rounding_name(a.mode));
  }
  for (const Format* f : {&a.compute, &a.accumulate, &a.output}) {
    if (!exact_emulation(*f)) {
      return fmt::format(
          "format {} (p={}) cannot be emulated exactly in binary64 containers (needs p <= 25 or "
          "p = 53)",
          f->name, f->precision);
    }
  }
  return std::nullopt;
}

Events& Events::operator+=(const Events& other) {
  intermediate += other.intermediate;
  output += other.output;
  return *this;
}

namespace {

bool is_binary32_nearest(const Arithmetic& a) {
  return numeric::same_format(a.compute, numeric::formats::fp32) &&
         numeric::same_format(a.accumulate, numeric::formats::fp32) &&
         a.mode == numeric::Rounding::nearest_even;
}

bool all_binary32(std::span<const double> x) {
  for (const double v : x) {
    if (static_cast<double>(static_cast<float>(v)) != v && v == v) return false;
  }
  return true;
}

// Counts of rounding events of the binary32 fast path, indexed by RoundingEvent.
using Counts = std::array<std::uint64_t, numeric::kRoundingEventCount>;

// One step of a row of C: row[j] = fl(row[j] + fl(a * b[j])), or fl(a * b[j]) on the first step,
// counting both roundings as numeric::round_to classifies them:
//   product: exact when the binary32 result equals the exact product (a binary64), overflow when it
//   is infinite and the product is not, flush or underflow when the product is below 2^-126 (to
//   zero, or not), NaN for inf * 0 and NaN operands, else inexact;
//   sum: the exact error of the addition (TwoSum, Knuth) tells exact from inexact while the sum is
//   finite; a tiny sum is always exact (Hauser 1996); an infinite sum of finite terms is an
//   overflow; a NaN sum is NaN.
// Branch-free, so that it vectorises; compiled for AVX-512 and AVX2 where the CPU has them (the
// results are the same: binary32 arithmetic is IEEE everywhere, and nothing is fused). Flattened:
// without it the product's lambda stays a call per element and nothing vectorises.
AMPBENCH_CLONES_FLATTENED("avx512f", "avx2", "default")
void binary32_step(float* __restrict row, const float* __restrict bf, const double* __restrict bd,
                   float af, double ad, std::size_t n, bool first, Counts& counts) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr float kInfF = std::numeric_limits<float>::infinity();
  // Flags as 0/1 integers combined with & and |: no short-circuit, no control flow.
  std::uint32_t exact = 0, inexact = 0, underflow = 0, flush = 0, overflow = 0, nan = 0;
  const auto product = [&](float p, double x) {
    const double r = p;
    const std::uint32_t p_nan = x != x;
    const std::uint32_t p_exact = r == x;
    const std::uint32_t r_inf = (r == kInf) | (r == -kInf);
    const std::uint32_t p_overflow = (1 - p_nan) & (1 - p_exact) & r_inf;
    const std::uint32_t p_rest = (1 - p_nan) & (1 - p_exact) & (1 - r_inf);
    const std::uint32_t tiny = (x < 0x1p-126) & (x > -0x1p-126);
    const std::uint32_t zero = r == 0;
    exact += p_exact;
    nan += p_nan;
    overflow += p_overflow;
    flush += p_rest & tiny & zero;
    underflow += p_rest & tiny & (1 - zero);
    inexact += p_rest & (1 - tiny);
  };
  if (first) {
    for (std::size_t j = 0; j < n; ++j) {
      const float p = af * bf[j];
      product(p, ad * bd[j]);
      row[j] = p;
    }
  } else {
    for (std::size_t j = 0; j < n; ++j) {
      const float p = af * bf[j];
      product(p, ad * bd[j]);
      const float s0 = row[j];
      const float t = s0 + p;
      const float b_virtual = t - s0;
      const float error = (s0 - (t - b_virtual)) + (p - b_virtual);
      const std::uint32_t t_nan = t != t;
      const std::uint32_t t_inf = (t == kInfF) | (t == -kInfF);
      const std::uint32_t inputs_inf =
          (s0 == kInfF) | (s0 == -kInfF) | (p == kInfF) | (p == -kInfF);
      const std::uint32_t t_finite = (1 - t_nan) & (1 - t_inf);
      const std::uint32_t no_error = error == 0;
      nan += t_nan;
      overflow += t_inf & (1 - inputs_inf);
      exact += (t_inf & inputs_inf) | (t_finite & no_error);
      inexact += t_finite & (1 - no_error);
      row[j] = t;
    }
  }
  using numeric::RoundingEvent;
  counts[static_cast<int>(RoundingEvent::exact)] += exact;
  counts[static_cast<int>(RoundingEvent::inexact)] += inexact;
  counts[static_cast<int>(RoundingEvent::underflow)] += underflow;
  counts[static_cast<int>(RoundingEvent::flush_to_zero)] += flush;
  counts[static_cast<int>(RoundingEvent::overflow)] += overflow;
  counts[static_cast<int>(RoundingEvent::nan)] += nan;
}

// Whether no product or running sum of a binary32 gemm over a (m x k) and b (k x n) can be tiny,
// overflow or be NaN, so that each of its roundings is exact or inexact and nothing else. True
// when every operand is finite, every product of nonzero operands is at least 2^-100 in magnitude
// (min |a| min |b| over the nonzero ones, exact in binary64), and k max |a| max |b| is below half
// of binary32's largest finite value: a rounded product is at most (1 + u) max |a| max |b|, and a
// running sum of l of them at most (1 + u)^l times the sum of their magnitudes, which for
// k < 2^22 stays below 1.3 k max |a| max |b| (u = 2^-24), so neither reaches the overflow
// threshold.
bool binary32_ordinary(std::span<const double> a, std::span<const double> b, std::size_t k) {
  if (k >= (std::size_t{1} << 22)) return false;
  double extremes[2][2] = {};  // [operand][0: smallest nonzero magnitude, 1: largest]
  int operand = 0;
  for (const auto x : {a, b}) {
    double smallest = std::numeric_limits<double>::infinity(), largest = 0;
    for (const double v : x) {
      const double magnitude = std::fabs(v);
      if (!(magnitude <= std::numeric_limits<float>::max())) return false;  // inf or NaN
      largest = std::max(largest, magnitude);
      if (magnitude != 0) smallest = std::min(smallest, magnitude);
    }
    if (largest == 0) return true;  // every product is an exact zero
    extremes[operand][0] = smallest;
    extremes[operand][1] = largest;
    ++operand;
  }
  return extremes[0][0] * extremes[1][0] >= 0x1p-100 &&
         2.0 * static_cast<double>(k) * extremes[0][1] * extremes[1][1] <=
             static_cast<double>(std::numeric_limits<float>::max());
}

// Four rows of C over k for inputs where binary32_ordinary holds: s_r[j] = fl(s_r[j] + fl(a_r
// b[j])) for a_r = a4[4 l + r], b[j] = b[l * b_stride + j], l = 0..k-1 (the first product is the
// sum), with the same binary32 arithmetic as binary32_step, and the number of inexact roundings
// among them; every other one is exact. There the exactness tests are cheaper than the general
// ones:
//   product p = fl(a b): exact iff fma(a, b, -p) == 0. The error a b - p of a nonzero product is a
//   multiple of ulp(a) ulp(b) > |a b| 2^-48 >= 2^-148, so the fused result is zero only when the
//   error is, and a zero product (a zero operand) has no error;
//   sum t = fl(s + p): exact iff t - s == p and t - p == s. The difference of t and the operand of
//   larger magnitude is computed exactly (Dekker's Fast2Sum lemma, round to nearest, no overflow),
//   so it returns the other operand iff t is the exact sum.
// Rows beyond the gemm's are passed with a_r = 0: their products and sums are exact, counted as
// nothing. Vectorised across j as binary32_step is; the clones are the x86-64 levels with FMA (the
// baseline clone calls the C library's fma, correct but slow: gemm takes this path only where the
// CPU has x86-64-v3 and so one of the FMA clones).
AMPBENCH_CLONES_FLATTENED("arch=x86-64-v4", "arch=x86-64-v3", "default")
std::uint64_t binary32_ordinary_rows(float* __restrict s0, float* __restrict s1,
                                     float* __restrict s2, float* __restrict s3,
                                     const float* __restrict a4, const float* __restrict b,
                                     std::size_t b_stride, std::size_t n, std::size_t k) {
  std::uint64_t inexact = 0;
  {
    std::uint32_t count = 0;
    const auto first = [&](float* __restrict s, float a, float x, std::size_t j) {
      const float p = a * x;
      count += std::fma(a, x, -p) != 0;
      s[j] = p;
    };
    for (std::size_t j = 0; j < n; ++j) {
      const float x = b[j];
      first(s0, a4[0], x, j);
      first(s1, a4[1], x, j);
      first(s2, a4[2], x, j);
      first(s3, a4[3], x, j);
    }
    inexact += count;
  }
  for (std::size_t l = 1; l < k; ++l) {
    const float* __restrict row = b + l * b_stride;
    const float* __restrict a = a4 + 4 * l;
    std::uint32_t count = 0;  // at most 8 n: one product and one sum per output
    const auto step = [&](float* __restrict s, float a_r, float x, std::size_t j) {
      const float p = a_r * x;
      const float s_old = s[j];
      const float t = s_old + p;
      count += static_cast<std::uint32_t>(std::fma(a_r, x, -p) != 0) +
               static_cast<std::uint32_t>((t - s_old != p) | (t - p != s_old));
      s[j] = t;
    };
    for (std::size_t j = 0; j < n; ++j) {
      const float x = row[j];
      step(s0, a[0], x, j);
      step(s1, a[1], x, j);
      step(s2, a[2], x, j);
      step(s3, a[3], x, j);
    }
    inexact += count;
  }
  return inexact;
}

}  // namespace

std::vector<double> gemm(const Arithmetic& arithmetic, Summation summation, std::size_t m,
                         std::size_t n, std::size_t k, std::span<const double> a,
                         std::span<const double> b, std::span<const double> c_in,
                         std::span<const double> bias, Events& events, GemmPath path) {
  require_exact(arithmetic);
  require(a.size() == m * k && b.size() == k * n && (c_in.empty() || c_in.size() == m * n) &&
              (bias.empty() || bias.size() == n),
          fmt::format("gemm {}x{}x{}: operand sizes a={} b={} c={} bias={} do not match", m, n, k,
                      a.size(), b.size(), c_in.size(), bias.size()));
  std::vector<double> c(m * n);
  const bool binary32 = path == GemmPath::automatic && summation == Summation::sequential &&
                        is_binary32_nearest(arithmetic) && k > 0 && all_binary32(a) &&
                        all_binary32(b);
  // The sums are binary32 values: to a binary32 output, a finite one rounds to itself, exactly
  // (the count is added in one go; infinities and NaN take the rounder).
  const bool binary32_output = numeric::same_format(arithmetic.output, numeric::formats::fp32);
  const auto finish_row = [&](Rounders& round, Events& e, std::size_t i, const float* row) {
    std::uint64_t exact = 0;
    for (std::size_t j = 0; j < n; ++j) {
      double s = row[j];
      if (!c_in.empty()) s = round.accumulate.sum(s, c_in[i * n + j]);
      if (!bias.empty()) s = round.accumulate.sum(s, bias[j]);
      if (binary32_output && std::isfinite(s)) {
        c[i * n + j] = s;
        ++exact;
      } else {
        c[i * n + j] = round.output(s);
      }
    }
    e.output.count[static_cast<int>(numeric::RoundingEvent::exact)] += exact;
  };
  if (binary32 && numeric::cpu_has_x86_64_v3() && binary32_ordinary(a, b, k)) {
    // Four rows of C at a time share each row of B (from L2), in column blocks whose four rows of
    // sums stay in L1.
    constexpr std::size_t kColumns = 512;
    const std::vector<float> bf(b.begin(), b.end());
    events += for_rows(m, [&](std::size_t first, std::size_t end, Events& e) {
      std::vector<float> rows(4 * n), a4(4 * k);
      std::uint64_t inexact = 0;
      for (std::size_t i0 = first; i0 < end; i0 += 4) {
        const std::size_t count = std::min<std::size_t>(4, end - i0);
        std::fill(a4.begin(), a4.end(), 0.0f);
        for (std::size_t r = 0; r < count; ++r) {
          for (std::size_t l = 0; l < k; ++l)
            a4[4 * l + r] = static_cast<float>(a[(i0 + r) * k + l]);
        }
        for (std::size_t j0 = 0; j0 < n; j0 += kColumns) {
          float* s = rows.data() + j0;
          inexact += binary32_ordinary_rows(s, s + n, s + 2 * n, s + 3 * n, a4.data(),
                                            bf.data() + j0, n, std::min(kColumns, n - j0), k);
        }
        for (std::size_t r = 0; r < count; ++r) {
          Rounders round(arithmetic, e, i0 + r);
          finish_row(round, e, i0 + r, rows.data() + r * n);
        }
      }
      using numeric::RoundingEvent;
      e.intermediate.count[static_cast<int>(RoundingEvent::inexact)] += inexact;
      e.intermediate.count[static_cast<int>(RoundingEvent::exact)] +=
          (end - first) * n * (2 * k - 1) - inexact;
    });
    return c;
  }
  if (binary32) {
    const std::vector<float> bf(b.begin(), b.end());
    events += for_rows(m, [&](std::size_t first, std::size_t end, Events& e) {
      std::vector<float> row(n);
      Counts counts{};
      for (std::size_t i = first; i < end; ++i) {
        Rounders round(arithmetic, e, i);
        for (std::size_t l = 0; l < k; ++l) {
          const double ad = a[i * k + l];
          binary32_step(row.data(), bf.data() + l * n, b.data() + l * n, static_cast<float>(ad), ad,
                        n, l == 0, counts);
        }
        finish_row(round, e, i, row.data());
      }
      for (int event = 0; event < numeric::kRoundingEventCount; ++event) {
        e.intermediate.count[event] += counts[event];
      }
    });
    return c;
  }
  events += for_rows(m, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> products(k);
    for (std::size_t i = first; i < end; ++i) {
      Rounders round(arithmetic, e, i);
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t l = 0; l < k; ++l) {
          products[l] = round.compute(a[i * k + l] * b[l * n + j]);  // exact product, rounded once
        }
        double s = accumulate_sum(round.accumulate, summation, products.data(), k);
        if (!c_in.empty()) s = round.accumulate.sum(s, c_in[i * n + j]);
        if (!bias.empty()) s = round.accumulate.sum(s, bias[j]);
        c[i * n + j] = round.output(s);
      }
    }
  });
  return c;
}

std::vector<double> gemm_mma(const numeric::MmaModel& model, const Format& output,
                             numeric::Rounding mode, std::size_t m, std::size_t n, std::size_t k,
                             std::span<const double> a, std::span<const double> b,
                             std::span<const double> c_in, Events& events) {
  require(a.size() == m * k && b.size() == k * n && (c_in.empty() || c_in.size() == m * n),
          fmt::format("gemm {}x{}x{}: operand sizes a={} b={} c={} do not match", m, n, k, a.size(),
                      b.size(), c_in.size()));
  if (const char* problem = numeric::mma_model_error(model)) {
    throw std::invalid_argument(fmt::format("MMA model {}: {}", model.name, problem));
  }
  // The operands in the model's input format, A's rows and then B's on all cores (no events).
  std::vector<double> qa(a.size()), qb(b.size());
  for_rows(m + k, [&](std::size_t first, std::size_t end, Events&) {
    for (std::size_t r = first; r < end; ++r) {
      const bool of_a = r < m;
      const std::size_t width = of_a ? k : n, row = of_a ? r : r - m;
      const double* in = (of_a ? a.data() : b.data()) + row * width;
      double* out = (of_a ? qa.data() : qb.data()) + row * width;
      for (std::size_t j = 0; j < width; ++j) out[j] = numeric::mma_quantize_input(model, in[j]);
    }
  });
  std::vector<double> c(m * n);
  const numeric::MmaMatrixProduct product(model, k, n, qb);
  const Arithmetic rounding{output, output, output, mode};
  events += for_rows(m, [&](std::size_t first, std::size_t end, Events& e) {
    const std::span<double> d(c.data() + first * n, (end - first) * n);
    product.multiply(std::span<const double>(qa).subspan(first * k, (end - first) * k),
                     c_in.empty() ? c_in : c_in.subspan(first * n, (end - first) * n), d);
    for (std::size_t i = first; i < end; ++i) {
      Rounders round(rounding, e, i);
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] = round.output(c[i * n + j]);
    }
  });
  return c;
}

double sum(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
           Events& events) {
  require_exact(arithmetic);
  Rounders round(arithmetic, events, 0);
  return round.output(accumulate_sum(round.accumulate, summation, x.data(), x.size()));
}

double mean(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
            Events& events) {
  require_exact(arithmetic);
  require(!x.empty(), "mean of an empty vector");
  Rounders round(arithmetic, events, 0);
  const double s = accumulate_sum(round.accumulate, summation, x.data(), x.size());
  return round.output(round.compute(s / static_cast<double>(x.size())));
}

double l2_norm(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
               Events& events) {
  require_exact(arithmetic);
  Rounders round(arithmetic, events, 0);
  std::vector<double> squares(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) squares[i] = round.compute(x[i] * x[i]);
  const double s = accumulate_sum(round.accumulate, summation, squares.data(), squares.size());
  return round.output(round.compute(std::sqrt(s)));
}

std::vector<double> softmax(const Arithmetic& arithmetic, std::span<const double> x,
                            std::size_t rows, std::size_t cols, Events& events) {
  return rowwise(arithmetic, x, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t) {
                   double m = 0;
                   const double s = exp_sum(round, in, cols, work, work + cols, m);
                   for (std::size_t c = 0; c < cols; ++c) {
                     out[c] = round.output(round.compute(work[cols + c] / s));
                   }
                 });
}

std::vector<double> log_softmax(const Arithmetic& arithmetic, std::span<const double> x,
                                std::size_t rows, std::size_t cols, Events& events) {
  return rowwise(arithmetic, x, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t) {
                   double m = 0;
                   const double s = exp_sum(round, in, cols, work, work + cols, m);
                   const double log_s = round.compute(std::log(s));
                   for (std::size_t c = 0; c < cols; ++c) {
                     out[c] = round.output(round.compute.sum(work[c], -log_s));
                   }
                 });
}

std::vector<double> logsumexp(const Arithmetic& arithmetic, std::span<const double> x,
                              std::size_t rows, std::size_t cols, Events& events) {
  return rowwise(arithmetic, x, rows, cols, 1, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t) {
                   double m = 0;
                   const double s = exp_sum(round, in, cols, work, work + cols, m);
                   // As torch.logsumexp and the CUDA kernel: an infinite maximum is the result (a
                   // row of -inf gives -inf, a row holding +inf gives +inf), not inf - inf's NaN.
                   out[0] = std::isinf(m)
                                ? round.output(m)
                                : round.output(round.compute.sum(m, round.compute(std::log(s))));
                 });
}

std::vector<double> layer_norm(const Arithmetic& arithmetic, std::span<const double> x,
                               std::size_t rows, std::size_t cols, double eps,
                               std::span<const double> gamma, std::span<const double> beta,
                               Events& events) {
  require((gamma.empty() || gamma.size() == cols) && (beta.empty() || beta.size() == cols),
          "layer_norm: gamma and beta must have one element per column");
  return rowwise(arithmetic, x, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t) {
                   const double rstd = normalize_row(round, in, cols, eps, work);
                   for (std::size_t c = 0; c < cols; ++c) {
                     double y = round.compute(work[c] * rstd);
                     if (!gamma.empty()) y = round.compute(y * gamma[c]);
                     if (!beta.empty()) y = round.compute.sum(y, beta[c]);
                     out[c] = round.output(y);
                   }
                 });
}

std::vector<double> rms_norm(const Arithmetic& arithmetic, std::span<const double> x,
                             std::size_t rows, std::size_t cols, double eps,
                             std::span<const double> gamma, Events& events) {
  require(gamma.empty() || gamma.size() == cols,
          "rms_norm: gamma must have one element per column");
  return rowwise(
      arithmetic, x, rows, cols, cols, events,
      [&](Rounders& round, const double* in, double* out, double* work, std::size_t) {
        const double n = static_cast<double>(cols);
        for (std::size_t c = 0; c < cols; ++c) work[c] = round.compute(in[c] * in[c]);
        const double mean_square =
            round.compute(accumulate_sum(round.accumulate, Summation::sequential, work, cols) / n);
        const double rrms =
            round.compute(1.0 / round.compute(std::sqrt(round.compute.sum(mean_square, eps))));
        for (std::size_t c = 0; c < cols; ++c) {
          double y = round.compute(in[c] * rrms);
          if (!gamma.empty()) y = round.compute(y * gamma[c]);
          out[c] = round.output(y);
        }
      });
}

std::vector<double> batch_norm(const Arithmetic& arithmetic, std::span<const double> x,
                               std::size_t rows, std::size_t cols, double eps,
                               std::span<const double> gamma, std::span<const double> beta,
                               Events& events) {
  require((gamma.empty() || gamma.size() == cols) && (beta.empty() || beta.size() == cols),
          "batch_norm: gamma and beta must have one element per channel");
  require(
      x.size() == rows * cols && rows > 0,
      fmt::format("batch_norm: {} elements do not make a batch of {} x {}", x.size(), rows, cols));
  require_exact(arithmetic);
  std::vector<double> y(x.size());
  // Channels are independent: the blocks of for_rows are blocks of channels.
  events += for_rows(cols, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> column(rows), deviation(rows), square(rows);
    for (std::size_t c = first; c < end; ++c) {
      Rounders round(arithmetic, e, c);
      for (std::size_t r = 0; r < rows; ++r) column[r] = x[r * cols + c];
      const double n = static_cast<double>(rows);
      const double mu = round.compute(
          accumulate_sum(round.accumulate, Summation::sequential, column.data(), rows) / n);
      for (std::size_t r = 0; r < rows; ++r) {
        deviation[r] = round.compute.sum(column[r], -mu);
        square[r] = round.compute(deviation[r] * deviation[r]);
      }
      const double variance = round.compute(
          accumulate_sum(round.accumulate, Summation::sequential, square.data(), rows) / n);
      const double rstd =
          round.compute(1.0 / round.compute(std::sqrt(round.compute.sum(variance, eps))));
      for (std::size_t r = 0; r < rows; ++r) {
        double v = round.compute(deviation[r] * rstd);
        if (!gamma.empty()) v = round.compute(v * gamma[c]);
        if (!beta.empty()) v = round.compute.sum(v, beta[c]);
        y[r * cols + c] = round.output(v);
      }
    }
  });
  return y;
}

std::vector<double> attention(const Arithmetic& arithmetic, std::span<const double> q,
                              std::span<const double> k, std::span<const double> v,
                              std::size_t queries, std::size_t keys, std::size_t d,
                              Events& events) {
  require(q.size() == queries * d && k.size() == keys * d && v.size() == keys * d && keys > 0,
          fmt::format("attention: Q ({}), K ({}) and V ({}) do not make {} queries and {} keys of "
                      "dimension {}",
                      q.size(), k.size(), v.size(), queries, keys, d));
  require_exact(arithmetic);
  std::vector<double> o(queries * d);
  events += for_rows(queries, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> products(std::max(d, keys)), scores(keys), shifted(keys), exps(keys);
    for (std::size_t i = first; i < end; ++i) {
      Rounders round(arithmetic, e, i);
      const double scale = round.compute(1.0 / round.compute(std::sqrt(static_cast<double>(d))));
      for (std::size_t j = 0; j < keys; ++j) {
        for (std::size_t t = 0; t < d; ++t)
          products[t] = round.compute(q[i * d + t] * k[j * d + t]);
        const double dot =
            accumulate_sum(round.accumulate, Summation::sequential, products.data(), d);
        scores[j] = round.compute(dot * scale);
      }
      double m = 0;
      const double total = exp_sum(round, scores.data(), keys, shifted.data(), exps.data(), m);
      for (std::size_t j = 0; j < keys; ++j) exps[j] = round.compute(exps[j] / total);
      for (std::size_t t = 0; t < d; ++t) {
        for (std::size_t j = 0; j < keys; ++j) products[j] = round.compute(exps[j] * v[j * d + t]);
        o[i * d + t] = round.output(
            accumulate_sum(round.accumulate, Summation::sequential, products.data(), keys));
      }
    }
  });
  return o;
}

std::vector<double> elementwise(const Arithmetic& arithmetic, Binary op, std::span<const double> x,
                                std::span<const double> y, Events& events) {
  require(x.size() == y.size(),
          fmt::format("elementwise: x has {} elements and y {}", x.size(), y.size()));
  require_exact(arithmetic);
  std::vector<double> z(x.size());
  Rounders round(arithmetic, events, 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    z[i] = round.output(op == Binary::add ? round.compute.sum(x[i], y[i])
                                          : round.compute(x[i] * y[i]));
  }
  return z;
}

std::vector<double> fma(const Arithmetic& arithmetic, std::span<const double> x,
                        std::span<const double> y, std::span<const double> z, Events& events) {
  require(x.size() == y.size() && x.size() == z.size(),
          fmt::format("fma: x, y and z have {}, {} and {} elements", x.size(), y.size(), z.size()));
  require_exact(arithmetic);
  std::vector<double> r(x.size());
  Rounders round(arithmetic, events, 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    r[i] = round.output(round.compute.fused(x[i], y[i], z[i]));
  }
  return r;
}

std::vector<double> cast(const Arithmetic& arithmetic, std::span<const double> x, Events& events) {
  require_exact(arithmetic);
  std::vector<double> r(x.size());
  Rounders round(arithmetic, events, 0);
  for (std::size_t i = 0; i < x.size(); ++i) r[i] = round.output(x[i]);
  return r;
}

std::vector<double> softmax_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                     std::span<const double> dy, std::size_t rows, std::size_t cols,
                                     Events& events) {
  require(dy.size() == x.size(), "softmax_backward: x and dy differ in size");
  return rowwise(
      arithmetic, x, rows, cols, cols, events,
      [&](Rounders& round, const double* in, double* out, double* work, std::size_t r) {
        double m = 0;
        const double total = exp_sum(round, in, cols, work, work + cols, m);
        const double* d = dy.data() + r * cols;
        for (std::size_t c = 0; c < cols; ++c) {
          work[cols + c] = round.compute(work[cols + c] / total);  // y
          work[c] = round.compute(d[c] * work[cols + c]);
        }
        const double inner = accumulate_sum(round.accumulate, Summation::sequential, work, cols);
        for (std::size_t c = 0; c < cols; ++c) {
          out[c] = round.output(round.compute(work[cols + c] * round.compute.sum(d[c], -inner)));
        }
      });
}

std::vector<double> log_softmax_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                         std::span<const double> dy, std::size_t rows,
                                         std::size_t cols, Events& events) {
  require(dy.size() == x.size(), "log_softmax_backward: x and dy differ in size");
  return rowwise(arithmetic, x, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t r) {
                   double m = 0;
                   const double total = exp_sum(round, in, cols, work, work + cols, m);
                   const double* d = dy.data() + r * cols;
                   const double dy_sum =
                       accumulate_sum(round.accumulate, Summation::sequential, d, cols);
                   for (std::size_t c = 0; c < cols; ++c) {
                     const double p = round.compute(work[cols + c] / total);
                     out[c] = round.output(round.compute.sum(d[c], -round.compute(p * dy_sum)));
                   }
                 });
}

std::vector<double> layer_norm_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                        std::span<const double> dy, std::size_t rows,
                                        std::size_t cols, double eps, std::span<const double> gamma,
                                        Events& events) {
  require(dy.size() == x.size(), "layer_norm_backward: x and dy differ in size");
  require(gamma.empty() || gamma.size() == cols,
          "layer_norm_backward: gamma must have one element per column");
  return rowwise(
      arithmetic, x, rows, cols, cols, events,
      [&](Rounders& round, const double* in, double* out, double* work, std::size_t r) {
        const double n = static_cast<double>(cols);
        const double* d = dy.data() + r * cols;
        const double rstd = normalize_row(round, in, cols, eps, work);
        // work[c]: xhat; work[cols + c]: g, then g * xhat.
        double g_sum = 0, gx_sum = 0;
        {
          for (std::size_t c = 0; c < cols; ++c) {
            work[c] = round.compute(work[c] * rstd);
            work[cols + c] = gamma.empty() ? d[c] : round.compute(d[c] * gamma[c]);
          }
          g_sum = accumulate_sum(round.accumulate, Summation::sequential, work + cols, cols);
          std::vector<double> gx(cols);
          for (std::size_t c = 0; c < cols; ++c) gx[c] = round.compute(work[cols + c] * work[c]);
          gx_sum = accumulate_sum(round.accumulate, Summation::sequential, gx.data(), cols);
        }
        const double g_mean = round.compute(g_sum / n);
        const double gx_mean = round.compute(gx_sum / n);
        for (std::size_t c = 0; c < cols; ++c) {
          const double centred = round.compute.sum(work[cols + c], -g_mean);
          const double v = round.compute.sum(centred, -round.compute(work[c] * gx_mean));
          out[c] = round.output(round.compute(rstd * v));
        }
      });
}

LayerNormParameterGradients layer_norm_parameter_backward(const Arithmetic& arithmetic,
                                                          std::span<const double> x,
                                                          std::span<const double> dy,
                                                          std::size_t rows, std::size_t cols,
                                                          double eps, Events& events) {
  require(dy.size() == x.size() && x.size() == rows * cols,
          "layer_norm_parameter_backward: x and dy must be rows x cols");
  require_exact(arithmetic);
  // Each row's xhat as the forward pass forms it, its products with dy rounded to compute; then
  // every column summed over the rows in order, in the accumulation format.
  std::vector<double> products(rows * cols);
  Rounders round(arithmetic, events, 0);
  std::vector<double> work(2 * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const double rstd = normalize_row(round, x.data() + r * cols, cols, eps, work.data());
    for (std::size_t c = 0; c < cols; ++c) {
      products[r * cols + c] = round.compute(dy[r * cols + c] * round.compute(work[c] * rstd));
    }
  }
  LayerNormParameterGradients g{std::vector<double>(cols), std::vector<double>(cols)};
  std::vector<double> column(rows);
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t r = 0; r < rows; ++r) column[r] = products[r * cols + c];
    g.dgamma[c] =
        round.output(accumulate_sum(round.accumulate, Summation::sequential, column.data(), rows));
    for (std::size_t r = 0; r < rows; ++r) column[r] = dy[r * cols + c];
    g.dbeta[c] =
        round.output(accumulate_sum(round.accumulate, Summation::sequential, column.data(), rows));
  }
  return g;
}

std::vector<double> cross_entropy_backward(const Arithmetic& arithmetic,
                                           std::span<const double> logits,
                                           std::span<const std::int64_t> targets, std::size_t rows,
                                           std::size_t cols, Events& events, double d_loss) {
  require(targets.size() == rows, "cross_entropy_backward: one target per row");
  for (const auto t : targets) {
    require(t >= 0 && static_cast<std::size_t>(t) < cols,
            "cross_entropy_backward: target out of range");
  }
  const double n = static_cast<double>(rows);
  return rowwise(arithmetic, logits, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double* work, std::size_t r) {
                   double m = 0;
                   const double total = exp_sum(round, in, cols, work, work + cols, m);
                   const auto target = static_cast<std::size_t>(targets[r]);
                   for (std::size_t c = 0; c < cols; ++c) {
                     double g = round.compute(work[cols + c] / total);
                     if (c == target) g = round.compute.sum(g, -1.0);
                     if (d_loss != 1) g = round.compute(g * d_loss);
                     out[c] = round.output(round.compute(g / n));
                   }
                 });
}

std::vector<double> activation_backward(const Arithmetic& arithmetic, Activation activation,
                                        std::span<const double> x, std::span<const double> dy,
                                        Events& events) {
  require(dy.size() == x.size(), "activation_backward: x and dy differ in size");
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::numbers::pi);
  return rowwise(
      arithmetic, x, 1, x.size(), x.size(), events,
      [&](Rounders& round, const double* in, double* out, double*, std::size_t) {
        auto& r = round.compute;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double v = in[i];
          if (activation == Activation::relu) {
            // ATen's threshold_backward selects (kernels/op_math.hpp relu_backward): no
            // arithmetic, so dy is not rounded to the compute format.
            out[i] = round.output(v <= 0 ? 0.0 : dy[i]);
            continue;
          }
          double derivative = 0;
          switch (activation) {
            case Activation::relu: break;
            case Activation::gelu: {
              const double cdf = r(0.5 * r.sum(1.0, r(std::erf(r(v * r(inv_sqrt2))))));
              const double pdf = r(r(inv_sqrt_2pi) * r(std::exp(r(-0.5 * r(v * v)))));
              derivative = r.sum(cdf, r(v * pdf));
              break;
            }
            case Activation::silu: {
              const double s = r(1.0 / r.sum(1.0, r(std::exp(-v))));
              derivative = r(s * r.sum(1.0, r(v * r.sum(1.0, -s))));
              break;
            }
            case Activation::gelu_tanh: {
              // ATen's GeluBackward with approximate="tanh"
              // (aten/src/ATen/native/cuda/ActivationGeluKernel.cu): t = tanh(inner),
              // (1 + t) / 2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
              const double square = r(v * v);
              const double inner = r(r(sqrt_2_over_pi) * r.sum(v, r(r(0.044715) * r(square * v))));
              const double t = r(std::tanh(inner));
              const double left = r(0.5 * v);
              const double left_derivative = r(0.5 * r.sum(1.0, t));
              const double tanh_derivative = r.sum(1.0, -r(t * t));
              const double inner_derivative =
                  r(r(sqrt_2_over_pi) * r.sum(1.0, r(r(3 * 0.044715) * square)));
              derivative = r.sum(left_derivative, r(r(left * tanh_derivative) * inner_derivative));
              break;
            }
          }
          out[i] = round.output(r(dy[i] * derivative));
        }
      });
}

std::vector<double> bias_activation(const Arithmetic& arithmetic, Activation activation,
                                    std::span<const double> x, std::size_t rows, std::size_t cols,
                                    std::span<const double> bias, Events& events) {
  require(bias.empty() || bias.size() == cols, "bias must have one element per column");
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  return rowwise(arithmetic, x, rows, cols, cols, events,
                 [&](Rounders& round, const double* in, double* out, double*, std::size_t) {
                   auto& r = round.compute;
                   for (std::size_t c = 0; c < cols; ++c) {
                     const double v = bias.empty() ? in[c] : r.sum(in[c], bias[c]);
                     double y = 0;
                     switch (activation) {
                       case Activation::relu: y = v > 0 ? v : (std::isnan(v) ? v : 0.0); break;
                       case Activation::gelu:
                         // x/2 * (1 + erf(x / sqrt 2)), each step rounded (the constant is rounded
                         // too).
                         y = r(r(0.5 * v) * r.sum(1.0, r(std::erf(r(v * r(inv_sqrt2))))));
                         break;
                       case Activation::gelu_tanh: {
                         const double cube = r(r(v * v) * v);
                         const double inner =
                             r(r(sqrt_2_over_pi) * r.sum(v, r(r(0.044715) * cube)));
                         y = r(r(0.5 * v) * r.sum(1.0, r(std::tanh(inner))));
                         break;
                       }
                       case Activation::silu: y = r(v / r.sum(1.0, r(std::exp(-v)))); break;
                     }
                     out[c] = round.output(y);
                   }
                 });
}

double cross_entropy(const Arithmetic& arithmetic, std::span<const double> logits,
                     std::span<const std::int64_t> targets, std::size_t rows, std::size_t cols,
                     double label_smoothing, Events& events) {
  require(targets.size() == rows, "cross_entropy: one target per row");
  for (const auto t : targets) {
    require(t >= 0 && static_cast<std::size_t>(t) < cols, "cross_entropy: target out of range");
  }
  const std::vector<double> log_p = log_softmax(
      Arithmetic{arithmetic.compute, arithmetic.accumulate, arithmetic.compute, arithmetic.mode},
      logits, rows, cols, events);
  Rounders round(arithmetic, events, rows);
  std::vector<double> losses(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double loss = -log_p[r * cols + static_cast<std::size_t>(targets[r])];
    if (label_smoothing != 0) {
      const double all =
          accumulate_sum(round.accumulate, Summation::sequential, log_p.data() + r * cols, cols);
      const double smooth = round.compute(-all / static_cast<double>(cols));
      const double keep = round.compute.sum(1.0, -label_smoothing);
      const double spread = round.compute(label_smoothing);
      loss = round.compute.sum(round.compute(keep * loss), round.compute(spread * smooth));
    }
    losses[r] = loss;
  }
  const double total = accumulate_sum(round.accumulate, Summation::sequential, losses.data(), rows);
  return round.output(round.compute(total / static_cast<double>(rows)));
}

}  // namespace ampbench::backends::cpu
