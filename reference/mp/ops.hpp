// Op references, written once as templates over the scalar type T: Real (multiprecision.hpp) for
// references, Asymptotic (asymptotic.hpp) for those of the softmax family, double for tests and for
// a quick look. Each computes the mathematical function that
// defines the op, in T's arithmetic, with the straightforward formula; the docs give each formula
// (docs/reference-multiprecision.md). Constants (pi, sqrt 2, 1/sqrt d) are computed in T, so a
// Real reference is not limited to the 53 bits of a double literal.
//
// Where the defining formula would cancel, an identical one that does not is used (1 + erf(z) =
// erfc(-z), 1 + tanh(u) = 2 / (1 + exp(-2u)), log(1 + s) = log1p(s), deviations from a corrected
// mean): at P bits a reference then keeps about P correct bits wherever the op is well conditioned.
//
// Tensors are row-major std::span / std::vector; the dimensions are passed beside them and
// checked (std::invalid_argument). An empty span stands for an absent optional operand.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numbers>
#include <span>
#include <stdexcept>
#include <vector>

#include "reference/mp/asymptotic.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::reference {

// The double overloads of the scalar functions that multiprecision.hpp declares for Real.
namespace math {
inline double exp(double x) {
  return std::exp(x);
}
inline double log(double x) {
  return std::log(x);
}
inline double tanh(double x) {
  return std::tanh(x);
}
inline double erf(double x) {
  return std::erf(x);
}
inline double erfc(double x) {
  return std::erfc(x);
}
inline double log1p(double x) {
  return std::log1p(x);
}
inline double sqrt(double x) {
  return std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}  // two roundings: a test type only
inline double abs(double x) {
  return std::fabs(x);
}
inline double pi(double) {
  return std::numbers::pi;
}
inline double decimal(const char* digits, double) {
  return std::strtod(digits, nullptr);
}
}  // namespace math

namespace ops {

namespace detail {
inline void require(bool condition, const char* what) {
  if (!condition) throw std::invalid_argument(what);
}
}  // namespace detail

// ---- elementwise ---------------------------------------------------------------------------

enum class Activation : std::uint8_t {
  exp,
  log,
  tanh,
  erf,
  sqrt,
  rsqrt,
  relu,
  gelu,       // x/2 * (1 + erf(x / sqrt 2)), PyTorch approximate='none'
  gelu_tanh,  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), approximate='tanh'
  silu,       // x * sigmoid(x) = x / (1 + exp(-x))
};
inline constexpr Activation kAllActivations[] = {
    Activation::exp,   Activation::log,  Activation::tanh, Activation::erf,       Activation::sqrt,
    Activation::rsqrt, Activation::relu, Activation::gelu, Activation::gelu_tanh, Activation::silu,
};

// 0.044715 is part of the definition of the tanh approximation (Hendrycks and Gimpel, 2016), as
// written in decimal; it is read at T's precision.
template <class T>
T gelu_tanh_cubic(const T& like) {
  return math::decimal("0.044715", like);
}

// sqrt(2/pi), the scale of the tanh approximation.
template <class T>
T gelu_tanh_scale(const T& like) {
  return math::sqrt(T(2) / math::pi(like));
}

namespace detail {
// 1 / (1 + exp(-z)), the logistic function, without cancellation on either side.
template <class T>
T sigmoid(const T& z) {
  return 1 / (1 + math::exp(-z));
}
// The argument u of tanh in the tanh approximation of GELU.
template <class T>
T gelu_tanh_argument(const T& x) {
  return gelu_tanh_scale(x) * (x + gelu_tanh_cubic(x) * x * x * x);
}
}  // namespace detail

template <class T>
T activate(Activation f, const T& x) {
  switch (f) {
    case Activation::exp: return math::exp(x);
    case Activation::log: return math::log(x);
    case Activation::tanh: return math::tanh(x);
    case Activation::erf: return math::erf(x);
    case Activation::sqrt: return math::sqrt(x);
    case Activation::rsqrt: return math::rsqrt(x);
    case Activation::relu:
      return x > 0 ? x : (x != x ? x : T(0));  // NaN kept, as torch.relu
    // x/2 (1 + erf(x / sqrt 2)), with 1 + erf(z) = erfc(-z).
    case Activation::gelu: return x / 2 * math::erfc(-x / math::sqrt(T(2)));
    // x/2 (1 + tanh u), with 1 + tanh u = 2 sigmoid(2u).
    case Activation::gelu_tanh: return x * detail::sigmoid(2 * detail::gelu_tanh_argument(x));
    case Activation::silu: return x * detail::sigmoid(x);
  }
  throw std::invalid_argument("activate: unknown activation");
}

