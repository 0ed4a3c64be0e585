#include "harness/ops/definition.hpp"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "harness/metrics/metrics.hpp"

namespace ampbench::ops {

const std::vector<double>& values(const Inputs& in, std::size_t i) {
  return in.values.at(i);
}

std::span<const double> optional_values(const Inputs& in, std::size_t i) {
  return i < in.values.size() ? std::span<const double>(in.values[i]) : std::span<const double>();
}

Operand parameter(std::string name, std::vector<std::size_t> shape, HeldIn held_in) {
  Operand o{std::move(name), std::move(shape)};
  o.role = Role::parameter;
  o.held_in = held_in;
  return o;
}

CpuRun one_gradient(std::vector<double>& values, const numeric::EventCounts& output,
                    const backends::cpu::Events& all) {
  CpuRun run;
  run.output = std::move(values);
  run.events.intermediate = all.intermediate;
  run.events.output = output;
  return run;
}

std::uint32_t draw(numeric::Rounding mode, std::uint64_t seed, std::size_t position) {
  return numeric::is_stochastic(mode) ? numeric::stochastic_draw(seed, position) : 0u;
}

int extra_bits(double condition) {
  if (!(condition < 0x1p1000)) return 2048;
  return std::min(2048, std::max(0, static_cast<int>(std::ceil(std::log2(condition)))) + 8);
}

double ratio(double terms, double result) {
  return result == 0 ? (terms == 0 ? 1.0 : 0x1p1000) : terms / std::fabs(result);
}

std::uint64_t row_bound(std::span<const double> x, std::size_t row, std::size_t cols) {
  double spread = 0;
  const auto first = x.begin() + static_cast<std::ptrdiff_t>(row * cols);
  const double top = *std::max_element(first, first + static_cast<std::ptrdiff_t>(cols));
  for (std::size_t c = 0; c < cols; ++c) {
    spread = std::max(spread, std::fabs(x[row * cols + c] - top));
  }
  return static_cast<std::uint64_t>(std::min(64.0 + 8.0 * static_cast<double>(cols) + 8.0 * spread,
                                             static_cast<double>(std::uint64_t{1} << 31)));
}

std::vector<reference::Asymptotic> to_asymptotic(std::span<const double> x) {
  return std::vector<reference::Asymptotic>(x.begin(), x.end());
}

std::vector<Real> to_reals(std::span<const double> x) {
  std::vector<Real> r;
  r.reserve(x.size());
  for (const double v : x) r.push_back(reference::to_real(v));
  return r;
}

Real to_real(const reference::ExactValue& v) {
  Real r;
  if (v.kind() != reference::ExactKind::finite) {
    return Real(v.kind() == reference::ExactKind::nan ? std::numeric_limits<double>::quiet_NaN()
                : v.kind() == reference::ExactKind::positive_infinity
                    ? std::numeric_limits<double>::infinity()
                    : -std::numeric_limits<double>::infinity());
  }
  if (v.is_zero()) return Real(v.negative() ? -0.0 : 0.0);
  const auto& limbs = v.magnitude();
  mpz_t n;
  mpz_init(n);
  mpz_import(n, limbs.size(), -1, sizeof limbs[0], 0, 0, limbs.data());
  const auto bits = static_cast<mpfr_prec_t>(mpz_sizeinbase(n, 2));
  mpfr_set_prec(r.backend().data(), std::max<mpfr_prec_t>(bits, MPFR_PREC_MIN));
  mpfr_set_z_2exp(r.backend().data(), n, v.exponent(), MPFR_RNDN);  // exact: enough bits
  mpz_clear(n);
  if (v.negative()) r = -r;
  return r;
}

double underflow_error(const backends::cpu::Arithmetic& arithmetic, const numeric::Format& f) {
  const bool nearest = arithmetic.mode == numeric::Rounding::nearest_even ||
                       arithmetic.mode == numeric::Rounding::nearest_away;
  const int spacing = f.subnormals ? f.emin - f.precision + 1 : f.emin;
  return std::ldexp(1.0, nearest ? spacing - 1 : spacing);
}

std::vector<double> one_rounding_bounds(const backends::cpu::Arithmetic& arithmetic,
                                        bool rounds_to_compute,
                                        std::span<const std::size_t> positions,
                                        const std::function<double(std::size_t)>& exact) {
  const double u_compute = metrics::unit_roundoff(arithmetic.compute, arithmetic.mode);
  const double u_output = metrics::unit_roundoff(arithmetic.output, arithmetic.mode);
  const double coefficient =
      metrics::with_final_rounding(rounds_to_compute ? u_compute : 0.0, u_output);
  const double absolute =
      (rounds_to_compute ? underflow_error(arithmetic, arithmetic.compute) * (1 + u_output) : 0.0) +
      underflow_error(arithmetic, arithmetic.output);
  std::vector<double> bounds;
  bounds.reserve(positions.size());
  for (const auto p : positions) {
    bounds.push_back(coefficient * std::fabs(exact(p)) * (1 + 0x1p-52) + absolute);
  }
  return bounds;
}

std::vector<double> summation_bounds(const backends::cpu::Arithmetic& arithmetic,
                                     backends::cpu::Summation summation, const Summed& summed,
                                     std::span<const std::size_t> positions,
                                     const std::function<double(std::size_t)>& magnitude) {
  const double u_compute = metrics::unit_roundoff(arithmetic.compute, arithmetic.mode);
  const double u_accumulate = metrics::unit_roundoff(arithmetic.accumulate, arithmetic.mode);
  const double u_output = metrics::unit_roundoff(arithmetic.output, arithmetic.mode);
  const std::size_t k = summed.k;
  std::size_t additions = k > 0 ? k - 1 : 0;
  if (summation == backends::cpu::Summation::pairwise && k > 1 && !summed.always_sequential) {
    additions = static_cast<std::size_t>(std::ceil(std::log2(static_cast<double>(k))));
  }
  if (summed.with_c) ++additions;  // C is added last, in the accumulation format
  double coefficient = (summed.products ? 1 + u_compute : 1.0) *
                           std::pow(1 + u_accumulate, static_cast<double>(additions)) *
                           (summed.divided ? 1 + u_compute : 1.0) -
                       1;
  coefficient = metrics::with_final_rounding(coefficient, u_output);
  const double absolute =
      (summed.products ? static_cast<double>(k) * underflow_error(arithmetic, arithmetic.compute)
                       : 0.0) +
      static_cast<double>(additions) * underflow_error(arithmetic, arithmetic.accumulate) +
      underflow_error(arithmetic, arithmetic.output);
  std::vector<double> bounds;
  bounds.reserve(positions.size());
  for (const auto p : positions) {
    const double total = magnitude(p) * (1 + static_cast<double>(k + 2) * 0x1p-53);
    bounds.push_back(coefficient * total + absolute);
  }
  return bounds;
}

}  // namespace ampbench::ops
