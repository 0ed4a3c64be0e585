// The op references at the default 257 bits against the same functions written independently with
// MPFR's C API at 4096 bits (the defining formulas, literally: at 4096 bits even their
// cancellations leave over a thousand correct bits on the inputs used), on random and adversarial
// inputs; gradients against central differences at 2048 bits and hand-derived values; and the
// double instantiation against the Real one.
//
// Tolerances: every op is a short chain of correctly rounded operations at P = 257 bits on exact
// inputs. Its relative error is at most (number of roundings) * (condition number) * 2^-257, with
// at most 2^6 roundings per output for the sizes here; the inputs are chosen so that the
// condition number stays below 2^11 (or the test measures it and scales the tolerance). Hence
// 2^-240 relative, and 2^-236 for the elementwise functions at |x| up to 30, whose condition
// |x f'(x) / f(x)| reaches 2 * 30^2 for gelu's tail.
#include "reference/mp/ops.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "reference/mp/multiprecision.hpp"

namespace ampbench::reference {
namespace {

using ops::Activation;

// x in decimal, 40 digits.
std::string text(const Real& x) {
  char digits[80];
  mpfr_snprintf(digits, sizeof digits, "%.40Re", x.backend().data());
  return digits;
}

constexpr mpfr_prec_t kOracleBits = 4096;

// An MPFR number at kOracleBits with the arithmetic the formulas below need, each operation one
// MPFR call rounded to nearest.
class Big {
 public:
  Big() { mpfr_init2(v_, kOracleBits); }
  Big(double x) : Big() { mpfr_set_d(v_, x, MPFR_RNDN); }  // NOLINT: implicit, for formulas
  Big(const Big& o) : Big() { mpfr_set(v_, o.v_, MPFR_RNDN); }
  Big& operator=(const Big& o) {
    mpfr_set(v_, o.v_, MPFR_RNDN);
    return *this;
  }
  ~Big() { mpfr_clear(v_); }
  mpfr_ptr get() { return v_; }
  mpfr_srcptr get() const { return v_; }

  using Unary = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);
  using Binary = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t);
  friend Big apply(Unary f, const Big& a) {
    Big r;
    f(r.v_, a.v_, MPFR_RNDN);
    return r;
  }
  friend Big apply(Binary f, const Big& a, const Big& b) {
    Big r;
    f(r.v_, a.v_, b.v_, MPFR_RNDN);
    return r;
  }
  friend Big operator+(const Big& a, const Big& b) { return apply(mpfr_add, a, b); }
  friend Big operator-(const Big& a, const Big& b) { return apply(mpfr_sub, a, b); }
  friend Big operator*(const Big& a, const Big& b) { return apply(mpfr_mul, a, b); }
  friend Big operator/(const Big& a, const Big& b) { return apply(mpfr_div, a, b); }
  friend Big operator-(const Big& a) { return apply(mpfr_neg, a); }
  Big& operator+=(const Big& b) { return *this = *this + b; }
  friend bool operator>(const Big& a, const Big& b) { return mpfr_greater_p(a.v_, b.v_); }

 private:
  mpfr_t v_;
};

Big exp(const Big& x) {
  return apply(mpfr_exp, x);
}
Big log(const Big& x) {
  return apply(mpfr_log, x);
}
Big tanh(const Big& x) {
  return apply(mpfr_tanh, x);
}
Big erf(const Big& x) {
  return apply(mpfr_erf, x);
}
Big sqrt(const Big& x) {
  return apply(mpfr_sqrt, x);
}
Big pi() {
  Big r;
  mpfr_const_pi(r.get(), MPFR_RNDN);
  return r;
}
Big gelu_cubic() {
  Big r;
  mpfr_set_str(r.get(), "0.044715", 10, MPFR_RNDN);
  return r;
}

// |got - want| / |want|, or |got| when want is zero, in MPFR.
double relative_error(const Real& got, const Big& want) {
  Big difference;
  mpfr_sub(difference.get(), got.backend().data(), want.get(), MPFR_RNDN);
  mpfr_abs(difference.get(), difference.get(), MPFR_RNDN);
  if (!mpfr_zero_p(want.get())) {
    mpfr_div(difference.get(), difference.get(), want.get(), MPFR_RNDN);
    mpfr_abs(difference.get(), difference.get(), MPFR_RNDN);
  }
  return mpfr_get_d(difference.get(), MPFR_RNDU);
}

