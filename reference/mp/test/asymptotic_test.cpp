// The softmax family's references in Asymptotic (asymptotic.hpp): exponentials beyond MPFR's range
// or beyond the Ziv loop's reach, against two independent oracles.
//  - Near binary32's overflow threshold the exact results lie within e^-1e38 of a value of the
//    format (or of zero): derived by hand, 1 / (1 + tiny) is just below 1 and so on, and checked
//    in every directed mode, where the side decides the result.
//  - Where the exponentials are small but within MPFR's range (e^-257 to e^-600), the defining
//    formulas evaluated with MPFR's C API at 2048 bits and rounded by the numeric oracle
//    (harness/numeric/test/mpfr_oracle.hpp), in every format and mode.
#include "reference/mp/asymptotic.hpp"

#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "harness/numeric/test/mpfr_oracle.hpp"
#include "reference/mp/attention_backward.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::reference {
namespace {

using numeric::Rounding;
using numeric::RoundingEvent;
namespace formats = numeric::formats;

std::vector<Asymptotic> values(const std::vector<double>& x) {
  return std::vector<Asymptotic>(x.begin(), x.end());
}

// Element j of evaluate()'s result, correctly rounded.
ReferenceValue element(const numeric::Format& f, Rounding mode,
                       const std::function<std::vector<Asymptotic>()>& evaluate, std::size_t j) {
  ZivPolicy policy;
  policy.error_bound = 1u << 20;
  return correctly_rounded_asymptotic(
      f, mode, [&] { return evaluate().at(j); }, policy);
}

void expect_rounded(const ReferenceValue& got, double value, RoundingEvent event,
                    const std::string& what) {
  EXPECT_EQ(got.rounded.value, value) << what << ": got " << got.rounded.value;
  EXPECT_EQ(std::signbit(got.rounded.value), std::signbit(value)) << what;
  EXPECT_EQ(got.rounded.event, event) << what << ": event " << static_cast<int>(got.rounded.event);
}

// Two logits 0x1.1p128 apart: e^-(0x1.1p128), about e^-3.6e38, is the other's weight.
constexpr double kTop = 0x1.1p127;
constexpr double kBottom = -0x1.1p127;
constexpr double kBelowOne32 = 0x1.fffffep-1;  // binary32's largest value below 1
constexpr double kSubnormal32 = 0x1p-149;
constexpr double kMax32 = 0x1.fffffep127;

TEST(Asymptotic, ExponentialsBeyondTheRangeAreTermsOfTheirKey) {
  const WorkingPrecision precision(256);
  const Asymptotic tiny = math::exp(Asymptotic(kBottom - kTop));
  EXPECT_TRUE(tiny.standard_exact());
  EXPECT_EQ(tiny.standard(), 0);
  ASSERT_EQ(tiny.tail().size(), 1u);
  EXPECT_EQ(tiny.tail()[0].key, Real(kTop - kBottom));
  EXPECT_EQ(tiny.tail()[0].coefficient, 1);
  EXPECT_EQ(tiny.sign(), 1);
  // Within the range, an ordinary value; e^0 exactly 1.
  const Asymptotic small = math::exp(Asymptotic(-200));
  EXPECT_TRUE(small.tail().empty());
  EXPECT_FALSE(small.standard_exact());
  EXPECT_TRUE(math::exp(Asymptotic(0)).standard_exact());
  // 1 + tiny - 1 is the tiny term alone, exactly; times 0 it vanishes exactly.
  const Asymptotic rest = 1 + tiny - 1;
  EXPECT_TRUE(rest.standard_exact());
  EXPECT_EQ(rest.standard(), 0);
  EXPECT_EQ(rest.tail().size(), 1u);
  const Asymptotic nothing = rest * 0;
  EXPECT_TRUE(nothing.tail().empty());
  EXPECT_EQ(nothing.sign(), 0);
  // 1 / (1 + tiny) = 1 - tiny + ...: exactly 1 in its standard part, a negative tail.
  const Asymptotic q = 1 / (1 + tiny);
  EXPECT_TRUE(q.standard_exact());
  EXPECT_EQ(q.standard(), 1);
  ASSERT_FALSE(q.tail().empty());
  EXPECT_EQ(q.tail()[0].coefficient, -1);
  // Comparisons see the tail: 1 - tiny < 1 < 1 + tiny.
  EXPECT_TRUE(q < 1);
  EXPECT_TRUE(Asymptotic(1) < 1 + tiny);
}

TEST(Asymptotic, SoftmaxNearOverflowRoundsBySideInEveryMode) {
  const std::vector<double> x{kTop, kBottom};
  const auto softmax = [&] { return ops::softmax<Asymptotic>(values(x), 1, 2); };
  const auto& f = formats::fp32;
  // 1 / (1 + tiny): just below 1.
  expect_rounded(element(f, Rounding::nearest_even, softmax, 0), 1, RoundingEvent::inexact, "rne");
  expect_rounded(element(f, Rounding::toward_zero, softmax, 0), kBelowOne32, RoundingEvent::inexact,
                 "rz");
  expect_rounded(element(f, Rounding::downward, softmax, 0), kBelowOne32, RoundingEvent::inexact,
                 "rd");
  expect_rounded(element(f, Rounding::upward, softmax, 0), 1, RoundingEvent::inexact, "ru");
  // tiny / (1 + tiny): positive, below every subnormal.
  expect_rounded(element(f, Rounding::nearest_even, softmax, 1), 0, RoundingEvent::flush_to_zero,
                 "rne");
  expect_rounded(element(f, Rounding::downward, softmax, 1), 0, RoundingEvent::flush_to_zero, "rd");
  expect_rounded(element(f, Rounding::upward, softmax, 1), kSubnormal32, RoundingEvent::underflow,
                 "ru");
  // The nearest binary64 of each.
  EXPECT_EQ(element(f, Rounding::nearest_even, softmax, 0).value, 1.0);
  EXPECT_EQ(element(f, Rounding::nearest_even, softmax, 1).value, 0.0);
  // Two equal maxima: 1/2 - tiny each.
  const std::vector<double> tie{kTop, kBottom, kTop};
  const auto tied = [&] { return ops::softmax<Asymptotic>(values(tie), 1, 3); };
  expect_rounded(element(f, Rounding::nearest_even, tied, 2), 0.5, RoundingEvent::inexact, "tie");
  expect_rounded(element(f, Rounding::downward, tied, 2), 0.5 * kBelowOne32, RoundingEvent::inexact,
                 "tie rd");
  // No tail: exactly 1/2, exact.
  const std::vector<double> pair{kTop, kTop};
  const auto halves = [&] { return ops::softmax<Asymptotic>(values(pair), 1, 2); };
  expect_rounded(element(f, Rounding::downward, halves, 0), 0.5, RoundingEvent::exact, "halves");
}

TEST(Asymptotic, LogSoftmaxAndLogsumexpNearOverflow) {
  const std::vector<double> x{kTop, kBottom};
  const auto& f = formats::fp32;
  const auto logsumexp = [&] { return ops::logsumexp<Asymptotic>(values(x), 1, 2); };
  // max + log1p(tiny): just above the maximum.
  expect_rounded(element(f, Rounding::nearest_even, logsumexp, 0), kTop, RoundingEvent::inexact,
                 "rne");
  expect_rounded(element(f, Rounding::upward, logsumexp, 0), 0x1.100002p127, RoundingEvent::inexact,
                 "ru");
  expect_rounded(element(f, Rounding::toward_zero, logsumexp, 0), kTop, RoundingEvent::inexact,
                 "rz");
  const auto log_softmax = [&] { return ops::log_softmax<Asymptotic>(values(x), 1, 2); };
  // -log1p(tiny): a negative tiny.
  expect_rounded(element(f, Rounding::nearest_even, log_softmax, 0), -0.0,
                 RoundingEvent::flush_to_zero, "rne");
  expect_rounded(element(f, Rounding::downward, log_softmax, 0), -kSubnormal32,
                 RoundingEvent::underflow, "rd");
  // (min - max) - log1p(tiny) = -0x1.1p128 - tiny: beyond binary32's range; binary64 holds it.
  expect_rounded(element(f, Rounding::nearest_even, log_softmax, 1),
                 -std::numeric_limits<double>::infinity(), RoundingEvent::overflow, "rne");
  expect_rounded(element(f, Rounding::toward_zero, log_softmax, 1), -kMax32,
                 RoundingEvent::saturation, "rz");
  expect_rounded(element(formats::fp64, Rounding::nearest_even, log_softmax, 1), -0x1.1p128,
                 RoundingEvent::inexact, "fp64 rne");
  expect_rounded(element(formats::fp64, Rounding::downward, log_softmax, 1),
                 std::nextafter(-0x1.1p128, -1e300), RoundingEvent::inexact, "fp64 rd");
}

TEST(Asymptotic, GradientsNearOverflowTakeTheirSignFromTheTail) {
  const std::vector<double> x{kTop, kBottom};
  const auto& f = formats::fp32;
  // dx = e_1 (dy_0 - dy_1) / (1 + e_1)^2 and its opposite: tiny, of the sign of dy_0 - dy_1.
  const std::vector<double> dy{1.0, 2.0};
  const auto softmax_backward = [&] {
    return ops::softmax_backward<Asymptotic>(values(x), values(dy), 1, 2);
  };
  expect_rounded(element(f, Rounding::downward, softmax_backward, 0), -kSubnormal32,
                 RoundingEvent::underflow, "dx0 rd");
  expect_rounded(element(f, Rounding::upward, softmax_backward, 0), -0.0,
                 RoundingEvent::flush_to_zero, "dx0 ru");
  expect_rounded(element(f, Rounding::upward, softmax_backward, 1), kSubnormal32,
                 RoundingEvent::underflow, "dx1 ru");
  // Equal upstream gradients: exactly 0.
  const std::vector<double> same{3.0, 3.0};
  const auto flat = [&] {
    return ops::softmax_backward<Asymptotic>(values(x), values(same), 1, 2);
  };
  expect_rounded(element(f, Rounding::upward, flat, 0), 0, RoundingEvent::exact, "flat");
  // log_softmax: dx_0 = dy_0 - y_0 (dy_0 + dy_1) = 1 - 3 (1 - tiny) = -2 + 3 tiny.
  const auto log_softmax_backward = [&] {
    return ops::log_softmax_backward<Asymptotic>(values(x), values(dy), 1, 2);
  };
  expect_rounded(element(f, Rounding::upward, log_softmax_backward, 0), -2 * kBelowOne32,
                 RoundingEvent::inexact, "log dx0 ru");
  expect_rounded(element(f, Rounding::downward, log_softmax_backward, 0), -2,
                 RoundingEvent::inexact, "log dx0 rd");
  // cross-entropy, target 0: (y_0 - 1) / 1 = -tiny.
  const std::vector<std::int64_t> target{0};
  const auto ce_backward = [&] {
    return ops::cross_entropy_backward<Asymptotic>(values(x), 1, 2, target);
  };
  expect_rounded(element(f, Rounding::downward, ce_backward, 0), -kSubnormal32,
                 RoundingEvent::underflow, "ce rd");
  // Its loss: (max - x_0) + log1p(tiny) = tiny.
  const auto ce = [&] {
    return std::vector<Asymptotic>{ops::cross_entropy<Asymptotic>(values(x), 1, 2, target)};
  };
  expect_rounded(element(f, Rounding::upward, ce, 0), kSubnormal32, RoundingEvent::underflow,
                 "ce loss ru");
}

TEST(Asymptotic, AttentionNearOverflow) {
  // One query, two keys, d = 1: scores q k = +-0x1.1p127, o = (2 + 3 e) / (1 + e) = 2 + e / (1 +
  // e).
  const std::vector<double> q{kTop}, k{1.0, -1.0}, v{2.0, 3.0}, d_out{1.0};
  const auto& f = formats::fp32;
  const auto attention = [&] {
    return ops::attention<Asymptotic>(values(q), values(k), values(v), 1, 2, 1, 1);
  };
  expect_rounded(element(f, Rounding::nearest_even, attention, 0), 2, RoundingEvent::inexact,
                 "rne");
  expect_rounded(element(f, Rounding::upward, attention, 0), std::nextafter(2.0F, 3.0F),
                 RoundingEvent::inexact, "ru");
  // dV_1 = P_01 dO = tiny; dV_0 = 1 - tiny.
  const auto dv = [&] {
    return ops::attention_backward<Asymptotic>(values(q), values(k), values(v), values(d_out), 1, 2,
                                               1, 1)
        .dv;
  };
  expect_rounded(element(f, Rounding::upward, dv, 1), kSubnormal32, RoundingEvent::underflow,
                 "dv1");
  expect_rounded(element(f, Rounding::downward, dv, 0), kBelowOne32, RoundingEvent::inexact, "dv0");
}

TEST(Asymptotic, InfiniteLogitsAreMpfrsAsForAReal) {
  // (The log-uniform distribution reaches binary32's overflow.) e^(x - inf) = e^-inf = 0 exactly:
  // softmax(inf, 1, -2) = (1, 0, 0), exact; logsumexp = inf.
  const std::vector<double> x{std::numeric_limits<double>::infinity(), 1.0, -2.0};
  const auto softmax = [&] { return ops::softmax<Asymptotic>(values(x), 1, 3); };
  expect_rounded(element(formats::fp32, Rounding::downward, softmax, 0), 1, RoundingEvent::exact,
                 "top");
  expect_rounded(element(formats::fp32, Rounding::upward, softmax, 1), 0, RoundingEvent::exact,
                 "other");
  const auto logsumexp = [&] { return ops::logsumexp<Asymptotic>(values(x), 1, 3); };
  expect_rounded(element(formats::fp32, Rounding::nearest_even, logsumexp, 0),
                 std::numeric_limits<double>::infinity(), RoundingEvent::exact, "logsumexp");
  // Two infinite logits: inf - inf is NaN, and so is every output.
  const std::vector<double> two{std::numeric_limits<double>::infinity(),
                                std::numeric_limits<double>::infinity(), 0.0};
  const auto nan = [&] { return ops::softmax<Asymptotic>(values(two), 1, 3); };
  EXPECT_TRUE(std::isnan(element(formats::fp32, Rounding::nearest_even, nan, 2).rounded.value));
}

// ---- against MPFR at 2048 bits, where the exponentials are within its range ------------------

constexpr mpfr_prec_t kOracleBits = 2048;

class Big {
 public:
  Big() { mpfr_init2(v_, kOracleBits); }
  explicit Big(double x) : Big() { mpfr_set_d(v_, x, MPFR_RNDN); }
  Big(const Big& o) : Big() { mpfr_set(v_, o.v_, MPFR_RNDN); }
  Big& operator=(const Big& o) {
    mpfr_set(v_, o.v_, MPFR_RNDN);
    return *this;
  }
  ~Big() { mpfr_clear(v_); }
  mpfr_srcptr get() const { return v_; }
  mpfr_ptr get() { return v_; }