// f'(x). relu'(0) is 0, as PyTorch's backward takes it (the gradient passes where x > 0).
// 1 - tanh(u)^2 is written 4 sigmoid(2u) sigmoid(-2u), exact in real arithmetic and free of
// cancellation for large |u|.
template <class T>
T activation_derivative(Activation f, const T& x) {
  switch (f) {
    case Activation::exp: return math::exp(x);
    case Activation::log: return 1 / x;
    case Activation::tanh: return 4 * detail::sigmoid(2 * x) * detail::sigmoid(-2 * x);
    case Activation::erf: return 2 / math::sqrt(math::pi(x)) * math::exp(-x * x);
    case Activation::sqrt: return 1 / (2 * math::sqrt(x));
    case Activation::rsqrt: return -math::rsqrt(x) / (2 * x);
    case Activation::relu: return x > 0 ? T(1) : T(0);
    case Activation::gelu: {
      // Phi(x) + x phi(x), phi the standard normal density.
      const T density = math::exp(-x * x / 2) / math::sqrt(2 * math::pi(x));
      return math::erfc(-x / math::sqrt(T(2))) / 2 + x * density;
    }
    case Activation::gelu_tanh: {
      // (1 + t)/2 + x/2 (1 - t^2) u'(x), t = tanh u, u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
      const T a = gelu_tanh_cubic(x);
      const T u = detail::gelu_tanh_argument(x);
      const T up = detail::sigmoid(2 * u);
      const T down = detail::sigmoid(-2 * u);
      return up + 2 * x * up * down * gelu_tanh_scale(x) * (1 + 3 * a * x * x);
    }
    case Activation::silu: {
      // sigmoid(x) (1 + x (1 - sigmoid(x))), with 1 - sigmoid(x) = sigmoid(-x).
      return detail::sigmoid(x) * (1 + x * detail::sigmoid(-x));
    }
  }
  throw std::invalid_argument("activation_derivative: unknown activation");
}

template <class T>
std::vector<T> elementwise(Activation f, std::span<const T> x) {
  std::vector<T> y;
  y.reserve(x.size());
  for (const T& v : x) y.push_back(activate(f, v));
  return y;
}

// dx = dy * f'(x).
template <class T>
std::vector<T> elementwise_backward(Activation f, std::span<const T> x, std::span<const T> dy) {
  detail::require(x.size() == dy.size(), "elementwise_backward: x and dy differ in size");
  std::vector<T> dx;
  dx.reserve(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    // relu's backward selects, as ATen's threshold_backward: x <= 0 ? 0 : dy.
    dx.push_back(f == Activation::relu ? (x[i] <= 0 ? T(0) : dy[i])
                                       : dy[i] * activation_derivative(f, x[i]));
  }
  return dx;
}

// ---- reductions ----------------------------------------------------------------------------

template <class T>
T sum(std::span<const T> x) {
  T total = 0;
  for (const T& v : x) total += v;
  return total;
}

template <class T>
T mean(std::span<const T> x) {
  detail::require(!x.empty(), "mean: empty input");
  return sum(x) / T(x.size());
}

template <class T>
T dot(std::span<const T> a, std::span<const T> b) {
  detail::require(a.size() == b.size(), "dot: sizes differ");
  T total = 0;
  for (std::size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
  return total;
}

// sqrt(sum x^2).
template <class T>
T l2_norm(std::span<const T> x) {
  return math::sqrt(dot(x, x));
}

// ---- gemm ----------------------------------------------------------------------------------

// C = A B + C_in + bias: A is m x k, B is k x n, C_in (optional) m x n, bias (optional) n, added
// to every row.
template <class T>
std::vector<T> gemm(std::size_t m, std::size_t n, std::size_t k, std::span<const T> a,
                    std::span<const T> b, std::span<const T> c_in = {},
                    std::span<const T> bias = {}) {
  detail::require(a.size() == m * k && b.size() == k * n, "gemm: A or B has the wrong size");
  detail::require(c_in.empty() || c_in.size() == m * n, "gemm: C_in has the wrong size");
  detail::require(bias.empty() || bias.size() == n, "gemm: bias has the wrong size");
  std::vector<T> c(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      T total = 0;
      for (std::size_t p = 0; p < k; ++p) total += a[i * k + p] * b[p * n + j];
      if (!c_in.empty()) total += c_in[i * n + j];
      if (!bias.empty()) total += bias[j];
      c[i * n + j] = total;
    }
  }
  return c;
}