void expect_close(const std::vector<Real>& got, const std::vector<Big>& want, double tolerance,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double error = relative_error(got[i], want[i]);
    EXPECT_LE(error, tolerance) << what << " element " << i << ": relative error 2^"
                                << std::log2(error) << ", want "
                                << mpfr_get_d(want[i].get(), MPFR_RNDN);
  }
}

std::vector<Real> reals(const std::vector<double>& x) {
  std::vector<Real> r;
  for (const double v : x) r.push_back(to_real(v));
  return r;
}

std::vector<double> uniform(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> x(n);
  for (double& v : x) v = std::uniform_real_distribution<double>(lo, hi)(rng);
  return x;
}

const double kTolerance = std::ldexp(1.0, -240);
const double kElementwiseTolerance = std::ldexp(1.0, -236);

// ---- elementwise ---------------------------------------------------------------------------

Big activate_big(Activation f, const Big& x) {
  const Big one = 1;
  const Big two = 2;
  switch (f) {
    case Activation::exp: return exp(x);
    case Activation::log: return log(x);
    case Activation::tanh: return tanh(x);
    case Activation::erf: return erf(x);
    case Activation::sqrt: return sqrt(x);
    case Activation::rsqrt: return one / sqrt(x);
    case Activation::relu: return x > Big(0) ? x : Big(0);
    case Activation::gelu: return x / two * (one + erf(x / sqrt(two)));
    case Activation::gelu_tanh:
      return Big(0.5) * x * (one + tanh(sqrt(two / pi()) * (x + gelu_cubic() * x * x * x)));
    case Activation::silu: return x / (one + exp(-x));
  }
  return Big();
}

Big derivative_big(Activation f, const Big& x) {
  const Big one = 1;
  const Big two = 2;
  switch (f) {
    case Activation::exp: return exp(x);
    case Activation::log: return one / x;
    case Activation::tanh: return one - tanh(x) * tanh(x);
    case Activation::erf: return two / sqrt(pi()) * exp(-x * x);
    case Activation::sqrt: return one / (two * sqrt(x));
    case Activation::rsqrt: return -one / (two * x * sqrt(x));
    case Activation::relu: return x > Big(0) ? one : Big(0);
    case Activation::gelu:
      return (one + erf(x / sqrt(two))) / two + x * exp(-x * x / two) / sqrt(two * pi());
    case Activation::gelu_tanh: {
      const Big a = gelu_cubic();
      const Big scale = sqrt(two / pi());
      const Big t = tanh(scale * (x + a * x * x * x));
      return (one + t) / two + x / two * (one - t * t) * scale * (one + Big(3) * a * x * x);
    }
    case Activation::silu: {
      const Big s = one / (one + exp(-x));
      return s + x * s * (one - s);
    }
  }
  return Big();
}

bool positive_domain(Activation f) {
  return f == Activation::log || f == Activation::sqrt || f == Activation::rsqrt;
}

// Random inputs in [-20, 20] and the tails and tiny arguments where a naive formula cancels or
// underflows; absolute values for the functions defined on x > 0.
std::vector<double> activation_inputs(Activation f) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(f) + 10);
  std::vector<double> x = uniform(rng, 40, -20, 20);
  for (const double v : {-30.0, -12.5, -5.0, -1e-300, 0x1p-30, 1.0 + 0x1p-52, 0.5, 30.0}) {
    x.push_back(v);
  }
  if (positive_domain(f)) {
    for (double& v : x) v = std::fabs(v);
  }
  return x;
}

TEST(Elementwise, EveryActivationAndDerivativeAgreesWithMpfr) {
  const WorkingPrecision precision;
  for (const Activation f : ops::kAllActivations) {
    const std::vector<double> x = activation_inputs(f);
    const std::vector<Real> xr = reals(x);
    const std::vector<Real> ones(x.size(), Real(1));
    std::vector<Big> y;
    std::vector<Big> dy;
    for (const double v : x) {
      y.push_back(activate_big(f, Big(v)));
      dy.push_back(derivative_big(f, Big(v)));
    }
    const std::string name = "activation " + std::to_string(static_cast<int>(f));
    expect_close(ops::elementwise<Real>(f, xr), y, kElementwiseTolerance, name);
    expect_close(ops::elementwise_backward<Real>(f, xr, ones), dy, kElementwiseTolerance,
                 name + " derivative");
  }
}