 private:
  mpfr_t v_;
};

Big binary(int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_srcptr, mpfr_rnd_t), const Big& a, const Big& b) {
  Big r;
  f(r.get(), a.get(), b.get(), MPFR_RNDN);
  return r;
}
Big operator+(const Big& a, const Big& b) {
  return binary(mpfr_add, a, b);
}
Big operator-(const Big& a, const Big& b) {
  return binary(mpfr_sub, a, b);
}
Big operator*(const Big& a, const Big& b) {
  return binary(mpfr_mul, a, b);
}
Big operator/(const Big& a, const Big& b) {
  return binary(mpfr_div, a, b);
}
Big exp(const Big& a) {
  Big r;
  mpfr_exp(r.get(), a.get(), MPFR_RNDN);
  return r;
}
Big log(const Big& a) {
  Big r;
  mpfr_log(r.get(), a.get(), MPFR_RNDN);
  return r;
}

// The defining formulas, literally, for one row.
std::vector<Big> softmax_oracle(const std::vector<double>& x) {
  Big total(0.0);
  std::vector<Big> e;
  for (const double v : x) {
    e.push_back(exp(Big(v)));
    total = total + e.back();
  }
  for (auto& v : e) v = v / total;
  return e;
}

void expect_oracle(const std::function<std::vector<Asymptotic>()>& evaluate,
                   const std::vector<Big>& want, const std::string& what) {
  for (const numeric::Format& f : {formats::fp16, formats::bf16, formats::fp32, formats::fp64}) {
    const numeric::oracle::Spec spec = numeric::oracle::spec_of(f);
    for (const Rounding mode : {Rounding::nearest_even, Rounding::nearest_away,
                                Rounding::toward_zero, Rounding::upward, Rounding::downward}) {
      for (std::size_t j = 0; j < want.size(); ++j) {
        const numeric::oracle::Result expected = numeric::oracle::round(spec, mode, want[j].get());
        const ReferenceValue got = element(f, mode, evaluate, j);
        EXPECT_EQ(got.rounded.value, expected.value)
            << what << " element " << j << " in " << f.name << " mode " << static_cast<int>(mode);
        EXPECT_EQ(got.rounded.event, expected.event)
            << what << " element " << j << " in " << f.name << " mode " << static_cast<int>(mode);
      }
    }
  }
}