template <class T>
struct GemmGradients {
  std::vector<T> da;  // dC B^T, m x k
  std::vector<T> db;  // A^T dC, k x n
};

// The gradients of gemm for the upstream gradient dc (m x n). Those of C_in and bias are dc and
// its column sums.
template <class T>
GemmGradients<T> gemm_backward(std::size_t m, std::size_t n, std::size_t k, std::span<const T> a,
                               std::span<const T> b, std::span<const T> dc) {
  detail::require(a.size() == m * k && b.size() == k * n && dc.size() == m * n,
                  "gemm_backward: A, B or dC has the wrong size");
  GemmGradients<T> g{std::vector<T>(m * k), std::vector<T>(k * n)};
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t p = 0; p < k; ++p) {
      T total = 0;
      for (std::size_t j = 0; j < n; ++j) total += dc[i * n + j] * b[p * n + j];
      g.da[i * k + p] = total;
    }
  }
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t j = 0; j < n; ++j) {
      T total = 0;
      for (std::size_t i = 0; i < m; ++i) total += a[i * k + p] * dc[i * n + j];
      g.db[p * n + j] = total;
    }
  }
  return g;
}

// ---- softmax family, over the last dimension of a rows x cols tensor -----------------------

namespace detail {
// A row's exponentials shifted by its maximum: exp(x_j - top), the one at the maximum being 1,
// and the sum of the others, so that the total is 1 + rest and its log is log1p(rest), exact
// to P bits even when the other terms are negligible. Subtracting the maximum does not change
// the mathematical function; it keeps exp within MPFR's exponent range for any double input.
template <class T>
struct ShiftedExponentials {
  T top;
  std::size_t top_index;
  std::vector<T> exponentials;
  T rest;
};
template <class T>
ShiftedExponentials<T> shifted_exponentials(std::span<const T> row) {
  const auto top = std::max_element(row.begin(), row.end());
  ShiftedExponentials<T> out{*top, static_cast<std::size_t>(top - row.begin()), {}, T(0)};
  out.exponentials.reserve(row.size());
  for (auto it = row.begin(); it != row.end(); ++it) {
    out.exponentials.push_back(it == top ? T(1) : math::exp(*it - *top));
    if (it != top) out.rest += out.exponentials.back();
  }
  return out;
}

// sum_j e_j w_j / sum_j e_j (e: the row's shifted exponentials, total: their sum, weight(j):
// w_j), as w_m + sum_j e_j (w_j - w_m) / total with m the maximum's index: a w_j equal to w_m
// adds an exact 0, so equal weights near the maximum cancel exactly (and leave nothing for the
// reciprocal's series in Asymptotic to cancel).
template <class T, class Weight>
T weighted_mean(const ShiftedExponentials<T>& e, const T& total, Weight weight) {
  const T at_top = weight(e.top_index);
  T shifted = 0;
  for (std::size_t j = 0; j < e.exponentials.size(); ++j) {
    shifted += e.exponentials[j] * (weight(j) - at_top);
  }
  return at_top + shifted / total;
}
}  // namespace detail

// log sum_j exp(x_j) for each row, computed as max + log1p(sum over the others of exp(x_j - max)).
template <class T>
std::vector<T> logsumexp(std::span<const T> x, std::size_t rows, std::size_t cols) {
  detail::require(x.size() == rows * cols && cols > 0, "logsumexp: wrong size");
  std::vector<T> out;
  out.reserve(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto e = detail::shifted_exponentials(x.subspan(r * cols, cols));
    out.push_back(e.top + math::log1p(e.rest));
  }
  return out;
}

// exp(x_ij) / sum_j exp(x_ij).
template <class T>
std::vector<T> softmax(std::span<const T> x, std::size_t rows, std::size_t cols) {
  detail::require(x.size() == rows * cols && cols > 0, "softmax: wrong size");
  std::vector<T> y;
  y.reserve(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto e = detail::shifted_exponentials(x.subspan(r * cols, cols));
    const T total = 1 + e.rest;
    for (const T& v : e.exponentials) y.push_back(v / total);
  }
  return y;
}