// relu's backward selects (ATen's threshold_backward): a zero where x <= 0 is +0, whatever dy.
TEST(Elementwise, ReluBackwardSelects) {
  const WorkingPrecision precision;
  const std::vector<Real> x{to_real(-1.0), Real(0), to_real(2.0)};
  const std::vector<Real> dy{to_real(-2.0), to_real(-3.0), to_real(5.0)};
  const std::vector<Real> dx = ops::elementwise_backward<Real>(Activation::relu, x, dy);
  ASSERT_EQ(dx.size(), 3u);
  EXPECT_EQ(dx[0], 0);
  EXPECT_FALSE(boost::multiprecision::signbit(dx[0]));
  EXPECT_FALSE(boost::multiprecision::signbit(dx[1]));
  EXPECT_EQ(dx[2], to_real(5.0));
  // The forward keeps NaN, as torch.relu (and the emulation and the device) do.
  EXPECT_TRUE(boost::multiprecision::isnan(
      ops::activate(Activation::relu, to_real(std::numeric_limits<double>::quiet_NaN()))));
}

TEST(Elementwise, HandDerivedValues) {
  const WorkingPrecision precision;
  const Real zero = 0;
  const Real half = to_real(0.5);
  EXPECT_EQ(ops::activation_derivative(Activation::relu, zero), 0);
  EXPECT_EQ(ops::activation_derivative(Activation::relu, half), 1);
  EXPECT_EQ(ops::activation_derivative(Activation::tanh, zero), 1);
  EXPECT_EQ(ops::activation_derivative(Activation::gelu, zero), half);
  EXPECT_EQ(ops::activation_derivative(Activation::gelu_tanh, zero), half);
  EXPECT_EQ(ops::activation_derivative(Activation::silu, zero), half);
  EXPECT_LE(relative_error(ops::activation_derivative(Activation::erf, zero), Big(2) / sqrt(pi())),
            kTolerance);
  // The constants are computed at the working precision, not taken from double literals.
  EXPECT_LE(relative_error(math::pi(zero), pi()), std::ldexp(1.0, -256));
  EXPECT_LE(relative_error(ops::gelu_tanh_cubic(zero), gelu_cubic()), std::ldexp(1.0, -256));
}

// ---- reductions and gemm -------------------------------------------------------------------

TEST(Reductions, SumMeanDotNormAgreeWithMpfr) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(20);
  const std::vector<double> a = uniform(rng, 64, 0.5, 2.0);  // one sign: condition 1
  const std::vector<double> b = uniform(rng, 64, 0.5, 2.0);
  Big sum_a = 0;
  Big dot_ab = 0;
  Big squares = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum_a += a[i];
    dot_ab += Big(a[i]) * Big(b[i]);
    squares += Big(a[i]) * Big(a[i]);
  }
  const std::vector<Real> ar = reals(a);
  const std::vector<Real> br = reals(b);
  expect_close({ops::sum<Real>(ar)}, {sum_a}, kTolerance, "sum");
  expect_close({ops::mean<Real>(ar)}, {sum_a / Big(64)}, kTolerance, "mean");
  expect_close({ops::dot<Real>(ar, br)}, {dot_ab}, kTolerance, "dot");
  expect_close({ops::l2_norm<Real>(ar)}, {sqrt(squares)}, kTolerance, "l2_norm");
  // Cancellation: 1e30 + 1 - 1e30 is 1, exactly, at 257 bits.
  const std::vector<Real> cancelling = reals({1e30, 1.0, -1e30});
  EXPECT_EQ(ops::sum<Real>(cancelling), 1);
}

TEST(Gemm, AgreesWithMpfrWithAndWithoutCInAndBias) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(21);
  const std::size_t m = 5;
  const std::size_t n = 7;
  const std::size_t k = 9;
  // Positive entries: every sum has condition 1.
  const std::vector<double> a = uniform(rng, m * k, 0.1, 1.0);
  const std::vector<double> b = uniform(rng, k * n, 0.1, 1.0);
  const std::vector<double> c = uniform(rng, m * n, 0.1, 1.0);
  const std::vector<double> bias = uniform(rng, n, 0.1, 1.0);
  for (const bool with_extras : {false, true}) {
    std::vector<Big> want(m * n);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        Big total = 0;
        for (std::size_t p = 0; p < k; ++p) total += Big(a[i * k + p]) * Big(b[p * n + j]);
        if (with_extras) total += Big(c[i * n + j]) + Big(bias[j]);
        want[i * n + j] = total;
      }
    }
    const std::vector<Real> cr = with_extras ? reals(c) : std::vector<Real>{};
    const std::vector<Real> biasr = with_extras ? reals(bias) : std::vector<Real>{};
    expect_close(ops::gemm<Real>(m, n, k, reals(a), reals(b), cr, biasr), want, kTolerance, "gemm");
  }
  EXPECT_THROW(ops::gemm<Real>(m, n, k, reals(a), reals(a)), std::invalid_argument);
}

