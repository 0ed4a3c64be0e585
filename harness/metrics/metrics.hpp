// Error metrics: how far a computed tensor is from its reference, element by element and as one
// summary per tensor, and a-priori error bounds for dot products to hold the errors against.
//
// Every element of an output is given three ways:
//   computed  what the implementation under test produced, a value of the output format (or not:
//             that is a bug, and it is counted);
//   rounded   the reference rounded correctly to the output format, the value a perfect kernel
//             returns; ulp errors are counted from it;
//   exact     the reference rounded to the nearest binary64; absolute and relative errors, and the
//             bound ratios, are measured from it.
// NaNs and infinities are never folded into means or maxima: each disagreement between computed and
// rounded is counted by its class instead. docs/metrics.md defines every metric; keep it in step.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::metrics {

// ---- one element --------------------------------------------------------------------------------

// How a computed value stands against the rounded reference. Classified in this order: a computed
// value that is not NaN and not a value of the format is `not_in_format` whatever the reference;
// then NaNs; then infinities; what is left is `compared`.
enum class ElementClass : std::uint8_t {
  compared,       // both finite values of the format: the element has a ulp error
  not_in_format,  // computed is neither NaN nor a value of the format (a backend bug)
  both_nan,       // agreement
  nan_vs_number,  // computed NaN, reference a number (finite or infinite)
  number_vs_nan,  // computed a number, reference NaN
  both_inf,       // infinities of the same sign: agreement
  opposite_inf,   // infinities of opposite signs
  inf_vs_finite,  // computed infinite, reference finite
  finite_vs_inf,  // computed finite, reference infinite
};

struct ElementError {
  ElementClass kind;
  // Steps between computed and rounded among the values of the format; 0 means correctly rounded.
  // Set when kind is `compared`.
  std::optional<std::uint64_t> ulp;
  // |computed - exact| and that over |exact| (0 when the difference is 0, +inf when only exact is
  // 0), both rounded to binary64. Set when kind is `compared` and exact is finite; exact is not
  // finite there only when the format saturates an infinite or out-of-binary64-range reference.
  std::optional<double> abs_error;
  std::optional<double> rel_error;
};

// Throws std::invalid_argument when `rounded` is neither NaN nor a value of the format: the
// reference path is broken, and nothing measured against it would mean anything.
ElementError compare_element(const numeric::Format& format, double computed, double rounded,
                             double exact);

// ---- one tensor ---------------------------------------------------------------------------------

// Ulp-error histogram: bucket 0 holds error 0, bucket k >= 1 holds errors in (2^(k-2), 2^(k-1)],
// that is 1, 2, [3,4], [5,8], [9,16], ..., up to [2^31+1, 2^32]; the last bucket is [2^32+1, inf).
// The layout is the same for every format, so that histograms of different runs line up.
inline constexpr int kUlpHistogramBuckets = 35;

struct HistogramBucket {
  std::uint64_t min = 0;             // smallest ulp error in the bucket
  std::optional<std::uint64_t> max;  // largest; empty for the last, open bucket
  std::uint64_t count = 0;
};

// The buckets with their edges and zero counts.
constexpr std::array<HistogramBucket, kUlpHistogramBuckets> empty_ulp_histogram() {
  std::array<HistogramBucket, kUlpHistogramBuckets> buckets{};
  buckets[0].max = 0;
  for (int k = 1; k < kUlpHistogramBuckets; ++k) {
    buckets[k].min = (std::uint64_t{1} << (k - 1) >> 1) + 1;  // 2^(k-2) + 1, and 1 for k = 1
    if (k + 1 < kUlpHistogramBuckets) buckets[k].max = std::uint64_t{1} << (k - 1);
  }
  return buckets;
}

// Elements that were not compared, by class (see ElementClass). `both_nan` and `both_inf` are
// agreements; the others are failures.
struct MismatchCounts {
  std::uint64_t both_nan = 0;
  std::uint64_t nan_vs_number = 0;
  std::uint64_t number_vs_nan = 0;
  std::uint64_t inf_vs_finite = 0;
  std::uint64_t finite_vs_inf = 0;
  std::uint64_t opposite_inf = 0;
  std::uint64_t both_inf = 0;
  std::uint64_t not_in_format = 0;
};

// Per-element bounds that hold with a stated probability (see probabilistic_coefficient).
struct ProbabilisticBounds {
  std::span<const double> bounds;
  double lambda;
  double probability;  // the probability the bound of one element holds at least with
};

// A-priori absolute error bounds of the op, one per element: |computed_i - exact_i| <= bound_i.
// `rigorous` is empty (no bound) or as long as the tensor; probabilistic bounds, when given, are as
// long as the tensor. Bounds must be >= 0 (+inf allowed: no information).
struct ElementBounds {
  std::span<const double> rigorous;
  std::optional<ProbabilisticBounds> probabilistic;
};

// Statistics over an empty set of elements are empty (null in JSON), never 0: an empty tensor, or
// one where nothing could be compared, must not read as a perfect one.
struct ErrorSummary {
  std::uint64_t count = 0;     // elements
  std::uint64_t compared = 0;  // elements of class `compared`

  // Over the compared elements.
  std::optional<std::uint64_t> max_ulp;
  std::optional<std::uint64_t> max_ulp_index;  // the first element with max_ulp
  std::optional<double> mean_ulp;              // exact integer sum / compared, rounded to binary64
  std::array<HistogramBucket, kUlpHistogramBuckets> ulp_histogram = empty_ulp_histogram();
  std::optional<double> fraction_correctly_rounded;  // ulp 0 / compared

