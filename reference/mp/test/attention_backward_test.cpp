// The reference gradients of attention against an independent computation: central differences
// of the forward reference ops::attention at 257 bits, element by element, for dQ, dK and dV;
// values worked by hand (one key; all scores equal); the double instantiation against the Real
// one; and the size checks.
#include "reference/mp/attention_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/mp/multiprecision.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::reference {
namespace {

constexpr std::size_t kQueries = 3;
constexpr std::size_t kKeys = 4;
constexpr std::size_t kDim = 5;
constexpr std::size_t kValueDim = 2;  // apart from kDim, so that no dimension stands for another

std::vector<double> uniform(std::mt19937_64& rng, std::size_t n, double lo, double hi) {
  std::vector<double> x(n);
  for (double& v : x) v = std::uniform_real_distribution<double>(lo, hi)(rng);
  return x;
}

std::vector<Real> reals(const std::vector<double>& x) {
  std::vector<Real> r;
  for (const double v : x) r.push_back(to_real(v));
  return r;
}

struct Case {
  std::vector<Real> q, k, v, d_out;
};

Case random_case(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return {reals(uniform(rng, kQueries * kDim, -1.5, 1.5)),
          reals(uniform(rng, kKeys * kDim, -1.5, 1.5)),
          reals(uniform(rng, kKeys * kValueDim, -1.5, 1.5)),
          reals(uniform(rng, kQueries * kValueDim, -1, 1))};
}

std::vector<Real> forward(const Case& c) {
  return ops::attention<Real>(c.q, c.k, c.v, kQueries, kKeys, kDim, kValueDim);
}

// d/dx_e <dO, attention(x + h e)>, for each element e of the operand `x` points to, by central
// differences with h = 2^-100. At 257 bits the truncation error is O(h^2) = 2^-200 and the
// rounding error about 2^-257 / h = 2^-157 (times small conditions): both far below the 2^-140
// the comparison asks, and a wrong formula misses by far more.
std::vector<Real> finite_difference(Case c, std::vector<Real> Case::*x) {
  const Real h = ldexp(Real(1), -100);
  std::vector<Real> gradient;
  for (std::size_t e = 0; e < (c.*x).size(); ++e) {
    const Real original = (c.*x)[e];
    const auto directional = [&](const Real& shift) {
      (c.*x)[e] = original + shift;
      const std::vector<Real> o = forward(c);
      Real total = 0;
      for (std::size_t i = 0; i < o.size(); ++i) total += c.d_out[i] * o[i];
      return total;
    };
    const Real up = directional(h);
    const Real down = directional(-h);
    (c.*x)[e] = original;
    gradient.push_back((up - down) / (2 * h));
  }
  return gradient;
}

void expect_same_gradient(const std::vector<Real>& got, const std::vector<Real>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  Real scale = 0;
  for (const Real& w : want) scale = std::max(scale, Real(abs(w)));
  ASSERT_GT(scale, Real(0.01)) << what << ": the case tests nothing";
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(abs(got[i] - want[i]), ldexp(scale, -140))
        << what << " element " << i << ": " << to_double(got[i]) << " vs " << to_double(want[i]);
  }
}

TEST(AttentionBackward, MatchesFiniteDifferencesOfTheForwardPass) {
  const WorkingPrecision precision(256);
  for (const std::uint64_t seed : {31u, 32u}) {
    SCOPED_TRACE(seed);
    const Case c = random_case(seed);
    const auto g =
        ops::attention_backward<Real>(c.q, c.k, c.v, c.d_out, kQueries, kKeys, kDim, kValueDim);
    expect_same_gradient(g.dq, finite_difference(c, &Case::q), "dQ");
    expect_same_gradient(g.dk, finite_difference(c, &Case::k), "dK");
    expect_same_gradient(g.dv, finite_difference(c, &Case::v), "dV");
  }
}

// One key: P = 1 whatever the scores, so the output is V's row, dV the sum of the dO rows, and
// dQ and dK vanish: dP - D is 0 exactly, as it is with D = sum_j P_ij dP_ij.
TEST(AttentionBackward, OneKeyPassesTheGradientToVAlone) {
  const WorkingPrecision precision;
  std::mt19937_64 rng(33);
  const Case c{reals(uniform(rng, kQueries * kDim, -3, 3)), reals(uniform(rng, kDim, -3, 3)),
               reals(uniform(rng, kValueDim, -3, 3)),
               reals(uniform(rng, kQueries * kValueDim, -1, 1))};
  const auto g =
      ops::attention_backward<Real>(c.q, c.k, c.v, c.d_out, kQueries, 1, kDim, kValueDim);
  for (const Real& x : g.dq) EXPECT_EQ(x, 0);
  for (const Real& x : g.dk) EXPECT_EQ(x, 0);
  for (std::size_t t = 0; t < kValueDim; ++t) {
    Real total = 0;
    for (std::size_t i = 0; i < kQueries; ++i) total += c.d_out[i * kValueDim + t];
    EXPECT_EQ(g.dv[t], total) << t;
  }
}

