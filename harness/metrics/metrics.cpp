#include "harness/metrics/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "harness/numeric/ulp.hpp"

namespace ampbench::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool in_format(const numeric::Format& format, double x) {
  return numeric::ordinal(format, x).has_value();
}

// error / scale with the zero convention of every relative quantity here: 0 when the error is 0,
// +inf when only the scale is 0. An infinite scale (an infinite bound) makes any finite error 0.
double ratio(double error, double scale) {
  if (error == 0) return 0;
  if (scale == 0) return kInf;
  if (std::isinf(scale)) return 0;
  return error / scale;
}

int histogram_bucket(std::uint64_t ulp) {
  if (ulp == 0) return 0;
  return std::min(1 + static_cast<int>(std::bit_width(ulp - 1)), kUlpHistogramBuckets - 1);
}

// The Euclidean norm of a sequence as scale * sqrt(ssq), accumulated with the one-pass rescaling of
// the classic reference BLAS dnrm2 (scale = the largest |v| so far): no square of a huge value
// overflows, and tiny values are squared relative to the largest, so they do not underflow to 0.
struct ScaledNorm {
  double scale = 0;
  double ssq = 1;
  bool infinite = false;

  void add(double x) {
    const double a = std::fabs(x);
    if (std::isinf(a)) {
      infinite = true;
    } else if (a != 0) {
      if (scale < a) {
        ssq = 1 + ssq * (scale / a) * (scale / a);
        scale = a;
      } else {
        ssq += (a / scale) * (a / scale);
      }
    }
  }
};

// ||d|| / ||x|| without forming either norm, so that the quotient is finite whenever it is
// representable, even if the norms are not.
double norm_ratio(const ScaledNorm& d, const ScaledNorm& x) {
  if (d.infinite) return kInf;
  if (d.scale == 0) return 0;
  if (x.scale == 0) return kInf;
  return d.scale / x.scale * std::sqrt(d.ssq / x.ssq);
}

// An unsigned 128-bit sum, so that the mean ulp error is the same whatever the order or the size.
struct ExactSum {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  void add(std::uint64_t v) {
    low += v;
    if (low < v) ++high;
  }
  double to_double() const {
    return std::ldexp(static_cast<double>(high), 64) + static_cast<double>(low);
  }
};

void count_mismatch(MismatchCounts& m, ElementClass kind) {
  switch (kind) {
    case ElementClass::compared: break;
    case ElementClass::not_in_format: ++m.not_in_format; break;
    case ElementClass::both_nan: ++m.both_nan; break;
    case ElementClass::nan_vs_number: ++m.nan_vs_number; break;
    case ElementClass::number_vs_nan: ++m.number_vs_nan; break;
    case ElementClass::both_inf: ++m.both_inf; break;
    case ElementClass::opposite_inf: ++m.opposite_inf; break;
    case ElementClass::inf_vs_finite: ++m.inf_vs_finite; break;
    case ElementClass::finite_vs_inf: ++m.finite_vs_inf; break;
  }
}

void check_length(const char* what, std::size_t length, std::size_t expected) {
  if (length != expected) {
    throw std::invalid_argument(
        fmt::format("{} has {} elements but computed has {}", what, length, expected));
  }
}

void check_bounds(const char* what, std::span<const double> bounds, std::size_t expected) {
  check_length(what, bounds.size(), expected);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (!(bounds[i] >= 0)) {
      throw std::invalid_argument(
          fmt::format("{}[{}] = {} is not a bound (must be >= 0)", what, i, bounds[i]));
    }
  }
}

void update_max(std::optional<double>& max, double value) {
  if (!max || value > *max) max = value;
}

nlohmann::json number(double x) {
  if (std::isnan(x)) return nullptr;
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

template <typename T>
nlohmann::json optional_number(const std::optional<T>& x) {
  if (!x) return nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    return number(*x);
  } else {
    return *x;
  }
}

nlohmann::json events_json(const numeric::EventCounts& counts) {
  nlohmann::json out = nlohmann::json::object();
  for (int e = 0; e < numeric::kRoundingEventCount; ++e) {
    const auto event = static_cast<numeric::RoundingEvent>(e);
    out[std::string(numeric::event_name(event))] = counts[event];
  }
  return out;
}

}  // namespace