// ---- softmax family ------------------------------------------------------------------------

// Rows of logits: random, large and spread (exp(-2000) beside 1), a dominant one (log_softmax
// near 0), and equal ones.
std::vector<double> softmax_inputs() {
  std::mt19937_64 rng(22);
  std::vector<double> x = uniform(rng, 8, -5, 5);
  for (const double v : {1000.0, 999.5, -1000.0, 0.1, 0.0, 0.0, 0.0, 0.0, 50.0, 0.0, -1.0, 10.0,
                         0.0, -800.0, -700.0, -900.0}) {
    x.push_back(v);
  }
  return x;
}
constexpr std::size_t kSoftmaxCols = 4;

struct BigRows {
  std::vector<Big> softmax;
  std::vector<Big> log_softmax;
  std::vector<Big> logsumexp;
};

// The definitions, literally (no maximum subtracted: 4096-bit MPFR holds exp(1000)).
BigRows softmax_big(const std::vector<double>& x, std::size_t cols) {
  BigRows out;
  for (std::size_t r = 0; r < x.size() / cols; ++r) {
    Big total = 0;
    for (std::size_t j = 0; j < cols; ++j) total += exp(Big(x[r * cols + j]));
    out.logsumexp.push_back(log(total));
    for (std::size_t j = 0; j < cols; ++j) {
      out.softmax.push_back(exp(Big(x[r * cols + j])) / total);
      out.log_softmax.push_back(Big(x[r * cols + j]) - log(total));
    }
  }
  return out;
}

TEST(Softmax, SoftmaxLogSoftmaxLogsumexpAgreeWithMpfr) {
  const WorkingPrecision precision;
  const std::vector<double> x = softmax_inputs();
  const std::size_t rows = x.size() / kSoftmaxCols;
  const BigRows want = softmax_big(x, kSoftmaxCols);
  const std::vector<Real> xr = reals(x);
  expect_close(ops::softmax<Real>(xr, rows, kSoftmaxCols), want.softmax, kTolerance, "softmax");
  expect_close(ops::log_softmax<Real>(xr, rows, kSoftmaxCols), want.log_softmax, kTolerance,
               "log_softmax");
  expect_close(ops::logsumexp<Real>(xr, rows, kSoftmaxCols), want.logsumexp, kTolerance,
               "logsumexp");
}

// ---- normalizations ------------------------------------------------------------------------

// Rows: random, and nearly constant (1 + j^2 2^-40 over 12 columns: the mean is inexact, and an
// uncorrected one would lose 40 bits of the deviations).
std::vector<double> norm_inputs(std::size_t rows, std::size_t cols) {
  std::mt19937_64 rng(23);
  std::vector<double> x = uniform(rng, (rows - 1) * cols, -3, 3);
  for (std::size_t j = 0; j < cols; ++j)
    x.push_back(1.0 + std::ldexp(static_cast<double>(j * j), -40));
  return x;
}

std::vector<Big> layer_norm_big(const std::vector<double>& x, std::size_t cols, double eps,
                                const std::vector<double>& gamma, const std::vector<double>& beta) {
  std::vector<Big> y;
  for (std::size_t r = 0; r < x.size() / cols; ++r) {
    // One pass, E[x^2] - E[x]^2: a different algorithm; at 4096 bits its cancellation is harmless.
    Big total = 0;
    Big squares = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      total += x[r * cols + j];
      squares += Big(x[r * cols + j]) * Big(x[r * cols + j]);
    }
    const Big n = static_cast<double>(cols);
    const Big mu = total / n;
    const Big variance = squares / n - mu * mu;
    for (std::size_t j = 0; j < cols; ++j) {
      y.push_back((Big(x[r * cols + j]) - mu) / sqrt(variance + Big(eps)) * Big(gamma[j]) +
                  Big(beta[j]));
    }
  }
  return y;
}

