#include "harness/numeric/test/mpfr_oracle.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace ampbench::numeric::oracle {
namespace {

// Enough bits to hold exactly the difference between a format value and an input spanning up to
// 2^-3000 .. 2^1024 (an exact dot product of binary64 values reaches 2^-2148). The computations
// below use fewer where that suffices (exact_precision), and check that every step they need exact
// was exact.
constexpr mpfr_prec_t kExactPrecision = 4200;

class Number {
 public:
  explicit Number(mpfr_prec_t precision) { mpfr_init2(value_, precision); }
  ~Number() { mpfr_clear(value_); }
  Number(const Number&) = delete;
  Number& operator=(const Number&) = delete;
  mpfr_ptr get() { return value_; }

 private:
  mpfr_t value_;
};

// A binary64 value as an MPFR number (exact).
class Binary64 {
 public:
  explicit Binary64(double x) {
    mpfr_init2(value_, 53);
    mpfr_set_d(value_, x, MPFR_RNDN);
  }
  ~Binary64() { mpfr_clear(value_); }
  Binary64(const Binary64&) = delete;
  Binary64& operator=(const Binary64&) = delete;
  mpfr_srcptr get() const { return value_; }

 private:
  mpfr_t value_;
};

// MPFR's exponent range for the lifetime of the object; the previous range is restored after.
class ExponentRange {
 public:
  ExponentRange(mpfr_exp_t emin, mpfr_exp_t emax)
      : old_emin_(mpfr_get_emin()), old_emax_(mpfr_get_emax()) {
    if (mpfr_set_emin(emin) != 0 || mpfr_set_emax(emax) != 0) {
      mpfr_set_emin(old_emin_);
      mpfr_set_emax(old_emax_);
      throw std::logic_error("mpfr oracle: exponent range not supported by MPFR");
    }
  }
  ~ExponentRange() {
    mpfr_set_emin(old_emin_);
    mpfr_set_emax(old_emax_);
  }
  ExponentRange(const ExponentRange&) = delete;
  ExponentRange& operator=(const ExponentRange&) = delete;

