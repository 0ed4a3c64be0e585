// Reals with terms too small for MPFR's exponent range, for the references of the softmax family.
//
// softmax, log_softmax, logsumexp, cross-entropy and attention take exp(x_j - max) of every entry
// of a row. Near binary32's overflow threshold two logits differ by up to 6.8e38, and exp(-6.8e38)
// lies far below MPFR's smallest number (2^-(2^30), about e^-7.4e8): MPFR underflows. Yet such a
// term is not negligible for correct rounding: it is what makes softmax's largest output
// 1 / (1 + tiny), just below 1 (so 1 - ulp when rounding down), and logsumexp max + tiny, just
// above the maximum. Even within MPFR's range, e^-1e5 next to 1 is beyond any precision the Ziv
// loop reaches. An Asymptotic is
//
//     standard + sum over its tail of coefficient_i * e^-key_i,   key_i > kSymbolicBelow,
//
// the standard part an MPFR value as Real computes it, each tail term a coefficient (a Real) of an
// exponential kept by its exponent: exp(z) for z < -kSymbolicBelow is the term 1 * e^-(-z).
// Arithmetic keeps the terms apart while their keys differ by more than kMerge and joins them
// otherwise; at most kMaxTerms are kept, and a bound of what was dropped is kept with them.
//
// Every part carries a bound of its error, propagated through each operation (a running error
// analysis: the rounding of each MPFR result, and how the operation carries its operands' errors),
// so that an exact part is known to be exact and an inexact one to lie within its bound. An exact
// value is rounded directly, and so is an exact standard part plus a tail of known sign: the tail
// says on which side of it the exact result lies (correctly_rounded_asymptotic). One assumption
// is made: two tail terms whose keys are computed equal are the same exponential, reached twice
// (a row's exponential in a sum and in its reciprocal); distinct keys from the same formula differ
// by far more than a rounding at the working precision.
//
// The templates of ops.hpp run on Asymptotic unchanged; it provides what the softmax family uses:
// + - * /, comparisons, exp, log1p and rsqrt. docs/reference-multiprecision.md describes it.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "reference/mp/multiprecision.hpp"

namespace ampbench::reference {

class Asymptotic {
 public:
  // exp(z) is kept as a tail term below z = -kSymbolicBelow (nats): e^-256 is about 2^-369,
  // beyond what the first rounds of the Ziv loop resolve next to the standard part.
  static constexpr double kSymbolicBelow = 256;
  // Terms whose keys differ by at most this (nats, about 5900 bits) are joined into one.
  static constexpr double kMerge = 4096;
  static constexpr std::size_t kMaxTerms = 4;
  // A term the standard part does not dwarf is folded into it, c e^-key computed by MPFR, which
  // holds e^-key for keys up to about 7.4e8.
  static constexpr double kFoldableBelow = 0x1p28;

  // An error bound: the absolute error is at most 2^log2 (-infinity: exact; +infinity: unknown).
  static constexpr double kExact = -std::numeric_limits<double>::infinity();
  static constexpr double kUnknown = std::numeric_limits<double>::infinity();

  struct Term {
    Real key;  // the term is coefficient * e^-key
    Real coefficient;
    double key_error = kExact;  // log2 of the bound of each's error
    double error = kExact;
  };
  // The dropped terms sum to at most 2^log2_bound * e^-key in magnitude.
  struct Dropped {
    Real key;
    double log2_bound = 0;
  };

  Asymptotic() : Asymptotic(0) {}
  // An integer or a double, exactly (the working precision has at least 64 bits).
  template <class N>
  requires std::is_arithmetic_v<N> Asymptotic(N n) : standard_(n) {}  // implicit: T(0), 1 + x
  Asymptotic(Real standard, double error) : standard_(std::move(standard)), error_(error) {}

  const Real& standard() const { return standard_; }
  double standard_error() const { return error_; }
  bool standard_exact() const { return error_ == kExact; }
  const std::vector<Term>& tail() const { return tail_; }
  const std::optional<Dropped>& dropped() const { return dropped_; }

  // The sign of the computed value (-1, 0, 1): the standard part's, else the first tail term's.
  int sign() const;

  Asymptotic& operator+=(const Asymptotic& b);
  Asymptotic& operator-=(const Asymptotic& b);
  Asymptotic& operator*=(const Asymptotic& b);
  Asymptotic& operator/=(const Asymptotic& b);
  friend Asymptotic operator+(Asymptotic a, const Asymptotic& b) { return a += b; }
  friend Asymptotic operator-(Asymptotic a, const Asymptotic& b) { return a -= b; }
  friend Asymptotic operator*(Asymptotic a, const Asymptotic& b) { return a *= b; }
  friend Asymptotic operator/(Asymptotic a, const Asymptotic& b) { return a /= b; }
  friend Asymptotic operator-(const Asymptotic& a);
  friend bool operator<(const Asymptotic& a, const Asymptotic& b) { return (a - b).sign() < 0; }
  friend bool operator==(const Asymptotic& a, const Asymptotic& b) { return (a - b).sign() == 0; }

  friend Asymptotic exp_of(const Asymptotic& z);
  friend Asymptotic log1p_of(const Asymptotic& x);

  // An upper bound of |value| as 2^log2 * e^-key: key 0 when the standard part is nonzero or
  // inexact; nothing for an exact zero.
  struct Magnitude {
    Real key;
    double log2 = 0;
  };
  std::optional<Magnitude> magnitude() const;
  // Whether b is this value, bit for bit (its parts, errors and precisions).
  bool same_as(const Asymptotic& b) const;

 private:
  // The tail from `terms` (any order): joined, exact zeros removed, cut to kMaxTerms.
  void set_tail(std::vector<Term> terms);
  void add_dropped(const std::optional<Dropped>& d);
  // This value divided by a standard value (nonzero, its error within half of it).
  Asymptotic divided_by_standard(const Real& d, double d_error) const;

  Real standard_;
  double error_ = kExact;
  std::vector<Term> tail_;
  std::optional<Dropped> dropped_;
};

namespace math {
Asymptotic exp(const Asymptotic& z);    // of a value without a tail
Asymptotic log1p(const Asymptotic& x);  // standard part above -1
Asymptotic rsqrt(const Asymptotic& x);  // of a value without a tail, > 0
}  // namespace math

// The exact value of `compute` correctly rounded to f in mode, and to the nearest binary64, as
// correctly_rounded does for a Real: each round evaluates at a working precision P (doubled each
// round up to policy.max_bits). Tail terms that the standard part does not dwarf are first folded
// into it. Then the value is decided when
// - its standard part is exact: it is rounded as it is when the tail is empty, else as the
//   standard part moved by a tiny amount in the direction of the tail's sign (an exact zero plus a
//   tail is a nonzero value below every format's smallest subnormal, of that sign); the tail's
//   sign is that of its first term, which must exceed its error bound and the rest;
// - its standard part is inexact: as correctly_rounded decides it, within the larger of the
//   policy's bound and the propagated one.
// Else the round is undecided. Past max_bits: std::runtime_error. std::range_error when an
// operation left MPFR's exponent range.
ReferenceValue correctly_rounded_asymptotic(const numeric::Format& f, numeric::Rounding mode,
                                            const std::function<Asymptotic()>& compute,
                                            const ZivPolicy& policy = {}, std::uint32_t random = 0);

}  // namespace ampbench::reference
