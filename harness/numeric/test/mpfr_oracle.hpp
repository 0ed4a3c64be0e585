// An independent oracle for rounding a binary64 value to a format, built on the MPFR C API.
//
// It shares nothing with rounding.hpp but the enums that name modes and events: the format is
// reduced to its defining numbers (Spec), round-to-nearest-even and the directed modes are MPFR's
// own correctly rounded conversions in an exponent range that emulates the format, and the other
// modes are derived from MPFR's two neighbours (MPFR_RNDZ, MPFR_RNDA) with exact comparisons at
// high precision. The overflow policy is applied afterwards, from IEEE 754 §7.4 and the OCP fp8
// specification, not from the library's code.
#pragma once

#include <mpfr.h>

#include <cstdint>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric::oracle {

// A format as the oracle sees it.
struct Spec {
  int precision;  // p, implicit bit included
  int emin;
  int emax;
  bool subnormals;
  bool saturate;      // Overflow::saturate
  bool has_infinity;  // false: infinities become NaN (OCP e4m3), or saturate (no NaN either)
  bool has_nan;       // false (OCP MX FP6/FP4): every pattern is finite; overflow saturates, and a
                      // NaN input gives +max_finite, as NVIDIA's cvt .satfinite does
  double max_finite;  // the largest finite value
};

// The Spec of a Format. The largest finite value is (2 - 2^(1-p)) * 2^emax for IEEE-style
// encodings and for the formats without infinity or NaN, and (2 - 2^(2-p)) * 2^emax for OCP
// e4m3, whose top significand is NaN.
Spec spec_of(const Format& f);

struct Result {
  double value;  // NaN when the result is NaN (its payload is not modelled)
  RoundingEvent event;
  bool overflowed;  // the result rounded with an unbounded exponent range exceeds max_finite
};

// The correctly rounded result of x in mode (with `random` for the stochastic modes, see
// rounding.hpp), and the rounding event it should report.
Result round(const Spec& spec, Rounding mode, double x, std::uint32_t random = 0);
// The same for a value of higher precision (an exact dot product, a multiprecision reference): the
// span from its last bit to the format's largest binade must stay below about 4200 bits (the
// oracle throws std::logic_error otherwise, never answers inexactly), and its exponent must lie
// within the current MPFR exponent range, which the oracle changes only inside.
Result round(const Spec& spec, Rounding mode, mpfr_srcptr x, std::uint32_t random = 0);

// The two values of the format (with an unbounded exponent range above) that enclose x:
// toward_zero <= |x| <= away in magnitude, both equal to x when x is representable.
struct Neighbours {
  double toward_zero;
  double away;
};
Neighbours neighbours(const Spec& spec, double x);

// floor(2^32 * (|x| - |toward_zero|) / (|away| - |toward_zero|)), computed exactly; 0 when x is
// representable. Stochastic-proportional rounding goes away from zero iff random < this.
std::uint64_t stochastic_threshold(const Spec& spec, double x);
std::uint64_t stochastic_threshold(const Spec& spec, mpfr_srcptr x);

// Whether MPFR keeps its exponent range per thread (needed to call the oracle from threads).
bool thread_safe();

// A 512-bit MPFR number, +0 when made, cleared when it goes out of scope: exact for the sums of
// products the tests form.
struct Mpfr {
  mpfr_t v;
  Mpfr() {
    mpfr_init2(v, 512);
    mpfr_set_zero(v, 1);
  }
  ~Mpfr() { mpfr_clear(v); }
  Mpfr(const Mpfr&) = delete;
  Mpfr& operator=(const Mpfr&) = delete;
};

}  // namespace ampbench::numeric::oracle