 private:
  mpfr_exp_t old_emin_;
  mpfr_exp_t old_emax_;
};

// Reused numbers, one set per thread (MPFR keeps its exponent range per thread when built with
// thread-local storage, as Debian's is; see thread_safe()).
struct Workspace {
  Number toward_zero{64};
  Number away{64};
  Number a{kExactPrecision};
  Number b{kExactPrecision};
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

// Whether |x| > 2^(e-2), half the smallest value of an MPFR range whose minimum exponent is e.
bool mpfr_cmpabs_ui_2exp_above_half(mpfr_srcptr x, mpfr_exp_t e) {
  Number half(2);
  mpfr_set_ui_2exp(half.get(), 1, e - 2, MPFR_RNDN);
  return mpfr_cmpabs(x, half.get()) > 0;
}

// Rounds x to precision p in MPFR with mode rnd, in the exponent range of the format: MPFR's
// significands lie in [1/2, 1), so a format value 2^e is MPFR exponent e + 1. With subnormals,
// the smallest positive value 2^(emin-p+1) is MPFR's minimum (emin_mpfr = emin - p + 2) and
// mpfr_subnormalize rounds the binades below 2^emin to fewer bits (using the ternary value, so
// without double rounding). Without subnormals the minimum is 2^emin (emin_mpfr = emin + 1) and
// MPFR's underflow rule gives 0 or 2^emin. With bounded_top the largest MPFR value is the
// format's (2 - 2^(1-p)) * 2^emax and MPFR reports overflow as IEEE 754 defines it; otherwise
// the range above is unbounded. Returns whether MPFR overflowed.
//
// MPFR wants its inputs inside the current exponent range, which a value of any precision need not
// be: one at or above 2^emax_mpfr overflows in every mode, and one below the smallest value
// 2^(emin_mpfr-1) is rounded here as MPFR rounds an underflow (to 0 or the smallest value; to
// nearest, the smallest value only above half of it).
bool round_mpfr(const Spec& s, mpfr_ptr result, mpfr_srcptr x, mpfr_rnd_t rnd, bool bounded_top) {
  mpfr_set_prec(result, s.precision);
  const mpfr_exp_t emin = s.subnormals ? s.emin - s.precision + 2 : s.emin + 1;
  const mpfr_exp_t emax = bounded_top ? s.emax + 1 : mpfr_get_emax_max();
  if (mpfr_regular_p(x) && mpfr_get_exp(x) > emax) {
    mpfr_set_inf(result, mpfr_sgn(x));
    return true;
  }
  if (mpfr_regular_p(x) && mpfr_get_exp(x) < emin) {
    const int sign = mpfr_sgn(x);
    bool smallest = false;
    switch (rnd) {
      case MPFR_RNDN: smallest = mpfr_cmpabs_ui_2exp_above_half(x, emin); break;
      case MPFR_RNDU: smallest = sign > 0; break;
      case MPFR_RNDD: smallest = sign < 0; break;
      case MPFR_RNDA: smallest = true; break;
      default: smallest = false; break;
    }
    const ExponentRange range(emin, emax);
    if (smallest) {
      mpfr_set_si_2exp(result, sign, emin - 1, MPFR_RNDN);
    } else {
      mpfr_set_zero(result, sign);
    }
    return false;
  }
  const ExponentRange range(emin, emax);
  mpfr_clear_flags();
  const int ternary = mpfr_set(result, x, rnd);
  if (s.subnormals) mpfr_subnormalize(result, ternary, rnd);
  return mpfr_overflow_p() != 0;
}

// Whether the nonzero format value v has an odd last significand bit (the bit of weight
// 2^(max(e, emin) - p + 1)). Zero is even.
bool odd(const Spec& s, double v) {
  if (v == 0) return false;
  const int e = std::max(std::ilogb(v), s.emin);
  const double integral = std::ldexp(std::fabs(v), s.precision - 1 - e);  // exact, < 2^p
  return std::fmod(integral, 2.0) == 1.0;
}

// Sets w.toward_zero and w.away to x's neighbours (unbounded exponent range above).
void compute_neighbours(const Spec& s, Workspace& w, mpfr_srcptr x) {
  round_mpfr(s, w.toward_zero.get(), x, MPFR_RNDZ, false);
  round_mpfr(s, w.away.get(), x, MPFR_RNDA, false);
}

bool exact(Workspace& w) {
  return mpfr_equal_p(w.toward_zero.get(), w.away.get()) != 0;
}

void require_exact(int ternary) {
  if (ternary != 0) throw std::logic_error("mpfr oracle: an exact step was inexact");
}

// x, toward_zero and away are multiples of x's last bit, 2^(ilogb(x) + 1 - precision(x)) (the
// format's quantum is at least that when x has at least p bits), and below
// 2^(max(ilogb(x), emin) + 2).
mpfr_prec_t exact_precision(const Spec& s, mpfr_srcptr x) {
  const mpfr_exp_t e = mpfr_get_exp(x) - 1;  // ilogb: MPFR's significand is in [1/2, 1)
  const mpfr_exp_t top = std::max<mpfr_exp_t>(e, s.emin) + 2;
  const mpfr_exp_t bottom = e + 1 - std::max<mpfr_prec_t>(mpfr_get_prec(x), s.precision);
  return std::min<mpfr_prec_t>(top - bottom + 2, kExactPrecision);
}

// Sets w.a = |x| - |toward_zero| and w.b = |away| - |x|, exactly.
void distances(const Spec& s, Workspace& w, mpfr_srcptr x) {
  const mpfr_prec_t precision = exact_precision(s, x);
  mpfr_set_prec(w.a.get(), precision);
  mpfr_set_prec(w.b.get(), precision);
  require_exact(mpfr_abs(w.b.get(), w.away.get(), MPFR_RNDN));  // exact: precision >= p
  require_exact(mpfr_sgn(x) > 0 ? mpfr_sub(w.b.get(), w.b.get(), x, MPFR_RNDN)
                                : mpfr_add(w.b.get(), w.b.get(), x, MPFR_RNDN));
  require_exact(mpfr_abs(w.a.get(), x, MPFR_RNDN));
  require_exact(mpfr_sgn(x) > 0 ? mpfr_sub(w.a.get(), w.a.get(), w.toward_zero.get(), MPFR_RNDN)
                                : mpfr_add(w.a.get(), w.a.get(), w.toward_zero.get(), MPFR_RNDN));
}

std::uint64_t threshold(const Spec& s, Workspace& w, mpfr_srcptr x) {
  if (exact(w)) return 0;
  distances(s, w, x);
  // a / (a + b) is the fraction of the quantum between toward_zero and x.
  require_exact(mpfr_add(w.b.get(), w.a.get(), w.b.get(), MPFR_RNDN));
  mpfr_mul_2ui(w.a.get(), w.a.get(), 32, MPFR_RNDN);
  mpfr_div(w.a.get(), w.a.get(), w.b.get(), MPFR_RNDZ);
  return mpfr_get_ui(w.a.get(), MPFR_RNDZ);  // floor: RNDZ never crosses an integer
}

// Exact (a format value is a binary64 value), or infinity for 2^1024.
double to_double(mpfr_ptr v) {
  return mpfr_get_d(v, MPFR_RNDN);
}

}  // namespace

Spec spec_of(const Format& f) {
  const bool ocp = f.specials == SpecialEncoding::single_nan;
  const double max_significand = 2.0 - std::ldexp(1.0, (ocp ? 2 : 1) - f.precision);
  return Spec{f.precision,
              f.emin,
              f.emax,
              f.subnormals,
              f.overflow == Overflow::saturate || f.specials == SpecialEncoding::none,
              f.specials == SpecialEncoding::ieee,
              f.specials != SpecialEncoding::none,
              std::ldexp(max_significand, f.emax)};
}

Result round(const Spec& s, Rounding mode, mpfr_srcptr x, std::uint32_t random) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double sign = mpfr_signbit(x) ? -1.0 : 1.0;
  if (mpfr_nan_p(x)) return {s.has_nan ? kNaN : s.max_finite, RoundingEvent::nan, false};
  if (mpfr_inf_p(x)) {
    if (s.saturate) return {sign * s.max_finite, RoundingEvent::saturation, false};
    if (s.has_infinity) return {sign * kInf, RoundingEvent::exact, false};
    return {kNaN, RoundingEvent::nan, false};
  }
  if (mpfr_zero_p(x)) return {sign * 0.0, RoundingEvent::exact, false};

