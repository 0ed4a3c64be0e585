// Arbitrary-precision reals for the op references: the working precision, exact conversion from
// binary64, correct rounding of a multiprecision value to any Format, and correct rounding of a
// value that is only known approximately (Ziv's strategy).
//
// Real is Boost.Multiprecision over MPFR with a precision chosen at run time. Every arithmetic
// operation and every elementary function (the overloads in namespace math below) is one MPFR call,
// correctly rounded to the working precision; an op reference built from them has a relative error
// of a small multiple of 2^-P, which its caller states when asking for a correctly rounded result.
// See docs/reference-multiprecision.md.
#pragma once

#include <boost/multiprecision/mpfr.hpp>
#include <cstdint>
#include <functional>
#include <optional>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::reference {

// Expression templates off: every operation yields a plain value rounded to the working precision,
// so a formula means the same sequence of roundings it would with double.
using Real = boost::multiprecision::number<boost::multiprecision::mpfr_float_backend<0>,
                                           boost::multiprecision::et_off>;

inline constexpr int kDefaultPrecisionBits = 256;
inline constexpr int kMinimumPrecisionBits = 64;  // a binary64 and its products stay exact above

// Sets the precision, in bits, of the Reals this thread creates from now until destruction, and
// restores the previous one then. Boost states precision in decimal digits and converts d digits
// to floor(d / 0.301) + 1 or 2 bits, so not every bit count is reachable: the precision set is the
// smallest reachable one >= bits, at most 3 bits more (bits() says which). Throws
// std::invalid_argument below kMinimumPrecisionBits.
class WorkingPrecision {
 public:
  explicit WorkingPrecision(int bits = kDefaultPrecisionBits);
  ~WorkingPrecision();
  WorkingPrecision(const WorkingPrecision&) = delete;
  WorkingPrecision& operator=(const WorkingPrecision&) = delete;

  int bits() const { return bits_; }

 private:
  unsigned previous_digits10_;
  int bits_;
};

// The precision in bits of a Real this thread creates now.
int working_precision_bits();
// The precision in bits of x.
int precision_bits(const Real& x);

// x exactly (the working precision is at least 64 bits).
Real to_real(double x);
// The binary64 nearest to x (ties to even), subnormals and overflow as IEEE 754 defines them.
double to_double(const Real& x);

// x correctly rounded to f in mode, with the encoding and the event, as numeric::round_to does for
// a double: the sign, exponent and top 128 bits of x, and whether anything is below them, are
// read exactly from MPFR's significand and handed to numeric::round_window. NaN, infinities and
// zeros go through numeric::round_to. Throws std::range_error when x's exponent lies beyond
// +-2^30 (MPFR's default exponent range; only a widened range holds such values).
numeric::Rounded round_to(const numeric::Format& f, numeric::Rounding mode, const Real& x,
                          std::uint32_t random = 0);

// A reference result: the exact value of an op, correctly rounded.
struct ReferenceValue {
  numeric::Rounded rounded;  // rounded to the requested format and mode
  double value;              // the binary64 nearest to the exact value (ties to even)
  int precision_bits;        // the working precision at which both roundings were decided
};

// How the Ziv loop evaluates an op.
struct ZivPolicy {
  // The op's error bound: its result at working precision P is within error_bound * 2^-P of the
  // exact value, relative to the result. Take it from the op's error analysis (a sum of n terms
  // of one sign: about n; cancellation multiplies it by the condition number, which the caller
  // must bound). Must be below 2^32.
  std::uint64_t error_bound = 256;
  int initial_bits = kDefaultPrecisionBits;  // the first working precision; doubled each round
  int max_bits = 16384;                      // the last working precision tried
};

// The exact value of `compute` (an op evaluated at the working precision in force when it is
// called) correctly rounded to f in mode, and to the nearest binary64.
//
// Each round sets the working precision P and evaluates compute with MPFR's flags cleared. When
// MPFR reports that no operation rounded, the value is exact and is rounded directly (exp(0),
// relu, sums of short integers, exact ties). Otherwise the exact value lies in
// [x - d, x + d], d = error_bound * 2^-P * |x|, and the result is returned when both ends round to
// the same encoding with the same event, in f and in binary64, and no value of f lies inside
// (else whether the result is exact could not be told). If not, P doubles. Past max_bits it throws
// std::runtime_error: the exact value is then, as far as P can tell, a value of f or a rounding
// boundary of mode (a midpoint for the nearest modes) reached by inexact operations. Throws
// std::range_error when compute overflows or underflows MPFR's exponent range (its result would
// not be within the bound). `random` is the draw for the stochastic modes (numeric::round_to).
ReferenceValue correctly_rounded(const numeric::Format& f, numeric::Rounding mode,
                                 const std::function<Real()>& compute, const ZivPolicy& policy = {},
                                 std::uint32_t random = 0);

// The two decisions of the Ziv loop, for the loops of other value types (asymptotic.hpp): x
// rounded as it is (x is exact, or zero, infinite or NaN), and x known within
// error_bound * 2^-bits * |x| (a regular x) rounded when both ends of that interval round alike
// and no value of f lies inside (else nothing). Both report `bits` as the precision.
ReferenceValue rounded_exactly(const numeric::Format& f, numeric::Rounding mode, const Real& x,
                               int bits, std::uint32_t random = 0);
std::optional<ReferenceValue> rounded_within(const numeric::Format& f, numeric::Rounding mode,
                                             const Real& x, std::uint64_t error_bound, int bits,
                                             std::uint32_t random = 0);

// Elementary functions and constants for Real, each one MPFR call rounded to nearest at the
// working precision. The op templates (ops.hpp) call math::f for every scalar type; the double
// overloads are there.
namespace math {
Real exp(const Real& x);
Real log(const Real& x);
Real tanh(const Real& x);
Real erf(const Real& x);
Real erfc(const Real& x);
Real log1p(const Real& x);
Real sqrt(const Real& x);
Real rsqrt(const Real& x);  // mpfr_rec_sqrt: 1/sqrt(x) rounded once, not twice
Real abs(const Real& x);
Real pi(const Real& like);  // the argument selects the type only
// A decimal constant of a definition (such as 0.044715 in the tanh approximation of GELU), read
// from its digits at the working precision: the constant is the decimal number, and its binary64
// approximation would differ from it by up to 2^-54 relative.
Real decimal(const char* digits, const Real& like);
}  // namespace math

}  // namespace ampbench::reference