ElementError compare_element(const numeric::Format& format, double computed, double rounded,
                             double exact) {
  if (!std::isnan(rounded) && !in_format(format, rounded)) {
    throw std::invalid_argument(fmt::format("reference value {} ({:a}) is not a value of {}",
                                            rounded, rounded, format.name));
  }
  const bool computed_nan = std::isnan(computed);
  const bool rounded_nan = std::isnan(rounded);
  if (!computed_nan && !in_format(format, computed))
    return {ElementClass::not_in_format, {}, {}, {}};
  if (computed_nan && rounded_nan) return {ElementClass::both_nan, {}, {}, {}};
  if (computed_nan) return {ElementClass::nan_vs_number, {}, {}, {}};
  if (rounded_nan) return {ElementClass::number_vs_nan, {}, {}, {}};
  const bool computed_inf = std::isinf(computed);
  const bool rounded_inf = std::isinf(rounded);
  if (computed_inf && rounded_inf) {
    return {computed == rounded ? ElementClass::both_inf : ElementClass::opposite_inf, {}, {}, {}};
  }
  if (computed_inf) return {ElementClass::inf_vs_finite, {}, {}, {}};
  if (rounded_inf) return {ElementClass::finite_vs_inf, {}, {}, {}};

  ElementError e{ElementClass::compared, numeric::ulp_distance(format, computed, rounded), {}, {}};
  if (std::isfinite(exact)) {
    const double error = std::fabs(computed - exact);
    e.abs_error = error;
    e.rel_error = ratio(error, std::fabs(exact));
  }
  return e;
}

ErrorSummary summarize(const numeric::Format& format, std::span<const double> computed,
                       std::span<const double> rounded, std::span<const double> exact,
                       const ElementBounds& bounds) {
  const std::size_t n = computed.size();
  check_length("rounded", rounded.size(), n);
  check_length("exact", exact.size(), n);
  if (!bounds.rigorous.empty()) check_bounds("rigorous bounds", bounds.rigorous, n);
  if (bounds.probabilistic) check_bounds("probabilistic bounds", bounds.probabilistic->bounds, n);

  ErrorSummary s;
  s.count = n;
  std::uint64_t correctly_rounded = 0;
  ExactSum ulp_sum;
  ScaledNorm error_norm;
  ScaledNorm exact_norm;
  bool any_error_against_exact = false;
  for (std::size_t i = 0; i < n; ++i) {
    const ElementError e = compare_element(format, computed[i], rounded[i], exact[i]);
    if (e.kind != ElementClass::compared) {
      count_mismatch(s.mismatches, e.kind);
      continue;
    }
    ++s.compared;
    const std::uint64_t ulp = *e.ulp;
    if (!s.max_ulp || ulp > *s.max_ulp) {
      s.max_ulp = ulp;
      s.max_ulp_index = i;
    }
    ulp_sum.add(ulp);
    ++s.ulp_histogram[histogram_bucket(ulp)].count;
    if (ulp == 0) ++correctly_rounded;

    if (!e.abs_error) {
      ++s.exact_not_finite;
      continue;
    }
    any_error_against_exact = true;
    update_max(s.max_abs_error, *e.abs_error);
    update_max(s.max_rel_error, *e.rel_error);
    error_norm.add(computed[i] - exact[i]);
    exact_norm.add(exact[i]);
    if (!bounds.rigorous.empty()) {
      update_max(s.bound_ratio, ratio(*e.abs_error, bounds.rigorous[i]));
    }
    if (bounds.probabilistic) {
      update_max(s.probabilistic_bound_ratio, ratio(*e.abs_error, bounds.probabilistic->bounds[i]));
    }
  }

  if (s.compared > 0) {
    const auto compared = static_cast<double>(s.compared);
    s.mean_ulp = ulp_sum.to_double() / compared;
    s.fraction_correctly_rounded = static_cast<double>(correctly_rounded) / compared;
  }
  if (any_error_against_exact) s.normwise_rel_error = norm_ratio(error_norm, exact_norm);
  if (bounds.probabilistic) {
    s.probabilistic_bound_lambda = bounds.probabilistic->lambda;
    s.probabilistic_bound_probability = bounds.probabilistic->probability;
  }
  return s;
}