// Logits 0, -300, -301.5, -599 (e^-300 is 2^-433: beyond the first rounds of the Ziv loop next to
// 1, and a tail term of Asymptotic) and one within the ordinary range (-3).
const std::vector<double> kRow{0.0, -300.0, -3.0, -301.5, -599.0};

TEST(Asymptotic, SoftmaxFamilyAgreesWithMpfrAt2048Bits) {
  const std::size_t n = kRow.size();
  expect_oracle([&] { return ops::softmax<Asymptotic>(values(kRow), 1, n); }, softmax_oracle(kRow),
                "softmax");
  {
    Big total(0.0);
    for (const double v : kRow) total = total + exp(Big(v));
    std::vector<Big> log_softmax;
    for (const double v : kRow) log_softmax.push_back(Big(v) - log(total));
    expect_oracle([&] { return ops::log_softmax<Asymptotic>(values(kRow), 1, n); }, log_softmax,
                  "log_softmax");
    expect_oracle([&] { return ops::logsumexp<Asymptotic>(values(kRow), 1, n); }, {log(total)},
                  "logsumexp");
  }
  // Upstream gradients with a tie at the maximum's value (dy_0 = dy_1), where the gradients of
  // the others cancel to the tail's order.
  const std::vector<double> dy{0.5, 0.5, -1.25, 2.0, 0.75};
  const std::vector<Big> y = softmax_oracle(kRow);
  Big inner(0.0);
  Big dy_sum(0.0);
  for (std::size_t j = 0; j < n; ++j) {
    inner = inner + Big(dy[j]) * y[j];
    dy_sum = dy_sum + Big(dy[j]);
  }
  std::vector<Big> softmax_backward, log_softmax_backward;
  for (std::size_t j = 0; j < n; ++j) {
    softmax_backward.push_back(y[j] * (Big(dy[j]) - inner));
    log_softmax_backward.push_back(Big(dy[j]) - y[j] * dy_sum);
  }
  expect_oracle([&] { return ops::softmax_backward<Asymptotic>(values(kRow), values(dy), 1, n); },
                softmax_backward, "softmax_backward");
  expect_oracle(
      [&] { return ops::log_softmax_backward<Asymptotic>(values(kRow), values(dy), 1, n); },
      log_softmax_backward, "log_softmax_backward");
}

TEST(Asymptotic, AttentionAgreesWithMpfrAt2048Bits) {
  // One query against four keys (d = 1, scale 1): scores 0, -300, -2, -500; V with a tie at the
  // maximum's row.
  const std::vector<double> q{1.0}, k{0.0, -300.0, -2.0, -500.0}, v{1.5, 1.5, -4.0, 8.0};
  const std::vector<double> scores = k;
  const std::vector<Big> p = softmax_oracle(scores);
  Big o(0.0);
  for (std::size_t j = 0; j < v.size(); ++j) o = o + p[j] * Big(v[j]);
  expect_oracle(
      [&] { return ops::attention<Asymptotic>(values(q), values(k), values(v), 1, 4, 1, 1); }, {o},
      "attention");
}

}  // namespace
}  // namespace ampbench::reference
