// Rounding of multiprecision values, on generated inputs, against the MPFR oracle: a random
// significand of 1 to 256 bits (few bits give exact values and ties, many give values a hair off
// them), a random exponent around the format's range, every variant of every built-in format,
// every mode, and for the stochastic modes the draws on both sides of the threshold.
//
// On failure RapidCheck prints the shrunk counterexample and a replay string; rerun just that
// case with RC_PARAMS="reproduce=<string>". RC_PARAMS="max_success=20000" searches longer.
#include <gtest/gtest.h>
#include <mpfr.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::reference {
namespace {

namespace oracle = numeric::oracle;
namespace nt = numeric::test;

// sum of words[i] 2^(64 (3 - i)), cut to its top `bits` bits, times 2^(exponent - 256), signed.
Real make_value(const std::vector<std::uint64_t>& words, int bits, int exponent, bool negative) {
  Real r = 0;
  mpfr_ptr p = r.backend().data();
  for (const std::uint64_t w : words) {
    mpfr_mul_2ui(p, p, 64, MPFR_RNDN);
    mpfr_add_ui(p, p, static_cast<unsigned long>(w), MPFR_RNDN);
  }
  mpfr_prec_round(p, bits, MPFR_RNDZ);
  mpfr_mul_2si(p, p, exponent - 256, MPFR_RNDN);
  if (negative) mpfr_neg(p, p, MPFR_RNDN);
  return r;
}

void check_format(const numeric::Format& base) {
  const WorkingPrecision precision;
  const auto words =
      *rc::gen::container<std::vector<std::uint64_t>>(4, rc::gen::arbitrary<std::uint64_t>());
  const int bits = *rc::gen::inRange(1, 257);
  const int exponent = *rc::gen::inRange(base.emin - base.precision - 8, base.emax + 8);
  const bool negative = *rc::gen::arbitrary<bool>();
  const auto random = *rc::gen::arbitrary<std::uint32_t>();
  const Real x = make_value(words, bits, exponent, negative);
  for (const numeric::Format& f : nt::variants(base)) {
    const oracle::Spec spec = oracle::spec_of(f);
    std::vector<std::uint32_t> draws = {random};
    const std::uint64_t threshold = oracle::stochastic_threshold(spec, x.backend().data());
    if (threshold > 0) draws.push_back(static_cast<std::uint32_t>(threshold - 1));
    if (threshold < (std::uint64_t{1} << 32))
      draws.push_back(static_cast<std::uint32_t>(threshold));
    for (const numeric::Rounding mode : nt::kAllModes) {
      for (const std::uint32_t draw : draws) {
        const numeric::Rounded got = round_to(f, mode, x, draw);
        const oracle::Result want = oracle::round(spec, mode, x.backend().data(), draw);
        RC_ASSERT(nt::same(got.value, want.value));
        RC_ASSERT(got.event == want.event);
        RC_ASSERT(nt::same(numeric::decode(f, got.bits), got.value));
      }
    }
  }
}

RC_GTEST_PROP(RoundRealOracle, Fp64, ()) {
  check_format(numeric::formats::fp64);
}
RC_GTEST_PROP(RoundRealOracle, Fp32, ()) {
  check_format(numeric::formats::fp32);
}
RC_GTEST_PROP(RoundRealOracle, Tf32, ()) {
  check_format(numeric::formats::tf32);
}
RC_GTEST_PROP(RoundRealOracle, Bf16, ()) {
  check_format(numeric::formats::bf16);
}
RC_GTEST_PROP(RoundRealOracle, Fp16, ()) {
  check_format(numeric::formats::fp16);
}
RC_GTEST_PROP(RoundRealOracle, E4m3, ()) {
  check_format(numeric::formats::e4m3);
}
RC_GTEST_PROP(RoundRealOracle, E5m2, ()) {
  check_format(numeric::formats::e5m2);
}

}  // namespace
}  // namespace ampbench::reference