TEST(Normalization, LayerNormAgreesWithMpfrOnNearlyConstantRows) {
  const WorkingPrecision precision;
  const std::size_t rows = 4;
  const std::size_t cols = 12;
  const std::vector<double> x = norm_inputs(rows, cols);
  std::mt19937_64 rng(24);
  const std::vector<double> gamma = uniform(rng, cols, 0.5, 1.5);
  const std::vector<double> beta(cols, 0.0);
  for (const double eps : {0.0, 1e-5}) {
    // eps = 1e-5 swamps the last row's variance of about 2^-74: its outputs are then tiny, and
    // still relative-accurate.
    expect_close(ops::layer_norm<Real>(reals(x), rows, cols, to_real(eps), reals(gamma)),
                 layer_norm_big(x, cols, eps, gamma, beta), kTolerance,
                 "layer_norm eps " + std::to_string(eps));
  }
}

TEST(Normalization, RmsNormAndBatchNormAgreeWithMpfr) {
  const WorkingPrecision precision;
  const std::size_t rows = 4;
  const std::size_t cols = 12;
  const std::vector<double> x = norm_inputs(rows, cols);
  const double eps = 1e-6;
  std::vector<Big> rms;
  for (std::size_t r = 0; r < rows; ++r) {
    Big squares = 0;
    for (std::size_t j = 0; j < cols; ++j) squares += Big(x[r * cols + j]) * Big(x[r * cols + j]);
    const Big scale = Big(1) / sqrt(squares / Big(static_cast<double>(cols)) + Big(eps));
    for (std::size_t j = 0; j < cols; ++j) rms.push_back(Big(x[r * cols + j]) * scale);
  }
  expect_close(ops::rms_norm<Real>(reals(x), rows, cols, to_real(eps)), rms, kTolerance,
               "rms_norm");

  // N=2, C=2, H*W=12 from the same values: channel 1 of sample 1 is the nearly constant row.
  const std::size_t batch = 2;
  const std::size_t channels = 2;
  const std::size_t spatial = 12;
  const auto stats =
      ops::batch_norm_training<Real>(reals(x), batch, channels, spatial, to_real(eps));
  for (std::size_t c = 0; c < channels; ++c) {
    Big total = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t s = 0; s < spatial; ++s) total += x[(b * channels + c) * spatial + s];
    }
    const Big count = static_cast<double>(batch * spatial);
    const Big mu = total / count;
    Big squares = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t s = 0; s < spatial; ++s) {
        const Big d = Big(x[(b * channels + c) * spatial + s]) - mu;
        squares += d * d;
      }
    }
    expect_close({stats.mean[c], stats.variance[c], stats.unbiased_variance[c]},
                 {mu, squares / count, squares / (count - Big(1))}, kTolerance, "batch_norm stats");
    std::vector<Big> y;
    std::vector<Real> got;
    for (std::size_t b = 0; b < batch; ++b) {
      for (std::size_t s = 0; s < spatial; ++s) {
        const std::size_t i = (b * channels + c) * spatial + s;
        y.push_back((Big(x[i]) - mu) / sqrt(squares / count + Big(eps)));
        got.push_back(stats.y[i]);
      }
    }
    expect_close(got, y, kTolerance, "batch_norm y");
  }
}

// ---- cross entropy and attention -----------------------------------------------------------

TEST(Loss, CrossEntropyWithLabelSmoothingAgreesWithMpfr) {
  const WorkingPrecision precision;
  const std::vector<double> x = softmax_inputs();
  const std::size_t rows = x.size() / kSoftmaxCols;
  const std::vector<std::int64_t> targets = {0, 3, 1, 2, 0, 1};
  const BigRows p = softmax_big(x, kSoftmaxCols);
  for (const double smoothing : {0.0, 0.1}) {
    // PyTorch: loss_r = -sum_c q_c log p_c, q = (1 - e) onehot + e / C; mean over rows.
    Big total = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < kSoftmaxCols; ++c) {
        const Big q =
            (c == static_cast<std::size_t>(targets[r]) ? Big(1) - Big(smoothing) : Big(0)) +
            Big(smoothing) / Big(static_cast<double>(kSoftmaxCols));
        total += -q * p.log_softmax[r * kSoftmaxCols + c];
      }
    }
    expect_close(
        {ops::cross_entropy<Real>(reals(x), rows, kSoftmaxCols, targets, to_real(smoothing))},
        {total / Big(static_cast<double>(rows))}, kTolerance, "cross_entropy");
  }
}

