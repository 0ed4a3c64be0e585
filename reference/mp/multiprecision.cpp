#include "reference/mp/multiprecision.hpp"

#include <fmt/format.h>
#include <gmp.h>
#include <mpfr.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ampbench::reference {

static_assert(GMP_NUMB_BITS == 64, "the window is read from 64-bit limbs");

namespace {

namespace bmp = boost::multiprecision;

// The smallest number of decimal digits that Boost turns into at least `bits` bits.
unsigned digits10_for(int bits) {
  unsigned digits10 = 1;
  while (bmp::detail::digits10_2_2(digits10) < static_cast<unsigned long>(bits)) ++digits10;
  return digits10;
}

// MPFR's exponent range by default, and the exponents round_window's int arithmetic takes with
// ample margin.
constexpr long kExponentLimit = long{1} << 30;

// A fresh Real at the working precision, for the result of an MPFR call.
Real fresh() {
  return Real();
}

}  // namespace

WorkingPrecision::WorkingPrecision(int bits)
    : previous_digits10_(Real::thread_default_precision()), bits_(bits) {
  if (bits < kMinimumPrecisionBits) {
    throw std::invalid_argument(fmt::format("WorkingPrecision: {} bits is below the minimum of {}",
                                            bits, kMinimumPrecisionBits));
  }
  const unsigned digits10 = digits10_for(bits);
  Real::thread_default_precision(digits10);
  bits_ = static_cast<int>(bmp::detail::digits10_2_2(digits10));
}

WorkingPrecision::~WorkingPrecision() {
  Real::thread_default_precision(previous_digits10_);
}

int working_precision_bits() {
  return static_cast<int>(bmp::detail::digits10_2_2(Real::thread_default_precision()));
}

int precision_bits(const Real& x) {
  return static_cast<int>(mpfr_get_prec(x.backend().data()));
}

Real to_real(double x) {
  Real r = fresh();
  mpfr_set_d(r.backend().data(), x, MPFR_RNDN);  // exact: the precision is at least 53 bits
  return r;
}

double to_double(const Real& x) {
  return round_to(numeric::formats::fp64, numeric::Rounding::nearest_even, x).value;
}

numeric::Rounded round_to(const numeric::Format& f, numeric::Rounding mode, const Real& x,
                          std::uint32_t random) {
  mpfr_srcptr v = x.backend().data();
  const bool negative = mpfr_signbit(v) != 0;
  if (mpfr_nan_p(v)) {
    return numeric::round_to(
        f, mode, std::copysign(std::numeric_limits<double>::quiet_NaN(), negative ? -1.0 : 1.0));
  }
  if (mpfr_inf_p(v)) {
    const double inf = std::numeric_limits<double>::infinity();
    return numeric::round_to(f, mode, negative ? -inf : inf);
  }
  if (mpfr_zero_p(v)) return numeric::round_to(f, mode, negative ? -0.0 : 0.0);

  // |x| = 0.d[n-1] d[n-2] ... d[0] * 2^e in limbs of 64 bits, the top bit of d[n-1] set and the
  // bits beyond the precision zero (MPFR's custom interface documents this layout).
  const long e = mpfr_get_exp(v);
  if (e > kExponentLimit || e < -kExponentLimit) {
    throw std::range_error(fmt::format("round_to: exponent {} beyond +-2^30", e));
  }
  const auto* limbs = static_cast<const mp_limb_t*>(mpfr_custom_get_significand(v));
  const long n = (mpfr_get_prec(v) + GMP_NUMB_BITS - 1) / GMP_NUMB_BITS;
  numeric::Window w{};
  w.negative = negative;
  w.high = limbs[n - 1];
  w.low = n >= 2 ? limbs[n - 2] : 0;
  for (long i = 0; i + 2 < n && !w.sticky; ++i) w.sticky = limbs[i] != 0;
  w.exponent = static_cast<int>(e - 64);
  return numeric::round_window(f, mode, w, random);
}

namespace {

// Both roundings a reference reports, of one value.
struct Roundings {
  numeric::Rounded in_format;
  numeric::Rounded nearest_fp64;
};

Roundings round_both(const numeric::Format& f, numeric::Rounding mode, const Real& x,
                     std::uint32_t random) {
  return {round_to(f, mode, x, random),
          round_to(numeric::formats::fp64, numeric::Rounding::nearest_even, x)};
}

bool same(const numeric::Rounded& a, const numeric::Rounded& b) {
  return a.bits == b.bits && a.event == b.event;
}

// Whether lo <= v <= hi, for a finite v.
bool encloses(const Real& lo, const Real& hi, double v) {
  return std::isfinite(v) && mpfr_cmp_d(lo.backend().data(), v) <= 0 &&
         mpfr_cmp_d(hi.backend().data(), v) >= 0;
}

std::string describe(const Real& x) {
  char text[64];
  mpfr_snprintf(text, sizeof text, "%.30Re", x.backend().data());
  return text;
}

}  // namespace

