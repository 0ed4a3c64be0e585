#include "harness/numeric/ulp.hpp"

#include <cmath>

#include "harness/numeric/rounding.hpp"

namespace ampbench::numeric {

std::optional<std::int64_t> ordinal(const Format& f, double x) {
  if (std::isnan(x)) return std::nullopt;
  const Rounded r = round_to(f, Rounding::nearest_even, x);
  if (r.event != RoundingEvent::exact) return std::nullopt;
  const std::uint64_t magnitude = r.bits & ~f.sign_mask();
  const std::uint64_t subnormal_patterns = detail::fraction_mask(f);
  std::uint64_t position = magnitude;
  if (!f.subnormals) {
    // Skip the subnormal patterns, which are not values of f.
    position = magnitude <= subnormal_patterns ? 0 : magnitude - subnormal_patterns;
  }
  const auto signed_position = static_cast<std::int64_t>(position);
  return std::signbit(x) ? -signed_position : signed_position;
}

std::optional<std::uint64_t> ulp_distance(const Format& f, double a, double b) {
  const auto oa = ordinal(f, a);
  const auto ob = ordinal(f, b);
  if (!oa || !ob) return std::nullopt;
  return *oa > *ob ? static_cast<std::uint64_t>(*oa - *ob) : static_cast<std::uint64_t>(*ob - *oa);
}

double ulp(const Format& f, double x) {
  const double magnitude = std::fabs(x);
  // Without subnormals the only values below 2^emin are 0 and 2^emin.
  if (!f.subnormals && magnitude < std::ldexp(1.0, f.emin)) return std::ldexp(1.0, f.emin);
  int e = f.emin;
  if (magnitude >= std::ldexp(1.0, f.emin)) {
    e = std::isinf(magnitude) ? f.emax : std::ilogb(magnitude);
    if (e > f.emax) e = f.emax;
  }
  return std::ldexp(1.0, e - f.fraction_bits());
}

}  // namespace ampbench::numeric