// x_ij - logsumexp_j(x_ij), computed as (x_ij - max) - log1p(rest): near a dominant logit the
// result is tiny and neither term loses it.
template <class T>
std::vector<T> log_softmax(std::span<const T> x, std::size_t rows, std::size_t cols) {
  detail::require(x.size() == rows * cols && cols > 0, "log_softmax: wrong size");
  std::vector<T> y;
  y.reserve(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = x.subspan(r * cols, cols);
    const auto e = detail::shifted_exponentials(row);
    const T log_total = math::log1p(e.rest);
    for (const T& v : row) y.push_back((v - e.top) - log_total);
  }
  return y;
}

// dx = y * (dy - sum_j dy_j y_j), y = softmax(x), computed as e_j (dy_j - M) / S with
// e_j = exp(x_j - max), S = sum_j e_j and M = sum_j dy_j e_j / S (detail::weighted_mean): each
// division comes last, so that where the exponentials are exact (1 at the maximum, the others
// beyond MPFR's range, as Asymptotic keeps them) a dyadic result is computed exactly.
template <class T>
std::vector<T> softmax_backward(std::span<const T> x, std::span<const T> dy, std::size_t rows,
                                std::size_t cols) {
  detail::require(dy.size() == x.size() && x.size() == rows * cols && cols > 0,
                  "softmax_backward: x and dy differ in size");
  std::vector<T> dx(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto e = detail::shifted_exponentials(x.subspan(r * cols, cols));
    const T total = 1 + e.rest;
    const T inner =  // sum_j dy_j y_j
        detail::weighted_mean(e, total, [&](std::size_t j) { return dy[r * cols + j]; });
    for (std::size_t j = 0; j < cols; ++j) {
      dx[r * cols + j] = e.exponentials[j] * (dy[r * cols + j] - inner) / total;
    }
  }
  return dx;
}

// dx = dy - softmax(x) * sum_j dy_j, computed as dy_j - e_j D / S (one division, last).
template <class T>
std::vector<T> log_softmax_backward(std::span<const T> x, std::span<const T> dy, std::size_t rows,
                                    std::size_t cols) {
  detail::require(dy.size() == x.size() && x.size() == rows * cols && cols > 0,
                  "log_softmax_backward: x and dy differ in size");
  std::vector<T> dx(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto e = detail::shifted_exponentials(x.subspan(r * cols, cols));
    const T total = 1 + e.rest;
    const T dy_sum = sum(dy.subspan(r * cols, cols));
    for (std::size_t j = 0; j < cols; ++j) {
      dx[r * cols + j] = dy[r * cols + j] - e.exponentials[j] * dy_sum / total;
    }
  }
  return dx;
}

// ---- normalizations ------------------------------------------------------------------------

namespace detail {
// The mean of a row and its biased variance, two-pass. The mean m is rounded, and with it every
// deviation x - m, by up to an ulp of m: far more than the deviations themselves when the row is
// nearly constant. So the deviations are taken as (x - m) - c, with c = sum(x - m) / n the
// rounding error of m (x - m is exact when x is close to m): their error is then relative to
// them, and a nearly constant row keeps its precision.
template <class T>
struct Moments {
  T rounded_mean;
  T correction;
  T variance;
  T mean() const { return rounded_mean + correction; }
  T deviation(const T& x) const { return (x - rounded_mean) - correction; }
};
template <class T>
Moments<T> moments(std::span<const T> row) {
  Moments<T> m{ops::mean(row), T(0), T(0)};
  for (const T& v : row) m.correction += v - m.rounded_mean;
  m.correction /= T(row.size());
  for (const T& v : row) m.variance += m.deviation(v) * m.deviation(v);
  m.variance /= T(row.size());
  return m;
}

// The moments of channel c of a batch x channels x spatial tensor: over its batch * spatial values.
template <class T>
Moments<T> channel_moments(std::span<const T> x, std::size_t batch, std::size_t channels,
                           std::size_t spatial, std::size_t c) {
  std::vector<T> values;
  values.reserve(batch * spatial);
  for (std::size_t n = 0; n < batch; ++n) {
    for (std::size_t s = 0; s < spatial; ++s) values.push_back(x[(n * channels + c) * spatial + s]);
  }
  return moments(std::span<const T>(values));
}
}  // namespace detail