  // Over the compared elements whose exact value is finite; `exact_not_finite` counts the others
  // (possible only with a saturating format).
  std::uint64_t exact_not_finite = 0;
  std::optional<double> max_abs_error;
  std::optional<double> max_rel_error;  // also the componentwise relative error, the same number
  std::optional<double> normwise_rel_error;  // ||computed - exact||_2 / ||exact||_2
  std::optional<double> bound_ratio;         // max |computed - exact| / rigorous bound
  std::optional<double> probabilistic_bound_ratio;
  std::optional<double> probabilistic_bound_lambda;  // set when probabilistic bounds were given
  std::optional<double> probabilistic_bound_probability;

  MismatchCounts mismatches;

  // Rounding events of the op: carried and serialised, filled in by the caller.
  numeric::EventCounts output_events;
  numeric::EventCounts intermediate_events;
};

// Compares a computed tensor with its reference. The three spans (and the bounds that are given)
// must have the same length, or std::invalid_argument says which lengths differ. Deterministic:
// elements are visited in index order, and the ulp sum is exact.
ErrorSummary summarize(const numeric::Format& format, std::span<const double> computed,
                       std::span<const double> rounded, std::span<const double> exact,
                       const ElementBounds& bounds = {});

// The summary as JSON (field names as in ErrorSummary; docs/metrics.md shows the shape). Empty
// values are null; infinite doubles are the strings "inf" and "-inf", since JSON has no infinity.
nlohmann::json to_json(const ErrorSummary& summary);

// ---- a-priori bounds for dot products ---------------------------------------------------------
//
// One element of a GEMM is a dot product: a row of A times a column of B. Each helper gives a
// coefficient c; the bound of element i is c * (|A||B|)_i, the sum over k of |a_ik||b_kj|, which
// the caller computes in binary64 (element_bounds). All assume no underflow or overflow in the
// computation (the standard model), and that kernel and reference saw the same input values.
// Coefficients are evaluated in binary64, to within a few units of 2^-53.

// The unit roundoff of a format under a rounding mode: the bound u on |delta| in fl(x) =
// x(1 + delta) for x in the normal range. 2^-p for round to nearest (either tie rule); 2^(1-p) for
// the directed modes, round to odd and stochastic rounding, which may return either neighbour.
double unit_roundoff(const numeric::Format& format, numeric::Rounding mode);

// gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., 2002,
// Lemma 3.1), the coefficient of recursive summation of n products in any order (eq. (3.5)). +inf
// when n u >= 1, where the lemma gives no bound.
double gamma(std::uint64_t n, double u);

// Block fused multiply-add (tensor-core style) evaluation of a dot product of length n, modelled on
// Blanchard, Higham, Lopez, Mary and Pranesh, SIAM J. Sci. Comput. 42(3), 2020. We could not check
// that paper's theorem; this coefficient is derived here from the standard model instead (see
// docs/metrics.md), for this evaluation: the n products, each exact or rounded with relative error
// <= u_product, are taken in q = ceil(n / block) consecutive blocks; block j forms
// c_j = fl_output(c_(j-1) + its products), c_0 = 0, adding its at most block + 1 terms in any order
// with each addition's relative error <= u_internal, then rounding the sum with relative error
// <= u_output. A term meets at most n internal additions and q output roundings, so
//   coefficient = (1 + u_product) (1 + u_internal)^n (1 + u_output)^q - 1.
// Hardware whose internal addition does not fit the model (e.g. addends truncated on alignment
// before a many-term add) is not covered by it.
struct BlockFma {
  std::uint64_t n;      // dot-product length
  std::uint64_t block;  // products per block FMA, >= 1
  double u_product;     // 0 when products are exact (e.g. fp16 x fp16 in an fp32 accumulator)
  double u_internal;    // 0 when a block's sum is exact before its one rounding
  double u_output;      // the unit roundoff of the accumulator format
};
double block_fma_coefficient(const BlockFma& model);

// Probabilistic bound of Higham and Mary, "A new approach to probabilistic rounding error
// analysis", SIAM J. Sci. Comput. 41(5), 2019: if the rounding errors are independent random
// variables of mean zero (round to nearest; not the directed modes), a dot product of length n
// satisfies |error| <= gamma~_n(lambda) |a|^T|b| with gamma~_n(lambda) = exp(lambda sqrt(n) u +
// n u^2 / (1 - u)) - 1 = lambda sqrt(n) u + O(u^2), with probability at least
// Q(lambda, n) = 1 - 2 n exp(-lambda^2 (1 - u)^2 / 2). Q is reported clamped to [0, 1]; for
// lambda = 1 it is 0: the bound is then an estimate of the typical error, not a guarantee.
struct ProbabilisticCoefficient {
  double lambda;
  double coefficient;  // gamma~_n(lambda)
  double probability;  // max(0, Q(lambda, n))
};
ProbabilisticCoefficient probabilistic_coefficient(std::uint64_t n, double u, double lambda = 1.0);

// The coefficient once the dot product, computed with `coefficient`, is rounded once more to an
// output format of unit roundoff u_final: |fl(s) - x| <= |s - x| + u_final |s| and |x| <= |a|^T|b|
// give coefficient + u_final (1 + coefficient).
double with_final_rounding(double coefficient, double u_final);

// coefficient * abs_products[i] for each element; 0 where abs_products[i] is 0 (all products zero:
// the result is exactly 0 under every model), even for an infinite coefficient.
std::vector<double> element_bounds(double coefficient, std::span<const double> abs_products);

}  // namespace ampbench::metrics