TEST(Attention, AgreesWithMpfr) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(25);
  const std::size_t queries = 3;
  const std::size_t keys = 5;
  const std::size_t d = 8;
  const std::size_t value_dim = 4;
  const std::vector<double> q = uniform(rng, queries * d, -2, 2);
  const std::vector<double> k = uniform(rng, keys * d, -2, 2);
  const std::vector<double> v = uniform(rng, keys * value_dim, 0.5, 1.5);  // positive: condition 1
  std::vector<Big> want;
  for (std::size_t i = 0; i < queries; ++i) {
    std::vector<Big> weights;
    Big total = 0;
    for (std::size_t j = 0; j < keys; ++j) {
      Big score = 0;
      for (std::size_t t = 0; t < d; ++t) score += Big(q[i * d + t]) * Big(k[j * d + t]);
      weights.push_back(exp(score / sqrt(Big(static_cast<double>(d)))));
      total += weights.back();
    }
    for (std::size_t c = 0; c < value_dim; ++c) {
      Big out = 0;
      for (std::size_t j = 0; j < keys; ++j) out += weights[j] / total * Big(v[j * value_dim + c]);
      want.push_back(out);
    }
  }
  // The scores QK^T are sums of mixed signs; the tolerance is scaled by their condition number,
  // sum |q_t k_t| / |sum q_t k_t|, which the logits of softmax pass on to the result.
  double condition = 1;
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t j = 0; j < keys; ++j) {
      double total = 0;
      double magnitude = 0;
      for (std::size_t t = 0; t < d; ++t) {
        total += q[i * d + t] * k[j * d + t];
        magnitude += std::fabs(q[i * d + t] * k[j * d + t]);
      }
      condition = std::max(condition, magnitude);  // |d log softmax / d score| <= 1
    }
  }
  expect_close(ops::attention<Real>(reals(q), reals(k), reals(v), queries, keys, d, value_dim),
               want, kTolerance * condition, "attention");
}

// ---- gradients -----------------------------------------------------------------------------

// d/dx_i of sum_j dy_j f(x)_j by central differences with h = 2^-200 at 2048 bits: the truncation
// error is O(h^2) = 2^-400 times the third derivative, the rounding error 2^-2048 / h; both far
// below the 2^-300 the comparison asks.
std::vector<Real> finite_difference(
    const std::function<std::vector<Real>(const std::vector<Real>&)>& f, const std::vector<Real>& x,
    const std::vector<Real>& dy) {
  const Real h = ldexp(Real(1), -200);
  std::vector<Real> gradient;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::vector<Real> up = x;
    std::vector<Real> down = x;
    up[i] += h;
    down[i] -= h;
    const std::vector<Real> fu = f(up);
    const std::vector<Real> fd = f(down);
    Real total = 0;
    for (std::size_t j = 0; j < fu.size(); ++j) total += dy[j] * (fu[j] - fd[j]);
    gradient.push_back(total / (2 * h));
  }
  return gradient;
}

// |a - b| <= 2^-300 * max |b|: the differences' error is absolute.
void expect_same_gradient(const std::vector<Real>& got, const std::vector<Real>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  Real scale = 0;
  for (const Real& w : want) scale = std::max(scale, Real(abs(w)));
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(abs(got[i] - want[i]), ldexp(scale, -300))
        << what << " element " << i << ": " << text(got[i]) << " vs " << text(want[i]);
  }
}

