// Distances between values of a format, counted in representable steps.
#pragma once

#include <cstdint>
#include <optional>

#include "harness/numeric/format.hpp"

namespace ampbench::numeric {

// Position of x among the values of f in increasing order: 0 for +-0, 1 for the smallest positive
// value, -1 for its negative, and infinity one step beyond the largest finite value. Empty when x
// is NaN or not a value of f (with subnormals off, subnormal numbers are not values of f).
std::optional<std::int64_t> ordinal(const Format& f, double x);

// The number of steps between two values of f: 0 when equal (+0 and -0 are equal), 1 for
// neighbours. Empty when either is NaN or not a value of f.
std::optional<std::uint64_t> ulp_distance(const Format& f, double a, double b);

// The quantum of f at x (the gap between x's binade's neighbours, 2^(max(e, emin) - p + 1)); for
// values beyond the largest finite, the quantum of the top binade. x must not be NaN.
double ulp(const Format& f, double x);

}  // namespace ampbench::numeric
