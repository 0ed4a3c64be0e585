// Properties of round_to, checked on generated inputs against the MPFR oracle (value, event, bit
// encoding) and against laws that need no oracle (monotonicity, sign symmetry).
//
// On failure RapidCheck prints the shrunk counterexample and a replay string; rerun just that
// case with RC_PARAMS="reproduce=<string>". RC_PARAMS="max_success=20000" searches longer,
// RC_PARAMS="seed=<n>" searches elsewhere (see RapidCheck's doc/configuration.md).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <vector>

#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/numeric/test/interesting_doubles.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric::test {
namespace {

constexpr std::size_t kInputsPerCase = 48;

// Checks round_to on every input, in every mode and every variant of f (subnormals on/off,
// overflow to infinity/saturate). Stochastic modes get the generated draw and the two draws on
// either side of the input's threshold, where the outcome flips.
void check_against_oracle(const Format& f) {
  const auto xs = *rc::gen::container<std::vector<double>>(kInputsPerCase, interesting_double(f));
  const auto random = *uniform<std::uint32_t>();
  for (const Format& v : variants(f)) {
    for (const double x : xs) {
      std::vector<std::uint32_t> draws = {random};
      if (std::isfinite(x)) {
        const std::uint64_t threshold = oracle::stochastic_threshold(oracle::spec_of(v), x);
        if (threshold > 0) draws.push_back(static_cast<std::uint32_t>(threshold - 1));
        draws.push_back(static_cast<std::uint32_t>(threshold));  // < 2^32: the fraction is < 1
      }
      for (const Rounding mode : kAllModes) {
        const std::size_t n = is_stochastic(mode) ? draws.size() : 1;
        for (std::size_t i = 0; i < n; ++i) {
          if (const auto mismatch = check_round_to(v, mode, x, draws[i])) RC_FAIL(*mismatch);
        }
      }
    }
  }
}

RC_GTEST_PROP(RoundToOracle, Fp64, ()) {
  check_against_oracle(formats::fp64);
}
RC_GTEST_PROP(RoundToOracle, Fp32, ()) {
  check_against_oracle(formats::fp32);
}
RC_GTEST_PROP(RoundToOracle, Tf32, ()) {
  check_against_oracle(formats::tf32);
}
RC_GTEST_PROP(RoundToOracle, Bf16, ()) {
  check_against_oracle(formats::bf16);
}
RC_GTEST_PROP(RoundToOracle, Fp16, ()) {
  check_against_oracle(formats::fp16);
}
RC_GTEST_PROP(RoundToOracle, E4m3, ()) {
  check_against_oracle(formats::e4m3);
}
RC_GTEST_PROP(RoundToOracle, E5m2, ()) {
  check_against_oracle(formats::e5m2);
}

// A user format that validate() accepts: precision 2..53, any exponent range inside binary64's
// (IEEE-like emin = 1 - emax half of the time, otherwise anywhere from the lowest binary64 allows
// up to emax).
rc::Gen<Format> user_formats() {
  return rc::gen::apply(
      [](int precision, int emax, bool ieee_like, int emin_draw) {
        const int lowest_emin = -1074 + precision - 1;
        const int emin = ieee_like ? std::clamp(1 - emax, lowest_emin, emax)
                                   : lowest_emin + emin_draw % (emax - lowest_emin + 1);
        return user_format(precision, emin, emax);
      },
      uniform_in(2, 54), uniform_in(-8, 1024), uniform<bool>(), uniform_in(0, 1 << 30));
}

RC_GTEST_PROP(RoundToOracle, UserFormats, ()) {
  const Format f = *user_formats();
  RC_LOG() << describe(f) << "\n";
  const Validation v = validate(RoundingOptions{f, Rounding::nearest_even, 0, Container::binary64});
  RC_ASSERT(v.errors.empty());
  check_against_oracle(f);
}

// Without an oracle: the deterministic modes are monotone (x <= y gives r(x) <= r(y)), the
// symmetric ones commute with negation, and upward/downward mirror each other.
RC_GTEST_PROP(RoundToLaws, MonotoneAndSymmetric, ()) {
  const Format f = *rc::gen::elementOf(
      std::vector<Format>(std::begin(formats::builtin), std::end(formats::builtin)));
  const Format v =
      variant(f, *uniform<bool>(), *rc::gen::element(Overflow::infinity, Overflow::saturate));
  const Rounding mode =
      *rc::gen::element(Rounding::nearest_even, Rounding::nearest_away, Rounding::toward_zero,
                        Rounding::upward, Rounding::downward, Rounding::to_odd);
  auto a = *interesting_double(f);
  auto b = *interesting_double(f);
  RC_PRE(!std::isnan(a) && !std::isnan(b));
  if (b < a) std::swap(a, b);
  const double ra = round_to(v, mode, a).value;
  const double rb = round_to(v, mode, b).value;
  if (!std::isnan(ra) && !std::isnan(rb)) RC_ASSERT(ra <= rb);

  const double r_neg = round_to(v, mode, -a).value;
  if (mode == Rounding::upward || mode == Rounding::downward) {
    const Rounding mirror = mode == Rounding::upward ? Rounding::downward : Rounding::upward;
    RC_ASSERT(same(r_neg, -round_to(v, mirror, a).value));
  } else {
    RC_ASSERT(same(r_neg, -ra));
  }
}

}  // namespace
}  // namespace ampbench::numeric::test