// y = (x - mean) / sqrt(var + eps) * gamma + beta over each row of cols elements; var is the
// biased variance (divided by cols), as torch.nn.LayerNorm uses; gamma and beta (cols) optional.
// eps is the value passed: the binary64 1e-5 is not 10^-5.
template <class T>
std::vector<T> layer_norm(std::span<const T> x, std::size_t rows, std::size_t cols, const T& eps,
                          std::span<const T> gamma = {}, std::span<const T> beta = {}) {
  detail::require(x.size() == rows * cols && cols > 0, "layer_norm: wrong size");
  detail::require(gamma.empty() || gamma.size() == cols, "layer_norm: gamma has the wrong size");
  detail::require(beta.empty() || beta.size() == cols, "layer_norm: beta has the wrong size");
  std::vector<T> y(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = x.subspan(r * cols, cols);
    const detail::Moments<T> m = detail::moments(row);
    const T inverse_std = math::rsqrt(m.variance + eps);
    for (std::size_t j = 0; j < cols; ++j) {
      T v = m.deviation(row[j]) * inverse_std;
      if (!gamma.empty()) v *= gamma[j];
      if (!beta.empty()) v += beta[j];
      y[r * cols + j] = v;
    }
  }
  return y;
}

template <class T>
struct LayerNormGradients {
  std::vector<T> dx;      // rows x cols
  std::vector<T> dgamma;  // cols: sum over rows of dy * xhat
  std::vector<T> dbeta;   // cols: sum over rows of dy
};

// With xhat = (x - mean) / s, s = sqrt(var + eps), g = dy * gamma:
// dx = (g - mean(g) - xhat * mean(g * xhat)) / s. gamma empty means 1.
template <class T>
LayerNormGradients<T> layer_norm_backward(std::span<const T> x, std::span<const T> dy,
                                          std::size_t rows, std::size_t cols, const T& eps,
                                          std::span<const T> gamma = {}) {
  detail::require(x.size() == rows * cols && dy.size() == x.size() && cols > 0,
                  "layer_norm_backward: wrong size");
  detail::require(gamma.empty() || gamma.size() == cols,
                  "layer_norm_backward: gamma has the wrong size");
  LayerNormGradients<T> out{std::vector<T>(x.size()), std::vector<T>(cols, T(0)),
                            std::vector<T>(cols, T(0))};
  std::vector<T> xhat(cols);
  std::vector<T> g(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = x.subspan(r * cols, cols);
    const detail::Moments<T> m = detail::moments(row);
    const T inverse_std = math::rsqrt(m.variance + eps);
    T g_mean = 0;
    T g_xhat_mean = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      const T& d = dy[r * cols + j];
      xhat[j] = m.deviation(row[j]) * inverse_std;
      g[j] = gamma.empty() ? d : d * gamma[j];
      g_mean += g[j];
      g_xhat_mean += g[j] * xhat[j];
      out.dgamma[j] += d * xhat[j];
      out.dbeta[j] += d;
    }
    g_mean /= T(cols);
    g_xhat_mean /= T(cols);
    for (std::size_t j = 0; j < cols; ++j) {
      out.dx[r * cols + j] = (g[j] - g_mean - xhat[j] * g_xhat_mean) * inverse_std;
    }
  }
  return out;
}

// y = x / sqrt(mean(x^2) + eps) * gamma over each row; gamma (cols) optional.
template <class T>
std::vector<T> rms_norm(std::span<const T> x, std::size_t rows, std::size_t cols, const T& eps,
                        std::span<const T> gamma = {}) {
  detail::require(x.size() == rows * cols && cols > 0, "rms_norm: wrong size");
  detail::require(gamma.empty() || gamma.size() == cols, "rms_norm: gamma has the wrong size");
  std::vector<T> y(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = x.subspan(r * cols, cols);
    const T inverse_rms = math::rsqrt(dot(row, row) / T(cols) + eps);
    for (std::size_t j = 0; j < cols; ++j) {
      y[r * cols + j] = gamma.empty() ? row[j] * inverse_rms : row[j] * inverse_rms * gamma[j];
    }
  }
  return y;
}

