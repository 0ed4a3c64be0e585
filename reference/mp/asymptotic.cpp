#include "reference/mp/asymptotic.hpp"

#include <fmt/format.h>
#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace ampbench::reference {
namespace {

constexpr double kExact = Asymptotic::kExact;
constexpr double kUnknown = Asymptotic::kUnknown;

bool is_zero(const Real& x) {
  return mpfr_zero_p(x.backend().data()) != 0;
}

int sign_of(const Real& x) {
  return mpfr_sgn(x.backend().data());
}

bool is_number(const Real& x) {
  return mpfr_number_p(x.backend().data()) != 0;
}

// |x| < 2^upper(x) and |x| >= 2^lower(x); both -infinity for a zero, +infinity for an infinity
// or NaN.
double upper(const Real& x) {
  if (is_zero(x)) return kExact;
  if (!is_number(x)) return kUnknown;
  return static_cast<double>(mpfr_get_exp(x.backend().data()));
}
double lower(const Real& x) {
  return upper(x) - 1;
}

// Bounds are log2 of magnitudes: the bound of a sum (log2(2^a + 2^b), a hair above: each call
// adds 2^-30 bits for binary64's roundings of log2 and exp2), of a product.
double plus(std::initializer_list<double> bounds) {
  double total = kExact;
  for (const double b : bounds) {
    if (b == kExact) continue;
    if (total == kExact || b == kUnknown || total == kUnknown) {
      total = total == kExact ? b : kUnknown;
      continue;
    }
    const double high = std::max(total, b);
    const double low = std::min(total, b);
    total = high + std::log2(1 + std::exp2(low - high)) + 0x1p-30;
  }
  return total;
}
double times(double a, double b) {
  return a == kExact || b == kExact ? kExact : a + b;
}

// The error of a result r that MPFR rounded to nearest (ternary value t): at most half a unit in
// its last place, 2^(upper - precision - 1).
double rounding(const Real& r, int t) {
  if (t == 0 || is_zero(r)) return kExact;
  if (!is_number(r)) return kUnknown;
  return upper(r) - static_cast<double>(mpfr_get_prec(r.backend().data())) - 1;
}

// A value and the log2 bound of its error: the running error analysis of every operation below
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., section 3.3).
struct Value {
  Real v;
  double error = kExact;
};

Value add(const Value& a, const Value& b) {
  Value r;
  const int t =
      mpfr_add(r.v.backend().data(), a.v.backend().data(), b.v.backend().data(), MPFR_RNDN);
  r.error = plus({a.error, b.error, rounding(r.v, t)});
  return r;
}

// |a' b' - a b| <= |a| e_b + |b| e_a + e_a e_b.
Value multiply(const Value& a, const Value& b) {
  Value r;
  const int t =
      mpfr_mul(r.v.backend().data(), a.v.backend().data(), b.v.backend().data(), MPFR_RNDN);
  r.error = plus({times(upper(a.v), b.error), times(upper(b.v), a.error), times(a.error, b.error),
                  rounding(r.v, t)});
  return r;
}

// |a'/d' - a/d| <= (e_a + |a/d| e_d) / |d'|, |d'| >= |d| / 2 when e_d <= |d| / 2.
Value divide(const Value& a, const Value& d) {
  if (is_zero(d.v)) throw std::domain_error("Asymptotic: a division by zero");
  Value r;
  const int t =
      mpfr_div(r.v.backend().data(), a.v.backend().data(), d.v.backend().data(), MPFR_RNDN);
  if (!(d.error < lower(d.v) - 1)) {
    r.error = kUnknown;
    return r;
  }
  const double carried = plus({a.error, times(upper(r.v), d.error)});
  r.error = plus({carried == kExact ? kExact : carried - (lower(d.v) - 1), rounding(r.v, t)});
  return r;
}

// e^z' - e^z = e^z (e^(z' - z) - 1), at most 2 e^z |z' - z| when |z' - z| <= 1/2.
Value exponential(const Value& z) {
  Value r;
  const int t = mpfr_exp(r.v.backend().data(), z.v.backend().data(), MPFR_RNDN);
  if (z.error == kExact) {
    r.error = rounding(r.v, t);
  } else if (z.error <= -1) {
    r.error = plus({upper(r.v) + z.error + 1, rounding(r.v, t)});
  } else {
    r.error = kUnknown;
  }
  return r;
}