TEST(Gradients, MatchFiniteDifferences) {
  const WorkingPrecision precision(2048);
  std::mt19937_64 rng(26);
  const std::size_t rows = 3;
  const std::size_t cols = 5;
  const std::vector<Real> x = reals(uniform(rng, rows * cols, 0.2, 3));  // > 0 for log, sqrt
  const std::vector<Real> dy = reals(uniform(rng, rows * cols, -1, 1));
  const std::vector<Real> gamma = reals(uniform(rng, cols, 0.5, 1.5));
  const Real eps = to_real(1e-3);

  for (const Activation f : ops::kAllActivations) {
    expect_same_gradient(
        ops::elementwise_backward<Real>(f, x, dy),
        finite_difference([f](const std::vector<Real>& v) { return ops::elementwise<Real>(f, v); },
                          x, dy),
        "activation " + std::to_string(static_cast<int>(f)));
  }
  expect_same_gradient(
      ops::softmax_backward<Real>(x, dy, rows, cols),
      finite_difference(
          [&](const std::vector<Real>& v) { return ops::softmax<Real>(v, rows, cols); }, x, dy),
      "softmax");
  expect_same_gradient(
      ops::log_softmax_backward<Real>(x, dy, rows, cols),
      finite_difference(
          [&](const std::vector<Real>& v) { return ops::log_softmax<Real>(v, rows, cols); }, x, dy),
      "log_softmax");

  const auto ln = ops::layer_norm_backward<Real>(x, dy, rows, cols, eps, gamma);
  expect_same_gradient(ln.dx,
                       finite_difference(
                           [&](const std::vector<Real>& v) {
                             return ops::layer_norm<Real>(v, rows, cols, eps, gamma);
                           },
                           x, dy),
                       "layer_norm dx");
  expect_same_gradient(
      ln.dgamma,
      finite_difference(
          [&](const std::vector<Real>& g) { return ops::layer_norm<Real>(x, rows, cols, eps, g); },
          gamma, dy),
      "layer_norm dgamma");
  const std::vector<Real> zero_beta(cols, Real(0));
  expect_same_gradient(ln.dbeta,
                       finite_difference(
                           [&](const std::vector<Real>& b) {
                             return ops::layer_norm<Real>(x, rows, cols, eps, gamma, b);
                           },
                           zero_beta, dy),
                       "layer_norm dbeta");

  const std::vector<std::int64_t> targets = {4, 0, 2};
  const Real smoothing = to_real(0.1);
  const std::vector<Real> one = {Real(1)};
  expect_same_gradient(
      ops::cross_entropy_backward<Real>(x, rows, cols, targets, smoothing),
      finite_difference(
          [&](const std::vector<Real>& v) {
            return std::vector<Real>{ops::cross_entropy<Real>(v, rows, cols, targets, smoothing)};
          },
          x, one),
      "cross_entropy");

  // gemm: A is rows x cols, B is cols x 2.
  const std::vector<Real> b = reals(uniform(rng, cols * 2, -1, 1));
  const std::vector<Real> dc = reals(uniform(rng, rows * 2, -1, 1));
  const auto g = ops::gemm_backward<Real>(rows, 2, cols, x, b, dc);
  expect_same_gradient(
      g.da,
      finite_difference(
          [&](const std::vector<Real>& v) { return ops::gemm<Real>(rows, 2, cols, v, b); }, x, dc),
      "gemm dA");
  expect_same_gradient(
      g.db,
      finite_difference(
          [&](const std::vector<Real>& v) { return ops::gemm<Real>(rows, 2, cols, x, v); }, b, dc),
      "gemm dB");
}

TEST(Gradients, HandDerivedValues) {
  const WorkingPrecision precision;
  // Two elements, eps 0: the outputs are -1 and 1 whatever x, so dx is 0.
  const std::vector<Real> pair = reals({0.25, 3.0});
  const std::vector<Real> dy = reals({0.7, -0.2});
  for (const Real& v : ops::layer_norm_backward<Real>(pair, dy, 1, 2, Real(0)).dx) {
    EXPECT_LE(abs(v), ldexp(Real(1), -250));
  }
  // Equal logits: softmax is 1/C, and d loss / d logits = (1/C - q) / N.
  const std::vector<Real> equal(2 * 4, Real(0));
  const std::vector<std::int64_t> targets = {1, 3};
  const Real smoothing = to_real(0.25);
  const auto dx = ops::cross_entropy_backward<Real>(equal, 2, 4, targets, smoothing);
  for (std::size_t r = 0; r < 2; ++r) {
    for (std::size_t c = 0; c < 4; ++c) {
      const Real q =
          (c == static_cast<std::size_t>(targets[r]) ? Real(0.75) : Real(0)) + Real(1) / 16;
      EXPECT_EQ(dx[r * 4 + c], (Real(1) / 4 - q) / 2);
    }
  }
  // dy constant along a row: softmax's gradient is 0 (the outputs sum to 1).
  const std::vector<Real> x = reals({0.3, -2.0, 1.5});
  const std::vector<Real> flat(3, to_real(0.6));
  for (const Real& v : ops::softmax_backward<Real>(x, flat, 1, 3)) {
    EXPECT_LE(abs(v), ldexp(Real(1), -250));
  }
}

// ---- one code path -------------------------------------------------------------------------

// The double instantiation of every op is close to the Real one: the same template computes both.
void expect_near_real(const std::vector<double>& got, const std::vector<Real>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = to_double(want[i]);
    EXPECT_NEAR(got[i], w, 1e-12 * std::max(1.0, std::fabs(w))) << what << " element " << i;
  }
}