template <class T>
struct BatchNormStatistics {
  std::vector<T> mean;               // per channel
  std::vector<T> variance;           // biased (divided by N*H*W): the one that normalizes
  std::vector<T> unbiased_variance;  // divided by N*H*W - 1: the one PyTorch's running_var takes
  std::vector<T> y;                  // (x - mean) / sqrt(variance + eps) * gamma + beta
};

// Training-mode batch normalization of an N x C x H x W tensor (spatial = H*W): statistics per
// channel over N, H and W. gamma and beta (C) optional.
template <class T>
BatchNormStatistics<T> batch_norm_training(std::span<const T> x, std::size_t batch,
                                           std::size_t channels, std::size_t spatial, const T& eps,
                                           std::span<const T> gamma = {},
                                           std::span<const T> beta = {}) {
  const std::size_t count = batch * spatial;
  detail::require(x.size() == batch * channels * spatial && count > 1,
                  "batch_norm_training: wrong size, or a single value per channel");
  detail::require(gamma.empty() || gamma.size() == channels,
                  "batch_norm_training: gamma has the wrong size");
  detail::require(beta.empty() || beta.size() == channels,
                  "batch_norm_training: beta has the wrong size");
  BatchNormStatistics<T> out{{}, {}, {}, std::vector<T>(x.size())};
  const auto at = [&](std::size_t n, std::size_t c, std::size_t s) {
    return (n * channels + c) * spatial + s;
  };
  for (std::size_t c = 0; c < channels; ++c) {
    const detail::Moments<T> m = detail::channel_moments(x, batch, channels, spatial, c);
    out.mean.push_back(m.mean());
    out.variance.push_back(m.variance);
    out.unbiased_variance.push_back(m.variance * T(count) / T(count - 1));
    const T inverse_std = math::rsqrt(m.variance + eps);
    for (std::size_t n = 0; n < batch; ++n) {
      for (std::size_t s = 0; s < spatial; ++s) {
        T v = m.deviation(x[at(n, c, s)]) * inverse_std;
        if (!gamma.empty()) v *= gamma[c];
        if (!beta.empty()) v += beta[c];
        out.y[at(n, c, s)] = v;
      }
    }
  }
  return out;
}

template <class T>
struct BatchNormGradients {
  std::vector<T> dx;      // batch x channels x spatial
  std::vector<T> dgamma;  // channels: sum of dy * xhat
  std::vector<T> dbeta;   // channels: sum of dy
};

// The backward of batch_norm_training for the upstream gradient dy: with xhat = (x - mean) / s,
// s = sqrt(var + eps), over the count = batch * spatial values of a channel,
// dx = gamma / s * (dy - mean(dy) - xhat * mean(dy * xhat)). gamma empty means 1.
template <class T>
BatchNormGradients<T> batch_norm_backward(std::span<const T> x, std::span<const T> dy,
                                          std::size_t batch, std::size_t channels,
                                          std::size_t spatial, const T& eps,
                                          std::span<const T> gamma = {}) {
  const std::size_t count = batch * spatial;
  detail::require(x.size() == batch * channels * spatial && dy.size() == x.size() && count > 0,
                  "batch_norm_backward: wrong size");
  detail::require(gamma.empty() || gamma.size() == channels,
                  "batch_norm_backward: gamma has the wrong size");
  BatchNormGradients<T> out{std::vector<T>(x.size()), {}, {}};
  const auto at = [&](std::size_t n, std::size_t c, std::size_t s) {
    return (n * channels + c) * spatial + s;
  };
  for (std::size_t c = 0; c < channels; ++c) {
    const detail::Moments<T> m = detail::channel_moments(x, batch, channels, spatial, c);
    const T inverse_std = math::rsqrt(m.variance + eps);
    T sum_dy = 0;
    T sum_dy_xhat = 0;
    for (std::size_t n = 0; n < batch; ++n) {
      for (std::size_t s = 0; s < spatial; ++s) {
        const T& d = dy[at(n, c, s)];
        sum_dy += d;
        sum_dy_xhat += d * m.deviation(x[at(n, c, s)]) * inverse_std;
      }
    }
    out.dgamma.push_back(sum_dy_xhat);
    out.dbeta.push_back(sum_dy);
    const T scale = gamma.empty() ? inverse_std : T(gamma[c] * inverse_std);
    const T mean_dy = sum_dy / T(count);
    const T mean_dy_xhat = sum_dy_xhat / T(count);
    for (std::size_t n = 0; n < batch; ++n) {
      for (std::size_t s = 0; s < spatial; ++s) {
        const T xhat = m.deviation(x[at(n, c, s)]) * inverse_std;
        out.dx[at(n, c, s)] = scale * (dy[at(n, c, s)] - mean_dy - xhat * mean_dy_xhat);
      }
    }
  }
  return out;
}