// |log1p(s') - log1p(s)| <= 2 |s' - s| / (1 + s) when |s' - s| <= (1 + s) / 2.
Value log1p_value(const Value& s) {
  Value r;
  const int t = mpfr_log1p(r.v.backend().data(), s.v.backend().data(), MPFR_RNDN);
  if (!is_number(s.v)) {  // NaN, or an infinity: MPFR's value, as a Real's
    r.error = s.error;
    return r;
  }
  const Value one_plus = add(Value{Real(1)}, s);
  if (!(sign_of(one_plus.v) > 0)) throw std::domain_error("Asymptotic: log1p of a value <= -1");
  const double floor = lower(one_plus.v) - 1;  // 1 + s >= 2^floor, the rounding of 1 + s included
  if (s.error == kExact) {
    r.error = rounding(r.v, t);
  } else if (s.error < floor - 1) {
    r.error = plus({s.error + 1 - floor, rounding(r.v, t)});
  } else {
    r.error = kUnknown;
  }
  return r;
}

// |x'^-1/2 - x^-1/2| <= |x' - x| max |d/dx x^-1/2| <= |x' - x| 2^(1/2) x^(-3/2) when
// |x' - x| <= x / 2.
Value reciprocal_sqrt(const Value& x) {
  if (!(sign_of(x.v) > 0)) throw std::domain_error("Asymptotic: rsqrt of a value <= 0");
  Value r;
  const int t = mpfr_rec_sqrt(r.v.backend().data(), x.v.backend().data(), MPFR_RNDN);
  if (x.error == kExact) {
    r.error = rounding(r.v, t);
  } else if (x.error < lower(x.v) - 1) {
    r.error = plus({x.error + 0.5 - 1.5 * lower(x.v), rounding(r.v, t)});
  } else {
    r.error = kUnknown;
  }
  return r;
}

Value coefficient_of(const Asymptotic::Term& t) {
  return {t.coefficient, t.error};
}

Asymptotic::Term with_coefficient(const Asymptotic::Term& t, Value c) {
  return {t.key, std::move(c.v), t.key_error, c.error};
}

// log2 of a bound of |c e^-key| relative to e^-base: the coefficient with its error, moved by
// key - base (-infinity when that difference is beyond binary64).
double bound_relative(const Real& c, double error, const Real& key, const Real& base) {
  const Real gap = key - base;
  const double nats = mpfr_get_d(gap.backend().data(), MPFR_RNDD);
  return plus({upper(c), error}) - nats / std::numbers::ln2;
}

// The bound of e^-key when the key may be off by 2^key_error: e^(2^key_error) <= 2 below 1/2.
double key_slack(double key_error) {
  return key_error == kExact ? 0 : key_error <= -1 ? 1 : kUnknown;
}

// A nonzero value below 2^-(2^29), of the sign given: it rounds in every format and mode as any
// nonzero value below the smallest subnormal does (a stochastic mode's threshold reads it as 0).
Real tiny(int sign) {
  Real t;
  mpfr_set_si_2exp(t.backend().data(), sign, -(long{1} << 29), MPFR_RNDN);
  return t;
}

// x moved toward the sign given by 2^-256 of its last bit: for every format of at most 128 bits
// it rounds as x plus any smaller amount of that sign does.
Real nudged(const Real& x, int sign) {
  Real y;
  mpfr_set_prec(y.backend().data(), mpfr_get_prec(x.backend().data()) + 256);
  mpfr_set(y.backend().data(), x.backend().data(), MPFR_RNDN);  // exact: more bits
  if (sign > 0) {
    mpfr_nextabove(y.backend().data());
  } else {
    mpfr_nextbelow(y.backend().data());
  }
  return y;
}

// The sign of x's tail (-1, 0 or 1), or nothing when this precision cannot tell: its first term
// must exceed its error bound, and the rest of the tail with what was dropped.
std::optional<int> tail_sign(const Asymptotic& x) {
  const auto& tail = x.tail();
  if (tail.empty()) return x.dropped() ? std::nullopt : std::optional<int>(0);
  const Asymptotic::Term& first = tail.front();
  if (!(first.error < lower(first.coefficient) - 1)) return std::nullopt;
  // |first| >= 2^(lower - 1) e^-key; the rest is below 2^rest e^-key.
  double rest = kExact;
  for (std::size_t j = 1; j < tail.size(); ++j) {
    rest = plus({rest, bound_relative(tail[j].coefficient, tail[j].error, tail[j].key, first.key) +
                           key_slack(tail[j].key_error)});
  }
  if (const auto& d = x.dropped()) {
    rest = plus({rest, bound_relative(Real(1), kExact, d->key, first.key) + d->log2_bound});
  }
  if (!(lower(first.coefficient) - 1 - key_slack(first.key_error) > rest + 1)) return std::nullopt;
  return sign_of(first.coefficient);
}