nlohmann::json to_json(const ErrorSummary& s) {
  nlohmann::json histogram = nlohmann::json::array();
  for (const auto& b : s.ulp_histogram) {
    histogram.push_back({{"min", b.min}, {"max", optional_number(b.max)}, {"count", b.count}});
  }
  const MismatchCounts& m = s.mismatches;
  return {
      {"count", s.count},
      {"compared", s.compared},
      {"max_ulp", optional_number(s.max_ulp)},
      {"max_ulp_index", optional_number(s.max_ulp_index)},
      {"mean_ulp", optional_number(s.mean_ulp)},
      {"ulp_histogram", histogram},
      {"fraction_correctly_rounded", optional_number(s.fraction_correctly_rounded)},
      {"exact_not_finite", s.exact_not_finite},
      {"max_abs_error", optional_number(s.max_abs_error)},
      {"max_rel_error", optional_number(s.max_rel_error)},
      {"normwise_rel_error", optional_number(s.normwise_rel_error)},
      {"componentwise_rel_error", optional_number(s.max_rel_error)},
      {"bound_ratio", optional_number(s.bound_ratio)},
      {"probabilistic_bound_ratio", optional_number(s.probabilistic_bound_ratio)},
      {"probabilistic_bound_lambda", optional_number(s.probabilistic_bound_lambda)},
      {"probabilistic_bound_probability", optional_number(s.probabilistic_bound_probability)},
      {"mismatches",
       {{"both_nan", m.both_nan},
        {"nan_vs_number", m.nan_vs_number},
        {"number_vs_nan", m.number_vs_nan},
        {"inf_vs_finite", m.inf_vs_finite},
        {"finite_vs_inf", m.finite_vs_inf},
        {"opposite_inf", m.opposite_inf},
        {"both_inf", m.both_inf},
        {"not_in_format", m.not_in_format}}},
      {"events",
       {{"output", events_json(s.output_events)},
        {"intermediate", events_json(s.intermediate_events)}}},
  };
}

double unit_roundoff(const numeric::Format& format, numeric::Rounding mode) {
  const bool nearest =
      mode == numeric::Rounding::nearest_even || mode == numeric::Rounding::nearest_away;
  return std::ldexp(1.0, nearest ? -format.precision : 1 - format.precision);
}

double gamma(std::uint64_t n, double u) {
  const double nu = static_cast<double>(n) * u;
  return nu < 1 ? nu / (1 - nu) : kInf;
}

double block_fma_coefficient(const BlockFma& model) {
  if (model.block == 0) throw std::invalid_argument("block FMA with a block of 0 products");
  const std::uint64_t blocks = model.n / model.block + (model.n % model.block != 0 ? 1 : 0);
  return std::expm1(std::log1p(model.u_product) +
                    static_cast<double>(model.n) * std::log1p(model.u_internal) +
                    static_cast<double>(blocks) * std::log1p(model.u_output));
}

ProbabilisticCoefficient probabilistic_coefficient(std::uint64_t n, double u, double lambda) {
  const double nd = static_cast<double>(n);
  const double coefficient = std::expm1(lambda * std::sqrt(nd) * u + nd * u * u / (1 - u));
  const double failure = 2 * nd * std::exp(-lambda * lambda * (1 - u) * (1 - u) / 2);
  return {lambda, coefficient, std::clamp(1 - failure, 0.0, 1.0)};
}

double with_final_rounding(double coefficient, double u_final) {
  return coefficient + u_final * (1 + coefficient);
}

std::vector<double> element_bounds(double coefficient, std::span<const double> abs_products) {
  std::vector<double> bounds(abs_products.size());
  for (std::size_t i = 0; i < abs_products.size(); ++i) {
    const double s = abs_products[i];
    if (!(s >= 0)) {
      throw std::invalid_argument(fmt::format(
          "abs_products[{}] = {} is not a sum of absolute values (must be >= 0)", i, s));
    }
    bounds[i] = s == 0 ? 0 : coefficient * s;
  }
  return bounds;
}

}  // namespace ampbench::metrics