// ---- losses --------------------------------------------------------------------------------

// torch.nn.CrossEntropyLoss with class-index targets, reduction='mean', no weights, no
// ignore_index (https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html): with
// label smoothing e over C classes the target distribution is q = (1 - e) onehot(t) + e / C, and
// loss = mean over rows of -sum_c q_c log_softmax(x)_c.
template <class T>
T cross_entropy(std::span<const T> logits, std::size_t rows, std::size_t classes,
                std::span<const std::int64_t> targets, const T& label_smoothing = T(0)) {
  detail::require(logits.size() == rows * classes && targets.size() == rows && rows > 0,
                  "cross_entropy: wrong size");
  const std::vector<T> log_p = log_softmax(logits, rows, classes);
  T total = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto t = static_cast<std::size_t>(targets[r]);
    detail::require(targets[r] >= 0 && t < classes, "cross_entropy: target out of range");
    T row_loss = -(1 - label_smoothing) * log_p[r * classes + t];
    if (label_smoothing != 0) {
      row_loss -= label_smoothing / T(classes) *
                  sum(std::span<const T>(log_p).subspan(r * classes, classes));
    }
    total += row_loss;
  }
  return total / T(rows);
}

// d loss / d logits = (softmax(x) - q) / rows, times the upstream gradient d_loss.
template <class T>
std::vector<T> cross_entropy_backward(std::span<const T> logits, std::size_t rows,
                                      std::size_t classes, std::span<const std::int64_t> targets,
                                      const T& label_smoothing = T(0), const T& d_loss = T(1)) {
  detail::require(logits.size() == rows * classes && targets.size() == rows && rows > 0,
                  "cross_entropy_backward: wrong size");
  std::vector<T> dx = softmax(logits, rows, classes);
  const T off_target = label_smoothing / T(classes);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto t = static_cast<std::size_t>(targets[r]);
    detail::require(targets[r] >= 0 && t < classes, "cross_entropy_backward: target out of range");
    for (std::size_t c = 0; c < classes; ++c) {
      const T q = c == t ? 1 - label_smoothing + off_target : off_target;
      dx[r * classes + c] = (dx[r * classes + c] - q) * d_loss / T(rows);
    }
  }
  return dx;
}

// ---- attention -----------------------------------------------------------------------------

// softmax(Q K^T / sqrt(d)) V for one head: Q is queries x d, K keys x d, V keys x value_dim; the
// result is queries x value_dim. No mask, no dropout.
template <class T>
std::vector<T> attention(std::span<const T> q, std::span<const T> k, std::span<const T> v,
                         std::size_t queries, std::size_t keys, std::size_t d,
                         std::size_t value_dim) {
  detail::require(q.size() == queries * d && k.size() == keys * d && v.size() == keys * value_dim,
                  "attention: Q, K or V has the wrong size");
  if (keys == 1) {
    // softmax of one score is exactly 1: every output row is V's row, exactly. Computing the
    // score would raise MPFR's inexact flag for nothing, and Ziv's strategy reads that flag.
    std::vector<T> out;
    for (std::size_t i = 0; i < queries; ++i) out.insert(out.end(), v.begin(), v.end());
    return out;
  }
  const T scale = math::rsqrt(T(d));
  std::vector<T> scores(keys);
  std::vector<T> out(queries * value_dim);
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t j = 0; j < keys; ++j) {
      scores[j] = dot(q.subspan(i * d, d), k.subspan(j * d, d)) * scale;
    }
    // (sum_j e_j v_j) / sum_j e_j, e_j = exp(s_j - max): the division last, as softmax_backward.
    const auto e = detail::shifted_exponentials(std::span<const T>(scores));
    const T total = 1 + e.rest;
    for (std::size_t t = 0; t < value_dim; ++t) {
      out[i * value_dim + t] =
          detail::weighted_mean(e, total, [&](std::size_t j) { return v[j * value_dim + t]; });
    }
  }
  return out;
}

}  // namespace ops

}  // namespace ampbench::reference
