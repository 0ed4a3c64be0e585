// Laws of exact accumulation that need no oracle, on generated binary64 and binary32 vectors:
// the exact dot product does not depend on the order of the terms, (x, -x) pairs add nothing, and
// scaling an operand by 2^k scales the result by exactly 2^k.
//
// On failure RapidCheck prints the shrunk counterexample and a replay string; rerun just that case
// with RC_PARAMS="reproduce=<string>".
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/exact/dot.hpp"

namespace ampbench::reference::test {
namespace {

namespace formats = numeric::formats;

// Any finite binary64, every bit pattern equally likely (subnormals and extremes included).
rc::Gen<double> finite_double() {
  return rc::gen::suchThat(
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(),
                   [](std::uint64_t bits) { return std::bit_cast<double>(bits); }),
      [](double x) { return std::isfinite(x); });
}

// Any finite binary32, as a double.
rc::Gen<double> finite_float() {
  return rc::gen::suchThat(
      rc::gen::map(rc::gen::arbitrary<std::uint32_t>(),
                   [](std::uint32_t bits) { return double{std::bit_cast<float>(bits)}; }),
      [](double x) { return std::isfinite(x); });
}

struct Pair {
  std::vector<double> a;
  std::vector<double> b;
};

rc::Gen<Pair> pairs(const rc::Gen<double>& value) {
  return rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 700), [value](std::size_t n) {
    return rc::gen::apply(
        [](std::vector<double> a, std::vector<double> b) {
          return Pair{a, b};
        },
        rc::gen::container<std::vector<double>>(n, value),
        rc::gen::container<std::vector<double>>(n, value));
  });
}

std::string exact_hex(const numeric::Format& f, const Pair& p) {
  return exact_dot(f, p.a, p.b).to_hex();
}

void permutation_invariant(const numeric::Format& f, const rc::Gen<double>& value) {
  Pair p = *pairs(value);
  const std::string before = exact_hex(f, p);
  const auto order = *rc::gen::container<std::vector<std::uint32_t>>(
      p.a.size(), rc::gen::arbitrary<std::uint32_t>());
  // Shuffle both vectors the same way (a permutation of the terms).
  for (std::size_t i = p.a.size(); i > 1; --i) {
    const std::size_t j = order[i - 1] % i;
    std::swap(p.a[i - 1], p.a[j]);
    std::swap(p.b[i - 1], p.b[j]);
  }
  RC_ASSERT(exact_hex(f, p) == before);
}

void cancelling_pairs_add_nothing(const numeric::Format& f, const rc::Gen<double>& value) {
  Pair p = *pairs(value);
  const std::string before = exact_hex(f, p);
  const auto extra = *rc::gen::container<std::vector<double>>(*rc::gen::inRange(1, 50), value);
  for (const double x : extra) {
    const auto at = *rc::gen::inRange<std::size_t>(0, p.a.size() + 1);
    const double y = *value;
    p.a.insert(p.a.begin() + static_cast<std::ptrdiff_t>(at), {x, -x});
    p.b.insert(p.b.begin() + static_cast<std::ptrdiff_t>(at), {y, y});
  }
  RC_ASSERT(exact_hex(f, p) == before);
}

// Scaling a by 2^k keeps every element a binary64 (no overflow, nothing lost below the
// subnormals) when k stays within the margins of a's largest and smallest exponents.
RC_GTEST_PROP(ExactDotLaws, PowerOfTwoScalingIsExact, ()) {
  Pair p = *pairs(finite_double());
  int top = -1100, bottom = 1100;
  for (const double x : p.a) {
    if (x == 0) continue;
    top = std::max(top, std::ilogb(x));
    const int low_bit =
        std::ilogb(x) - 52 +
        std::countr_zero(std::bit_cast<std::uint64_t>(x) | (std::uint64_t{1} << 52));
    bottom = std::min(bottom, std::max(low_bit, -1074));
  }
  RC_PRE(top >= bottom);  // some nonzero element
  const int k = *rc::gen::inRange(-1074 - bottom, 1023 - top + 1);
  const ExactValue before = exact_dot(formats::fp64, p.a, p.b);
  for (auto& x : p.a) x = std::ldexp(x, k);
  const ExactValue after = exact_dot(formats::fp64, p.a, p.b);
  // Same significand digits, exponent moved by k: "0x1.8p+3" becomes "0x1.8p+(3+k)".
  const std::string h = before.to_hex(), g = after.to_hex();
  if (before.is_zero()) {
    RC_ASSERT(g == h);
  } else {
    RC_ASSERT(g.substr(0, g.find('p')) == h.substr(0, h.find('p')));
    RC_ASSERT(std::stol(g.substr(g.find('p') + 1)) == std::stol(h.substr(h.find('p') + 1)) + k);
  }
}

RC_GTEST_PROP(ExactDotLaws, PermutationInvariantFp64, ()) {
  permutation_invariant(formats::fp64, finite_double());
}
RC_GTEST_PROP(ExactDotLaws, PermutationInvariantFp32, ()) {
  permutation_invariant(formats::fp32, finite_float());
}
RC_GTEST_PROP(ExactDotLaws, CancellingPairsAddNothingFp64, ()) {
  cancelling_pairs_add_nothing(formats::fp64, finite_double());
}
RC_GTEST_PROP(ExactDotLaws, CancellingPairsAddNothingFp32, ()) {
  cancelling_pairs_add_nothing(formats::fp32, finite_float());
}

}  // namespace
}  // namespace ampbench::reference::test