  Workspace& w = workspace();
  double r = 0;
  bool overflow = false;
  bool away = false;  // stochastic modes: the draw chose the neighbour away from zero
  const auto native = [&](mpfr_rnd_t rnd) {
    overflow = round_mpfr(s, w.toward_zero.get(), x, rnd, true);
    r = to_double(w.toward_zero.get());
  };
  const auto pick = [&](bool choose_away) {
    away = choose_away;
    r = to_double(choose_away ? w.away.get() : w.toward_zero.get());
  };
  switch (mode) {
    case Rounding::nearest_even: native(MPFR_RNDN); break;
    case Rounding::toward_zero: native(MPFR_RNDZ); break;
    case Rounding::upward: native(MPFR_RNDU); break;
    case Rounding::downward: native(MPFR_RNDD); break;
    case Rounding::nearest_away:
      compute_neighbours(s, w, x);
      distances(s, w, x);
      pick(!exact(w) && mpfr_lessequal_p(w.b.get(), w.a.get()) != 0);
      break;
    case Rounding::to_odd:
      compute_neighbours(s, w, x);
      pick(!exact(w) && !odd(s, to_double(w.toward_zero.get())));
      break;
    case Rounding::stochastic_proportional:
      compute_neighbours(s, w, x);
      pick(random < threshold(s, w, x));
      break;
    case Rounding::stochastic_equal:
      compute_neighbours(s, w, x);
      pick(!exact(w) && random >= 0x80000000u);
      break;
  }

  // IEEE 754 §7.4: overflow when the result rounded with an unbounded exponent range exceeds the
  // largest finite value. Nearest modes give infinity, directed modes the value on their side;
  // stochastic rounding goes the way its draw chose.
  if (overflow || std::fabs(r) > s.max_finite) {
    bool to_infinity = false;
    switch (mode) {
      case Rounding::nearest_even:
      case Rounding::nearest_away: to_infinity = true; break;
      case Rounding::toward_zero:
      case Rounding::to_odd: to_infinity = false; break;
      case Rounding::upward: to_infinity = sign > 0; break;
      case Rounding::downward: to_infinity = sign < 0; break;
      case Rounding::stochastic_proportional:
      case Rounding::stochastic_equal: to_infinity = away; break;
    }
    if (!to_infinity || s.saturate) {
      return {sign * s.max_finite, RoundingEvent::saturation, true};
    }
    return {s.has_infinity ? sign * kInf : kNaN, RoundingEvent::overflow, true};
  }
  if (mpfr_cmp_d(x, r) == 0) return {r, RoundingEvent::exact, false};
  if (r == 0) return {r, RoundingEvent::flush_to_zero, false};
  if (mpfr_get_exp(x) - 1 < s.emin) return {r, RoundingEvent::underflow, false};
  return {r, RoundingEvent::inexact, false};
}

Result round(const Spec& s, Rounding mode, double x, std::uint32_t random) {
  const Binary64 v(x);
  return round(s, mode, v.get(), random);
}

Neighbours neighbours(const Spec& s, double x) {
  Workspace& w = workspace();
  const Binary64 v(x);
  compute_neighbours(s, w, v.get());
  return {to_double(w.toward_zero.get()), to_double(w.away.get())};
}

std::uint64_t stochastic_threshold(const Spec& s, mpfr_srcptr x) {
  Workspace& w = workspace();
  compute_neighbours(s, w, x);
  return threshold(s, w, x);
}

std::uint64_t stochastic_threshold(const Spec& s, double x) {
  const Binary64 v(x);
  return stochastic_threshold(s, v.get());
}

bool thread_safe() {
  return mpfr_buildopt_tls_p() != 0;
}

}  // namespace ampbench::numeric::oracle