ReferenceValue rounded_exactly(const numeric::Format& f, numeric::Rounding mode, const Real& x,
                               int bits, std::uint32_t random) {
  const Roundings r = round_both(f, mode, x, random);
  return {r.in_format, r.nearest_fp64.value, bits};
}

std::optional<ReferenceValue> rounded_within(const numeric::Format& f, numeric::Rounding mode,
                                             const Real& x, std::uint64_t error_bound, int bits,
                                             std::uint32_t random) {
  // [lo, hi] encloses [x - d, x + d]: d rounded up, the ends rounded outward.
  mpfr_t d;
  mpfr_init2(d, 64);
  mpfr_abs(d, x.backend().data(), MPFR_RNDU);
  mpfr_mul_ui(d, d, static_cast<unsigned long>(error_bound), MPFR_RNDU);
  mpfr_mul_2si(d, d, -bits, MPFR_RNDU);
  Real lo = x;
  Real hi = x;
  mpfr_sub(lo.backend().data(), x.backend().data(), d, MPFR_RNDD);
  mpfr_add(hi.backend().data(), x.backend().data(), d, MPFR_RNDU);
  mpfr_clear(d);
  if (mpfr_underflow_p()) {
    throw std::range_error("correctly_rounded: the error bound left MPFR's exponent range");
  }
  // Rounding is monotonic in the value for a fixed draw, so equal results at both ends are the
  // result of everything between; a value of f inside would round to itself exactly.
  const Roundings at_lo = round_both(f, mode, lo, random);
  const Roundings at_hi = round_both(f, mode, hi, random);
  if (same(at_lo.in_format, at_hi.in_format) &&
      at_lo.nearest_fp64.bits == at_hi.nearest_fp64.bits &&
      !encloses(lo, hi, at_lo.in_format.value)) {
    return ReferenceValue{at_lo.in_format, at_lo.nearest_fp64.value, bits};
  }
  return std::nullopt;
}

ReferenceValue correctly_rounded(const numeric::Format& f, numeric::Rounding mode,
                                 const std::function<Real()>& compute, const ZivPolicy& policy,
                                 std::uint32_t random) {
  if (policy.error_bound >= (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("correctly_rounded: error_bound must be below 2^32");
  }
  Real last;
  for (int bits = policy.initial_bits; bits <= policy.max_bits; bits *= 2) {
    const WorkingPrecision precision(bits);
    mpfr_clear_flags();
    const Real x = compute();
    if (mpfr_overflow_p() || mpfr_underflow_p()) {
      throw std::range_error("correctly_rounded: the op left MPFR's exponent range");
    }
    // No rounding anywhere (the value is exact), or a value the relative bound pins down: zero,
    // an infinity reached without overflow (log(0)), NaN.
    if (!mpfr_inexflag_p() || !mpfr_regular_p(x.backend().data())) {
      return rounded_exactly(f, mode, x, precision.bits(), random);
    }
    if (auto r = rounded_within(f, mode, x, policy.error_bound, precision.bits(), random)) {
      return *r;
    }
    last = x;
  }
  throw std::runtime_error(fmt::format(
      "correctly_rounded: undecided at {} bits for the value {} in {}; the exact value is "
      "probably a value of the format or a rounding boundary computed with inexact operations",
      policy.max_bits, describe(last), f.name));
}

namespace math {

namespace {

Real apply(int (*function)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), const Real& x) {
  Real r = fresh();
  function(r.backend().data(), x.backend().data(), MPFR_RNDN);
  return r;
}

}  // namespace

Real exp(const Real& x) {
  return apply(mpfr_exp, x);
}
Real log(const Real& x) {
  return apply(mpfr_log, x);
}
Real tanh(const Real& x) {
  return apply(mpfr_tanh, x);
}
Real erf(const Real& x) {
  return apply(mpfr_erf, x);
}
Real erfc(const Real& x) {
  return apply(mpfr_erfc, x);
}
Real log1p(const Real& x) {
  return apply(mpfr_log1p, x);
}
Real sqrt(const Real& x) {
  return apply(mpfr_sqrt, x);
}
Real rsqrt(const Real& x) {
  return apply(mpfr_rec_sqrt, x);
}
Real abs(const Real& x) {
  return apply(mpfr_abs, x);
}

Real pi(const Real&) {
  Real r = fresh();
  mpfr_const_pi(r.backend().data(), MPFR_RNDN);
  return r;
}

Real decimal(const char* digits, const Real&) {
  Real r = fresh();
  if (mpfr_set_str(r.backend().data(), digits, 10, MPFR_RNDN) != 0) {
    throw std::invalid_argument(fmt::format("math::decimal: not a number: {}", digits));
  }
  return r;
}

}  // namespace math

}  // namespace ampbench::reference