// A value below every format's smallest subnormal by a margin: 2^-1200 (binary64's is 2^-1074).
constexpr double kBelowEverySubnormal = -1200;

std::optional<ReferenceValue> decide(const Asymptotic& x, const numeric::Format& f,
                                     numeric::Rounding mode, std::uint64_t error_bound, int bits,
                                     std::uint32_t random) {
  // NaN, or an infinity reached without overflow (infinite inputs): as the Ziv loop rounds a Real.
  if (!is_number(x.standard())) return rounded_exactly(f, mode, x.standard(), bits, random);
  Value s{x.standard(), x.standard_error()};
  const Real zero(0);
  // The tail terms that the standard part does not dwarf join it: by 192 bits an exact standard
  // part (no rounding boundary of a format of at most 128 bits lies that close to it unless it is
  // one), by the working precision and 64 bits an inexact one (the Ziv interval covers the rest).
  // An exact zero keeps a tail below every subnormal.
  const auto& tail = x.tail();
  bool folded = false;
  for (const Asymptotic::Term& t : tail) {
    const double term =
        bound_relative(t.coefficient, t.error, t.key, zero) + key_slack(t.key_error);
    if (is_zero(s.v) && s.error == kExact) {
      if (term < kBelowEverySubnormal) break;
    } else if (!is_zero(s.v) && lower(s.v) - term > (s.error == kExact ? 192.0 : bits + 64.0)) {
      break;
    }
    if (!(t.key <= Asymptotic::kFoldableBelow)) return std::nullopt;
    s = add(s, multiply(coefficient_of(t), exponential(Value{Real(-t.key), t.key_error})));
    folded = true;
  }
  if (const auto& d = x.dropped(); d && !(is_zero(s.v) && s.error == kExact)) {
    const double dropped = bound_relative(Real(1), kExact, d->key, zero) + d->log2_bound;
    if (!(lower(s.v) - dropped > bits + 64.0)) return std::nullopt;
  }
  if (s.error != kExact) {
    if (!mpfr_regular_p(s.v.backend().data())) return std::nullopt;
    // The interval is the larger of the policy's bound * 2^-bits * |s| and the propagated error.
    const double propagated =
        std::floor(std::log2(static_cast<double>(error_bound)) + lower(s.v) - s.error);
    if (!(propagated >= 16)) return std::nullopt;
    const int within = propagated < bits ? static_cast<int>(propagated) : bits;
    return rounded_within(f, mode, s.v, error_bound, within, random);
  }
  const std::optional<int> sign = folded ? std::optional<int>(0) : tail_sign(x);
  if (!sign) return std::nullopt;
  if (*sign == 0) return rounded_exactly(f, mode, s.v, bits, random);
  return rounded_exactly(f, mode, is_zero(s.v) ? tiny(*sign) : nudged(s.v, *sign), bits, random);
}

// "s (exact) + c e^-k (error 2^-300) + ... [dropped: 2^b e^-k]", each number to 12 digits.
std::string describe(const Asymptotic& x) {
  const auto text = [](const Real& v) {
    char buffer[64];
    mpfr_snprintf(buffer, sizeof buffer, "%.12Rg", v.backend().data());
    return std::string(buffer);
  };
  const auto error = [](double e) {
    return e == kExact ? std::string("exact") : fmt::format("error 2^{}", e);
  };
  std::string d = fmt::format("{} ({})", text(x.standard()), error(x.standard_error()));
  for (const auto& t : x.tail()) {
    d += fmt::format(" + {} e^-{} ({})", text(t.coefficient), text(t.key), error(t.error));
  }
  if (const auto& dropped = x.dropped()) {
    d += fmt::format(" [dropped: 2^{} e^-{}]", dropped->log2_bound, text(dropped->key));
  }
  return d;
}

}  // namespace

int Asymptotic::sign() const {
  if (!is_zero(standard_)) return sign_of(standard_);
  for (const Term& t : tail_) {
    if (!is_zero(t.coefficient)) return sign_of(t.coefficient);
  }
  return 0;
}