TEST(DoubleInstantiation, AgreesWithReal) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(27);
  const std::size_t rows = 3;
  const std::size_t cols = 6;
  const std::vector<double> x = uniform(rng, rows * cols, 0.1, 3);
  const std::vector<double> dy = uniform(rng, rows * cols, -1, 1);
  const std::vector<double> gamma = uniform(rng, cols, 0.5, 1.5);
  const std::vector<Real> xr = reals(x);
  const std::vector<Real> dyr = reals(dy);
  const std::vector<Real> gammar = reals(gamma);
  for (const Activation f : ops::kAllActivations) {
    const std::string name = "activation " + std::to_string(static_cast<int>(f));
    expect_near_real(ops::elementwise<double>(f, x), ops::elementwise<Real>(f, xr), name);
    expect_near_real(ops::elementwise_backward<double>(f, x, dy),
                     ops::elementwise_backward<Real>(f, xr, dyr), name + " backward");
  }
  expect_near_real(
      {ops::sum<double>(x), ops::mean<double>(x), ops::dot<double>(x, dy), ops::l2_norm<double>(x)},
      {ops::sum<Real>(xr), ops::mean<Real>(xr), ops::dot<Real>(xr, dyr), ops::l2_norm<Real>(xr)},
      "reductions");
  expect_near_real(ops::gemm<double>(rows, rows, cols, x, x),
                   ops::gemm<Real>(rows, rows, cols, xr, xr), "gemm");
  const auto gd =
      ops::gemm_backward<double>(rows, rows, cols, x, x, std::span(dy).first(rows * rows));
  const auto gr =
      ops::gemm_backward<Real>(rows, rows, cols, xr, xr, std::span(dyr).first(rows * rows));
  expect_near_real(gd.da, gr.da, "gemm dA");
  expect_near_real(gd.db, gr.db, "gemm dB");
  expect_near_real(ops::softmax<double>(x, rows, cols), ops::softmax<Real>(xr, rows, cols),
                   "softmax");
  expect_near_real(ops::log_softmax<double>(x, rows, cols), ops::log_softmax<Real>(xr, rows, cols),
                   "log_softmax");
  expect_near_real(ops::logsumexp<double>(x, rows, cols), ops::logsumexp<Real>(xr, rows, cols),
                   "logsumexp");
  expect_near_real(ops::softmax_backward<double>(x, dy, rows, cols),
                   ops::softmax_backward<Real>(xr, dyr, rows, cols), "softmax backward");
  expect_near_real(ops::log_softmax_backward<double>(x, dy, rows, cols),
                   ops::log_softmax_backward<Real>(xr, dyr, rows, cols), "log_softmax backward");
  expect_near_real(ops::layer_norm<double>(x, rows, cols, 1e-5, gamma, gamma),
                   ops::layer_norm<Real>(xr, rows, cols, to_real(1e-5), gammar, gammar),
                   "layer_norm");
  const auto ld = ops::layer_norm_backward<double>(x, dy, rows, cols, 1e-5, gamma);
  const auto lr = ops::layer_norm_backward<Real>(xr, dyr, rows, cols, to_real(1e-5), gammar);
  expect_near_real(ld.dx, lr.dx, "layer_norm dx");
  expect_near_real(ld.dgamma, lr.dgamma, "layer_norm dgamma");
  expect_near_real(ld.dbeta, lr.dbeta, "layer_norm dbeta");
  expect_near_real(ops::rms_norm<double>(x, rows, cols, 1e-6, gamma),
                   ops::rms_norm<Real>(xr, rows, cols, to_real(1e-6), gammar), "rms_norm");
  const auto bd = ops::batch_norm_training<double>(x, rows, 2, 3, 1e-5);
  const auto br = ops::batch_norm_training<Real>(xr, rows, 2, 3, to_real(1e-5));
  expect_near_real(bd.y, br.y, "batch_norm y");
  expect_near_real(bd.unbiased_variance, br.unbiased_variance, "batch_norm variance");
  const std::vector<std::int64_t> targets = {0, 5, 2};
  expect_near_real({ops::cross_entropy<double>(x, rows, cols, targets, 0.1)},
                   {ops::cross_entropy<Real>(xr, rows, cols, targets, to_real(0.1))},
                   "cross_entropy");
  expect_near_real(ops::cross_entropy_backward<double>(x, rows, cols, targets, 0.1),
                   ops::cross_entropy_backward<Real>(xr, rows, cols, targets, to_real(0.1)),
                   "cross_entropy backward");
  expect_near_real(ops::attention<double>(x, x, x, rows, rows, cols, cols),
                   ops::attention<Real>(xr, xr, xr, rows, rows, cols, cols), "attention");
}

}  // namespace
}  // namespace ampbench::reference
