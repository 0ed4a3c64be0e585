// The tests' oracle for exact sums: MPFR used directly, at a precision wide enough that every
// addition is exact (each step is checked), and the conversion of an ExactValue into MPFR from its
// limbs with GMP. Nothing here goes through the accumulators under test.
#pragma once

#include <gmp.h>
#include <mpfr.h>

#include <cstddef>
#include <span>
#include <stdexcept>

#include "reference/exact/exact_value.hpp"

namespace ampbench::reference::test {

// An MPFR number of fixed precision, freed on scope exit.
class Mp {
 public:
  explicit Mp(mpfr_prec_t precision = kWide) {
    mpfr_init2(value_, precision);
    mpfr_set_zero(value_, 1);
  }
  ~Mp() { mpfr_clear(value_); }
  Mp(const Mp&) = delete;
  Mp& operator=(const Mp&) = delete;
  mpfr_ptr get() { return value_; }
  mpfr_srcptr get() const { return value_; }

  // Every sum of products of binary64 values spans at most 2^-2148 .. 2^2068 (with 2^20 terms).
  static constexpr mpfr_prec_t kWide = 4400;

 private:
  mpfr_t value_;
};

inline void require_exact(int ternary, const char* what) {
  if (ternary != 0) throw std::logic_error(std::string("mpfr oracle: inexact ") + what);
}

// sum += a * b, exactly (the product of two 53-bit values needs 106 bits).
inline void add_product(Mp& sum, double a, double b) {
  Mp x(53), y(53), product(106);
  mpfr_set_d(x.get(), a, MPFR_RNDN);
  mpfr_set_d(y.get(), b, MPFR_RNDN);
  require_exact(mpfr_mul(product.get(), x.get(), y.get(), MPFR_RNDN), "product");
  require_exact(mpfr_add(sum.get(), sum.get(), product.get(), MPFR_RNDN), "sum");
}

// The exact dot product of a and b in sum (finite inputs).
inline void exact_dot(Mp& sum, std::span<const double> a, std::span<const double> b) {
  // IEEE 754 section 6.3, as the library documents (exact_value.hpp): an empty sum is +0, a sum
  // of -0 terms -0; starting a non-empty sum from -0 gives both, since -0 + +0 is +0.
  mpfr_set_zero(sum.get(), a.empty() ? 1 : -1);
  for (std::size_t i = 0; i < a.size(); ++i) add_product(sum, a[i], b[i]);
}

// The value of a finite ExactValue as an MPFR number, from its limbs.
inline void to_mpfr(Mp& out, const ExactValue& v) {
  mpz_t n;
  mpz_init(n);
  const auto& limbs = v.magnitude();
  mpz_import(n, limbs.size(), -1, sizeof(std::uint32_t), 0, 0, limbs.data());
  if (v.negative()) mpz_neg(n, n);
  const int ternary = mpfr_set_z_2exp(out.get(), n, v.exponent(), MPFR_RNDN);
  mpz_clear(n);
  require_exact(ternary, "conversion");
  if (v.is_zero() && v.negative()) mpfr_neg(out.get(), out.get(), MPFR_RNDN);
}

}  // namespace ampbench::reference::test