std::optional<Asymptotic::Magnitude> Asymptotic::magnitude() const {
  Magnitude m;
  if (!is_zero(standard_) || error_ != kExact) {
    m.key = Real(0);
    m.log2 = plus({upper(standard_), error_});
  } else if (!tail_.empty()) {
    m.key = tail_.front().key;
    m.log2 = kExact;
  } else if (dropped_) {
    return Magnitude{dropped_->key, dropped_->log2_bound};
  } else {
    return std::nullopt;
  }
  for (const Term& t : tail_) {
    m.log2 = plus(
        {m.log2, bound_relative(t.coefficient, t.error, t.key, m.key) + key_slack(t.key_error)});
  }
  if (dropped_) {
    m.log2 = plus(
        {m.log2, bound_relative(Real(1), kExact, dropped_->key, m.key) + dropped_->log2_bound});
  }
  return m;
}

void Asymptotic::add_dropped(const std::optional<Dropped>& d) {
  if (!d) return;
  if (!dropped_) {
    dropped_ = d;
    return;
  }
  // Both relative to the smaller key.
  const Dropped& first = d->key < dropped_->key ? *d : *dropped_;
  const Dropped& second = d->key < dropped_->key ? *dropped_ : *d;
  const double moved = bound_relative(Real(1), kExact, second.key, first.key) + second.log2_bound;
  dropped_ = Dropped{first.key, plus({first.log2_bound, moved})};
}

void Asymptotic::set_tail(std::vector<Term> terms) {
  const auto exact_zero = [](const Term& t) { return t.error == kExact && is_zero(t.coefficient); };
  std::erase_if(terms, exact_zero);
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.key < b.key; });
  std::vector<Term> joined;
  for (Term& t : terms) {
    if (!joined.empty()) {
      Term& last = joined.back();
      Real gap;
      const int rounded = mpfr_sub(gap.backend().data(), t.key.backend().data(),
                                   last.key.backend().data(), MPFR_RNDN);
      if (gap <= kMerge) {
        // c_last e^-k_last + c e^-k = (c_last + c e^-(k - k_last)) e^-k_last; keys computed equal
        // are one exponential (the assumption in asymptotic.hpp).
        Value moved = coefficient_of(t);
        if (!is_zero(gap)) {
          const double gap_error = plus({t.key_error, last.key_error, rounding(gap, rounded)});
          moved = multiply(moved, exponential(Value{Real(-gap), gap_error}));
        }
        last = with_coefficient(last, add(coefficient_of(last), moved));
        continue;
      }
    }
    joined.push_back(std::move(t));
  }
  std::erase_if(joined, exact_zero);
  if (joined.size() > kMaxTerms) {
    Dropped d{joined[kMaxTerms].key, kExact};
    for (std::size_t i = kMaxTerms; i < joined.size(); ++i) {
      d.log2_bound = plus({d.log2_bound, bound_relative(joined[i].coefficient, joined[i].error,
                                                        joined[i].key, d.key) +
                                             key_slack(joined[i].key_error)});
    }
    add_dropped(d);
    joined.resize(kMaxTerms);
  }
  tail_ = std::move(joined);
}

Asymptotic& Asymptotic::operator+=(const Asymptotic& b) {
  Value s = add(Value{standard_, error_}, Value{b.standard_, b.error_});
  standard_ = std::move(s.v);
  error_ = s.error;
  if (b.tail_.empty() && !b.dropped_) return *this;
  std::vector<Term> terms = tail_;
  terms.insert(terms.end(), b.tail_.begin(), b.tail_.end());
  add_dropped(b.dropped_);
  set_tail(std::move(terms));
  return *this;
}

Asymptotic& Asymptotic::operator-=(const Asymptotic& b) {
  return *this += -b;
}

Asymptotic operator-(const Asymptotic& a) {
  Asymptotic r = a;
  mpfr_neg(r.standard_.backend().data(), a.standard_.backend().data(), MPFR_RNDN);
  for (auto& t : r.tail_) {
    mpfr_neg(t.coefficient.backend().data(), t.coefficient.backend().data(), MPFR_RNDN);
  }
  return r;
}