// Q = 0: every score is 0 and P = 1/S, so dV_j = (1/S) sum_i dO_i for every key, and dK = dS^T Q
// is 0; dQ_i = (1/S) sum_j (dP_ij - mean_j dP_ij) k_j / sqrt d.
TEST(AttentionBackward, EqualScoresAverage) {
  const WorkingPrecision precision;
  Case c = random_case(34);
  std::fill(c.q.begin(), c.q.end(), Real(0));
  const auto g =
      ops::attention_backward<Real>(c.q, c.k, c.v, c.d_out, kQueries, kKeys, kDim, kValueDim);
  const Real tolerance = ldexp(Real(1), -240);
  for (const Real& x : g.dk) EXPECT_EQ(x, 0);
  for (std::size_t j = 0; j < kKeys; ++j) {
    for (std::size_t t = 0; t < kValueDim; ++t) {
      Real total = 0;
      for (std::size_t i = 0; i < kQueries; ++i) total += c.d_out[i * kValueDim + t];
      EXPECT_LE(abs(g.dv[j * kValueDim + t] - total / kKeys), tolerance) << j << " " << t;
    }
  }
  for (std::size_t i = 0; i < kQueries; ++i) {
    std::vector<Real> dp(kKeys);
    Real mean = 0;
    for (std::size_t j = 0; j < kKeys; ++j) {
      for (std::size_t t = 0; t < kValueDim; ++t) {
        dp[j] += c.d_out[i * kValueDim + t] * c.v[j * kValueDim + t];
      }
      mean += dp[j] / kKeys;
    }
    for (std::size_t t = 0; t < kDim; ++t) {
      Real want = 0;
      for (std::size_t j = 0; j < kKeys; ++j) want += (dp[j] - mean) / kKeys * c.k[j * kDim + t];
      want /= sqrt(Real(kDim));
      EXPECT_LE(abs(g.dq[i * kDim + t] - want), tolerance) << i << " " << t;
    }
  }
}

TEST(AttentionBackward, DoubleInstantiationAgreesWithReal) {
  const WorkingPrecision precision;
  const Case c = random_case(35);
  const auto doubles = [](const std::vector<Real>& x) {
    std::vector<double> r;
    for (const Real& v : x) r.push_back(to_double(v));
    return r;
  };
  const auto q = doubles(c.q), k = doubles(c.k), v = doubles(c.v), d_out = doubles(c.d_out);
  const auto got =
      ops::attention_backward<double>(q, k, v, d_out, kQueries, kKeys, kDim, kValueDim);
  const auto want =
      ops::attention_backward<Real>(c.q, c.k, c.v, c.d_out, kQueries, kKeys, kDim, kValueDim);
  const auto expect_near = [](const std::vector<double>& a, const std::vector<Real>& b,
                              const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    double scale = 0;
    for (const Real& x : b) scale = std::max(scale, std::fabs(to_double(x)));
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i], to_double(b[i]), 1e-13 * scale) << what << " element " << i;
    }
  };
  expect_near(got.dq, want.dq, "dQ");
  expect_near(got.dk, want.dk, "dK");
  expect_near(got.dv, want.dv, "dV");
}

TEST(AttentionBackward, RefusesOperandsOfTheWrongSize) {
  const std::vector<double> four(4, 1.0), six(6, 1.0);
  // Q 2 x 2, K and V 3 x 2, dO 2 x 2: dO of 6 elements does not fit.
  EXPECT_THROW(ops::attention_backward<double>(four, six, six, six, 2, 3, 2, 2),
               std::invalid_argument);
  EXPECT_THROW(ops::attention_backward<double>(four, {}, {}, four, 2, 0, 2, 2),
               std::invalid_argument);
  EXPECT_NO_THROW(ops::attention_backward<double>(four, six, six, four, 2, 3, 2, 2));
}

}  // namespace
}  // namespace ampbench::reference
