// RapidCheck generators of binary64 inputs that exercise rounding to a format. RapidCheck's own
// double generator gives neither NaN, infinities, -0 nor subnormals, and almost never a value
// near a rounding boundary, so these pick from the cases that matter.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <utility>

#include "harness/numeric/format.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/test/mpfr_oracle.hpp"
#include "harness/numeric/test/test_support.hpp"

namespace ampbench::numeric {
// How RapidCheck prints a Format in a counterexample.
inline void showValue(const Format& f, std::ostream& os) {
  os << test::describe(f);
}
}  // namespace ampbench::numeric

namespace ampbench::numeric::test {

// Uniform over all values of T: RapidCheck scales integer ranges with its size parameter, which
// would make early draws small.
template <typename T>
rc::Gen<T> uniform() {
  return rc::gen::resize(100, rc::gen::arbitrary<T>());
}

template <typename T>
rc::Gen<T> uniform_in(T min, T max_exclusive) {
  return rc::gen::resize(100, rc::gen::inRange<T>(min, max_exclusive));
}

inline double with_sign(double v, bool negative) {
  return negative ? -v : v;
}

// A value m * 2^(e - p + 1) of the format's grid, with an unbounded exponent range above (the
// top binade emax + 1 is included, to reach beyond the largest finite value): a normal
// significand for e in [emin, emax + 1], or a subnormal one.
inline rc::Gen<double> grid_value(const Format& f) {
  const int p = f.precision;
  return rc::gen::apply(
      [p, emin = f.emin](int e, std::uint64_t low_bits, bool subnormal, bool negative) {
        const std::uint64_t m = subnormal ? low_bits : (std::uint64_t{1} << (p - 1)) | low_bits;
        return with_sign(std::ldexp(static_cast<double>(m), (subnormal ? emin : e) - (p - 1)),
                         negative);
      },
      uniform_in(f.emin, f.emax + 2), uniform_in<std::uint64_t>(0, std::uint64_t{1} << (p - 1)),
      rc::gen::weightedElement<bool>({{4, false}, {1, true}}), uniform<bool>());
}

// The midpoint of a grid value and the next one up in magnitude (a tie for the nearest modes).
// Exact when p < 53; for p = 53 the double nearest to it.
inline rc::Gen<double> midpoint(const Format& f) {
  const int p = f.precision;
  return rc::gen::apply(
      [p, emin = f.emin](int e, std::uint64_t low_bits, bool subnormal, bool negative) {
        const std::uint64_t m = subnormal ? low_bits : (std::uint64_t{1} << (p - 1)) | low_bits;
        return with_sign(std::ldexp(static_cast<double>(2 * m + 1), (subnormal ? emin : e) - p),
                         negative);
      },
      uniform_in(f.emin, f.emax + 2), uniform_in<std::uint64_t>(0, std::uint64_t{1} << (p - 1)),
      rc::gen::weightedElement<bool>({{4, false}, {1, true}}), uniform<bool>());
}

// The values where rounding changes behaviour: smallest subnormal and half of it, half of the
// smallest normal (the tie without subnormals), smallest normal, largest finite, and the
// overflow threshold (largest finite plus half a quantum).
inline rc::Gen<double> boundary(const Format& f) {
  const oracle::Spec s = oracle::spec_of(f);
  const double quantum_at_max = std::ldexp(1.0, f.emax - (f.precision - 1));
  return rc::gen::apply(
      with_sign,
      rc::gen::element(std::ldexp(1.0, f.emin - (f.precision - 1)),
                       std::ldexp(1.0, f.emin - f.precision), std::ldexp(1.0, f.emin - 1),
                       std::ldexp(1.0, f.emin), s.max_finite, s.max_finite + quantum_at_max / 2),
      uniform<bool>());
}

// x, or its binary64 neighbour on either side.
inline rc::Gen<double> nudged(rc::Gen<double> gen) {
  return rc::gen::apply(
      [](double x, int direction) {
        constexpr double kInf = std::numeric_limits<double>::infinity();
        return direction == 0 ? x : std::nextafter(x, direction < 0 ? -kInf : kInf);
      },
      std::move(gen), rc::gen::element(-1, 0, 1));
}

// A NaN with random sign and payload, quiet or signalling.
inline rc::Gen<double> any_nan() {
  return rc::gen::map(uniform<std::uint64_t>(), [](std::uint64_t r) {
    const std::uint64_t payload = r & ((std::uint64_t{1} << 52) - 1);
    return double_of((r & (std::uint64_t{1} << 63)) | 0x7FF0000000000000u |
                     (payload == 0 ? 1 : payload));
  });
}

// A double with random sign and fraction, its exponent uniform over the format's range and a
// little beyond on both sides.
inline rc::Gen<double> in_range(const Format& f) {
  return rc::gen::apply(
      [](int e, std::uint64_t fraction, bool negative) {
        return with_sign(std::ldexp(1.0 + std::ldexp(static_cast<double>(fraction), -52), e),
                         negative);
      },
      uniform_in(std::max(f.emin - f.precision - 3, -1074), std::min(f.emax + 3, 1024)),
      uniform_in<std::uint64_t>(0, std::uint64_t{1} << 52), uniform<bool>());
}

inline rc::Gen<double> f64_subnormal() {
  return rc::gen::map(uniform<std::uint64_t>(),
                      [](std::uint64_t r) { return double_of(r & 0x800FFFFFFFFFFFFFu); });
}

inline rc::Gen<double> interesting_double(const Format& f) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return rc::gen::weightedOneOf<double>({
      {1, rc::gen::element(0.0, -0.0, kInf, -kInf)},
      {1, any_nan()},
      {2, rc::gen::map(uniform<std::uint64_t>(), double_of)},  // any bit pattern
      {4, in_range(f)},
      {4, nudged(grid_value(f))},
      {4, nudged(midpoint(f))},
      {3, nudged(boundary(f))},
      {1, f64_subnormal()},
  });
}

}  // namespace ampbench::numeric::test