Asymptotic& Asymptotic::operator*=(const Asymptotic& b) {
  const Value a_standard{standard_, error_};
  const Value b_standard{b.standard_, b.error_};
  Value s = multiply(a_standard, b_standard);
  if (tail_.empty() && b.tail_.empty() && !dropped_ && !b.dropped_) {
    standard_ = std::move(s.v);
    error_ = s.error;
    return *this;
  }
  // (s + sum a_i) (t + sum b_j) = s t + sum s b_j + sum t a_i + sum a_i b_j
  std::vector<Term> terms;
  for (const Term& t : b.tail_) {
    terms.push_back(with_coefficient(t, multiply(coefficient_of(t), a_standard)));
  }
  for (const Term& t : tail_) {
    terms.push_back(with_coefficient(t, multiply(coefficient_of(t), b_standard)));
  }
  for (const Term& ta : tail_) {
    for (const Term& tb : b.tail_) {
      Term product = with_coefficient(ta, multiply(coefficient_of(ta), coefficient_of(tb)));
      const int rounded = mpfr_add(product.key.backend().data(), ta.key.backend().data(),
                                   tb.key.backend().data(), MPFR_RNDN);
      product.key_error = plus({ta.key_error, tb.key_error, rounding(product.key, rounded)});
      terms.push_back(std::move(product));
    }
  }
  // What was dropped of one factor, times the whole other one.
  const auto times_magnitude = [](const std::optional<Dropped>& d,
                                  const std::optional<Magnitude>& m) -> std::optional<Dropped> {
    if (!d || !m) return std::nullopt;
    return Dropped{Real(d->key + m->key), d->log2_bound + m->log2};
  };
  const std::optional<Dropped> from_a = times_magnitude(dropped_, b.magnitude());
  const std::optional<Dropped> from_b = times_magnitude(b.dropped_, magnitude());
  standard_ = std::move(s.v);
  error_ = s.error;
  dropped_.reset();
  add_dropped(from_a);
  add_dropped(from_b);
  set_tail(std::move(terms));
  return *this;
}

Asymptotic Asymptotic::divided_by_standard(const Real& d, double d_error) const {
  const Value divisor{d, d_error};
  Asymptotic q;
  Value s = divide(Value{standard_, error_}, divisor);
  q.standard_ = std::move(s.v);
  q.error_ = s.error;
  for (const Term& t : tail_)
    q.tail_.push_back(with_coefficient(t, divide(coefficient_of(t), divisor)));
  if (dropped_) {
    // |dropped / d'| <= |dropped| / (|d| / 2).
    q.dropped_ = Dropped{dropped_->key,
                         d_error < lower(d) - 1 ? dropped_->log2_bound - (lower(d) - 1) : kUnknown};
  }
  return q;
}

// The powers 1 .. kSeriesTerms of a series in an infinitesimal u (|u| < 1/2), and a bound of the
// rest: sum over n > m of |u|^n <= 2 |u|^(m+1).
constexpr std::size_t kSeriesTerms = 3;

std::optional<Asymptotic::Dropped> series_rest(const std::optional<Asymptotic::Magnitude>& u) {
  if (!u) return std::nullopt;
  const double log2_u =
      u->log2 - mpfr_get_d(u->key.backend().data(), MPFR_RNDD) / std::numbers::ln2;
  if (!(log2_u < -1)) return Asymptotic::Dropped{u->key, kUnknown};  // not below 1/2
  const auto n = static_cast<double>(kSeriesTerms + 1);
  return Asymptotic::Dropped{Real(u->key * static_cast<unsigned>(kSeriesTerms + 1)),
                             n * u->log2 + 1};
}

bool Asymptotic::same_as(const Asymptotic& b) const {
  const auto equal = [](const Real& x, const Real& y) {
    return mpfr_get_prec(x.backend().data()) == mpfr_get_prec(y.backend().data()) &&
           mpfr_equal_p(x.backend().data(), y.backend().data()) != 0 &&
           mpfr_signbit(x.backend().data()) == mpfr_signbit(y.backend().data());
  };
  if (!equal(standard_, b.standard_) || error_ != b.error_ || tail_.size() != b.tail_.size() ||
      dropped_.has_value() != b.dropped_.has_value()) {
    return false;
  }
  for (std::size_t i = 0; i < tail_.size(); ++i) {
    const Term& x = tail_[i];
    const Term& y = b.tail_[i];
    if (!equal(x.key, y.key) || !equal(x.coefficient, y.coefficient) ||
        x.key_error != y.key_error || x.error != y.error) {
      return false;
    }
  }
  return !dropped_ ||
         (equal(dropped_->key, b.dropped_->key) && dropped_->log2_bound == b.dropped_->log2_bound);
}

