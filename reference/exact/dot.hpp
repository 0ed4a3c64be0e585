// Exact references for dot products, sums and matrix products, and the naive sequential dot
// product they are compared with.
//
// Inputs are values of their format held in binary64 (or binary32) containers; the functions
// check that they are (a value with more bits than its format would make the fast paths inexact)
// and throw std::invalid_argument naming the first one that is not. Results are exact, so they do
// not depend on the order of the terms or on the number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"
#include "reference/exact/exact_value.hpp"

namespace ampbench::reference {

// Whether x is a value of f: NaN, an infinity the format has, or a finite number with at most
// p significant bits on f's grid and within its range.
bool is_value_of(const numeric::Format& f, double x);

// Throws std::invalid_argument ("a[17] = 0x1.0000000001p+0 is not a value of fp16") unless every
// element of x is a value of f; `name` names the array in the message.
void require_values_of(const numeric::Format& f, std::span<const double> x, const char* name);

// The exact sum of a[i] * b[i] for values of `input` (lengths must match). Uses the narrow 128-bit
// accumulator where the format's products fit (fp16, fp8), the long accumulator otherwise.
ExactValue exact_dot(const numeric::Format& input, std::span<const double> a,
                     std::span<const double> b);
// The same for binary32 data (any format up to fp32 whose values are stored as float).
ExactValue exact_dot(std::span<const float> a, std::span<const float> b);
// The exact sum of any binary64 values.
ExactValue exact_sum(std::span<const double> x);

// The naive sequential dot product in an accumulation format: s = +0, then for each i
// s = round(s + a[i] * b[i]) with one rounding per step (a fused multiply-add in `accumulate`),
// step i using stochastic_draw(seed, i) in the stochastic modes. The rounding events of the steps
// are counted.
struct NaiveDot {
  double value;
  numeric::EventCounts step_events;
};
NaiveDot naive_dot(const numeric::RoundingOptions& accumulate, std::span<const double> a,
                   std::span<const double> b);

// What `ampbench dot` reports: the exact dot product of values of `format`, its correct rounding
// in `format` in accumulate.mode (the stochastic modes: draw number a.size() of accumulate.seed),
// the naive loop in `accumulate`, and the naive result's error in ulps of accumulate.format
// against the exact value rounded there in the same mode (to nearest for the stochastic modes,
// whose result is random); empty when either is NaN.
struct DotComparison {
  ExactValue exact;
  numeric::Rounded rounded;
  NaiveDot naive;
  double naive_reference;
  std::optional<std::uint64_t> naive_ulp_error;
};
DotComparison compare_dot(const numeric::Format& format, const numeric::RoundingOptions& accumulate,
                          std::span<const double> a, std::span<const double> b);

// A row-major matrix product C = A * B (+ C_in): A is m x k, B is k x n, C_in (optional, empty
// when absent) m x n.
struct GemmOperands {
  std::size_t m;
  std::size_t n;
  std::size_t k;
  std::span<const double> a;
  std::span<const double> b;
  std::span<const double> c;
};

// Reference outputs of a matrix product at the given row-major output positions.
struct GemmReference {
  std::vector<std::size_t> positions;  // row * n + column, increasing
  std::vector<double> rounded;         // the exact value rounded correctly to the output format
  std::vector<double> nearest;         // the exact value rounded to the nearest binary64
  numeric::EventCounts events;         // of the rounding to the output format
};

// `k` distinct positions among `count`, uniformly chosen from the seed (the same on every
// platform), in increasing order; all of them when k >= count.
std::vector<std::size_t> sample_positions(std::size_t count, std::size_t k, std::uint64_t seed);

// The exact product at `positions` (all of C when empty), each element rounded with `output`
// (element at position p uses stochastic_draw(output.seed, p)). Operands must be values of
// `input`; C_in of any binary64 values. Runs on `threads` threads (0: all cores); the result
// does not depend on it.
GemmReference exact_gemm(const numeric::Format& input, const GemmOperands& operands,
                         const numeric::RoundingOptions& output,
                         std::span<const std::size_t> positions = {}, unsigned threads = 0);

}  // namespace ampbench::reference