Asymptotic& Asymptotic::operator/=(const Asymptotic& b) {
  if (is_zero(b.standard_)) {
    throw std::domain_error("Asymptotic: a division by a value whose standard part is zero");
  }
  Asymptotic q = divided_by_standard(b.standard_, b.error_);
  if (!b.tail_.empty() || b.dropped_) {
    // 1 / (s (1 + r)) = (1 / s) (1 - r + r^2 - ...), r = b's tail / s: infinitesimal. A row
    // divides every entry by the same sum: its series is kept for the next division.
    struct Last {
      int bits = 0;
      Asymptotic divisor;
      Asymptotic series;
    };
    thread_local Last last;
    const int bits = working_precision_bits();
    if (last.bits != bits || !last.divisor.same_as(b)) {
      Asymptotic rest = b;
      rest.standard_ = Real(0);
      rest.error_ = kExact;
      const Asymptotic minus_r = -rest.divided_by_standard(b.standard_, b.error_);
      Asymptotic series = 1;
      Asymptotic power = 1;
      for (std::size_t m = 1; m <= kSeriesTerms; ++m) {
        power *= minus_r;
        series += power;
      }
      series.add_dropped(series_rest(minus_r.magnitude()));
      last = Last{bits, b, std::move(series)};
    }
    q *= last.series;
  }
  return *this = std::move(q);
}

Asymptotic exp_of(const Asymptotic& z) {
  if (!z.tail_.empty() || z.dropped_) {
    throw std::domain_error("Asymptotic: exp of a value with a tail");
  }
  Asymptotic r;
  // e^-inf is 0 exactly, e^inf and e^NaN what MPFR makes of them, as for a Real.
  if (is_number(z.standard_) && z.standard_ < -Asymptotic::kSymbolicBelow) {
    r.tail_.push_back({Real(-z.standard_), Real(1), z.error_, kExact});
    return r;
  }
  Value e = exponential(Value{z.standard_, z.error_});
  r.standard_ = std::move(e.v);
  r.error_ = e.error;
  return r;
}

Asymptotic log1p_of(const Asymptotic& x) {
  Value l = log1p_value(Value{x.standard_, x.error_});
  Asymptotic r(std::move(l.v), l.error);
  if (x.tail_.empty() && !x.dropped_) return r;
  // log1p(s + t) = log1p(s) + log1p(u), u = t / (1 + s): u - u^2/2 + u^3/3 - ...
  const Value one_plus = add(Value{Real(1)}, Value{x.standard_, x.error_});
  Asymptotic t = x;
  t.standard_ = Real(0);
  t.error_ = kExact;
  const Asymptotic u = t.divided_by_standard(one_plus.v, one_plus.error);
  Asymptotic series = 0;
  Asymptotic power = 1;
  for (std::size_t m = 1; m <= kSeriesTerms; ++m) {
    power *= u;
    const Asymptotic term = power / Asymptotic(m);
    series += m % 2 == 1 ? term : -term;
  }
  series.add_dropped(series_rest(u.magnitude()));
  return r += series;
}

namespace math {

Asymptotic exp(const Asymptotic& z) {
  return exp_of(z);
}

Asymptotic log1p(const Asymptotic& x) {
  return log1p_of(x);
}

Asymptotic rsqrt(const Asymptotic& x) {
  if (!x.tail().empty() || x.dropped()) {
    throw std::domain_error("Asymptotic: rsqrt of a value with a tail");
  }
  Value r = reciprocal_sqrt(Value{x.standard(), x.standard_error()});
  return Asymptotic(std::move(r.v), r.error);
}

}  // namespace math

ReferenceValue correctly_rounded_asymptotic(const numeric::Format& f, numeric::Rounding mode,
                                            const std::function<Asymptotic()>& compute,
                                            const ZivPolicy& policy, std::uint32_t random) {
  if (policy.error_bound >= (std::uint64_t{1} << 32)) {
    throw std::invalid_argument("correctly_rounded_asymptotic: error_bound must be below 2^32");
  }
  std::string last;
  for (int bits = policy.initial_bits; bits <= policy.max_bits; bits *= 2) {
    const WorkingPrecision precision(bits);
    mpfr_clear_flags();
    const Asymptotic x = compute();
    if (mpfr_overflow_p() || mpfr_underflow_p()) {
      throw std::range_error("correctly_rounded_asymptotic: the op left MPFR's exponent range");
    }
    if (auto r = decide(x, f, mode, policy.error_bound, precision.bits(), random)) return *r;
    if (bits * 2 > policy.max_bits) last = describe(x);
  }
  throw std::runtime_error(fmt::format(
      "correctly_rounded_asymptotic: undecided at {} bits for the value {} in {}; the exact value "
      "is probably a value of the format or a rounding boundary computed with inexact operations",
      policy.max_bits, last, f.name));
}

}  // namespace ampbench::reference
