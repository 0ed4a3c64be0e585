// How an op is defined: one record per op (its OpInfo, operands, output shape, reference, bound,
// how the CPU backend runs it and how a sampled run slices it), grouped by family in one file each
// (matmul.cpp, convolution.cpp, reduction.cpp, softmax.cpp, normalization.cpp, activation.cpp,
// elementwise.cpp, attention.cpp), in the spirit of PyTorch's OpInfo. catalog.cpp answers every
// question of catalog.hpp from these records, and adds what all ops share (shape parsing and size
// limits, the lowering of gemm-shaped ops, the run at sampled positions). Below the record, the
// parts the families share: reading operands, Ziv's strategy row by row, and the a-priori bounds of
// recursive summation and of one rounding.
#pragma once

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "harness/ops/catalog.hpp"
#include "harness/ops/gemm_part.hpp"
#include "reference/exact/accumulator.hpp"
#include "reference/mp/asymptotic.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::ops {

// How run_cpu_at computes some output positions: the whole run, picked (outputs that depend on a
// whole column, on every row or on the batch size), or row by row, each row run alone with the
// first `sliced` operands cut to that row and the others whole. A row is the shape's last size of
// values (a query of attention's), and its run has the shape with the first size 1.
struct Sampling {
  enum class By : std::uint8_t { whole, rows };
  By by = By::whole;
  std::size_t sliced = 0;
};
inline constexpr Sampling kWhole{};
inline constexpr Sampling rows_of(std::size_t sliced) {
  return {Sampling::By::rows, sliced};
}

struct Definition {
  using OperandsOf = std::vector<Operand> (*)(const OpInfo&, const Shape&);
  using OutputOf = std::vector<std::size_t> (*)(const OpInfo&, const Shape&);
  // The op's shape from its operands' shapes (in operands() order), or a Shape without sizes when
  // they do not fit.
  using ShapeOf = Shape (*)(const OpInfo&, const std::vector<std::vector<std::size_t>>&);
  using Parse = Shape (*)(const OpInfo&, std::string_view text);
  using Check = void (*)(const OpInfo&, const Shape&, std::string_view text);
  using Lower = GemmPart (*)(const OpInfo&, const Shape&, const Inputs&);
  using Parts = std::vector<GemmPart> (*)(const OpInfo&, const Shape&, const Inputs&);
  using Run = CpuRun (*)(const OpInfo&, const Shape&, const backends::cpu::Arithmetic&,
                         backends::cpu::Summation, const Inputs&);
  using RunAt = CpuRun (*)(const OpInfo&, const Shape&, const backends::cpu::Arithmetic&,
                           backends::cpu::Summation, const Inputs&, std::span<const std::size_t>);
  using RunMma = CpuRun (*)(const OpInfo&, const Shape&, const numeric::MmaModel&,
                            const numeric::Format&, numeric::Rounding, const Inputs&);
  // `result` arrives with its positions and room for the values at them.
  using ReferenceAt = Reference (*)(const OpInfo&, const Shape&, const Inputs&,
                                    const numeric::Format&, numeric::Rounding, Reference result,
                                    std::uint64_t seed);
  using Bounds = std::vector<double> (*)(const OpInfo&, const Shape&,
                                         const backends::cpu::Arithmetic&, backends::cpu::Summation,
                                         const Inputs&, std::span<const std::size_t>);

  OpInfo info;
  OperandsOf operands;
  OutputOf output_shape = nullptr;  // none: R x C, the shape itself
  ShapeOf shape_of = nullptr;       // none: N or R x C, the first operand's shape
  std::string_view reference_kind = "multiprecision (Ziv)";
  // A gemm on rearranged operands (linear, the gemm gradients, linear's bias gradient), or a set
  // of independent gemms (bmm's batches, a convolution's lowered groups): the emulation, the
  // sampled run, the reference and the bound are then gemm's, and the fields below stay empty.
  Lower as_gemm = nullptr;
  Parts gemm_parts = nullptr;
  bool tensor_core = false;  // runs on a Tensor Core model (run_cpu_mma)
  Run run = nullptr;
  Sampling sampling = kWhole;
  RunAt run_at = nullptr;    // when the op slices its own sampled runs (gemm)
  RunMma run_mma = nullptr;  // gemm and dot; the lowered ops through gemm's
  ReferenceAt reference = nullptr;
  Bounds bounds = nullptr;  // none: the op has no a-priori bound
  Parse parse = nullptr;    // a shape syntax of its own (convolutions)
  Check check = nullptr;    // a rule of the op's own on a parsed shape
};

// Each family's records, in any order; catalog() lists them in the order of enum Op.
std::span<const Definition> matmul_ops();
std::span<const Definition> convolution_ops();
std::span<const Definition> reduction_ops();
std::span<const Definition> softmax_ops();
std::span<const Definition> normalization_ops();
std::span<const Definition> activation_ops();
std::span<const Definition> elementwise_ops();
std::span<const Definition> attention_ops();

const Definition& definition(const OpInfo& op);

// ---- what the families share -------------------------------------------------------------------

using Real = reference::Real;

// The element count of a shape, or OpError naming `what` beyond the audit's limit (kMaxElements).
std::size_t checked_product(const std::vector<std::size_t>& sizes, std::string_view what);

const std::vector<double>& values(const Inputs& in, std::size_t i);
// An optional operand: empty when absent (or not given at all).
std::span<const double> optional_values(const Inputs& in, std::size_t i);
// A parameter operand (gamma, beta, a bias), drawn from a distribution of its own.
Operand parameter(std::string name, std::vector<std::size_t> shape, HeldIn held_in = HeldIn::input);

// One gradient of a pass that computes several (attention's, batch norm's backward): its values and
// output roundings, and every intermediate rounding of the pass.
CpuRun one_gradient(std::vector<double>& values, const numeric::EventCounts& output,
                    const backends::cpu::Events& all);

// The random draw of stochastic rounding at an output position; 0 for the other modes.
std::uint32_t draw(numeric::Rounding mode, std::uint64_t seed, std::size_t position);
// Extra working bits for a result whose formula cancels by `condition` (|terms| / |result|,
// estimated in binary64; a zero result counts as 2^1000), capped at 2048: the reference is then
// evaluated that much wider, and its bound stays a few units of 2^-P.
int extra_bits(double condition);
// |terms| / |result|, 2^1000 for a zero result of nonzero terms.
double ratio(double terms, double result);
// The Ziv bound of a row-wise op in multiprecision, in units of 2^-P: a sum of `cols` same-signed
// terms contributes cols, each elementary function a few units, and exp(z) amplifies the error of
// z by |z| (the row's spread below its maximum).
std::uint64_t row_bound(std::span<const double> x, std::size_t row, std::size_t cols);

std::vector<reference::Asymptotic> to_asymptotic(std::span<const double> x);
std::vector<Real> to_reals(std::span<const double> x);
// The value of an exact sum as a Real holding every bit.
Real to_real(const reference::ExactValue& v);

// Ziv's strategy per output element for a row-wise op: the row is evaluated once per working
// precision and kept at every precision evaluated (in a row where some outputs need a second
// round, the others do not evaluate it again), each element rounded when its error interval
// allows. Rows of Real restore MPFR's inexact flag for the kept evaluations, which the Ziv loop
// reads to tell exact results; rows of Asymptotic (the softmax family: exponentials beyond MPFR's
// range stay as terms of known sign, reference/mp/asymptotic.hpp) carry their own exactness.
template <typename Value>
class RowReferenceOf {
 public:
  using Evaluate = std::function<std::vector<Value>()>;
  explicit RowReferenceOf(Evaluate evaluate) : evaluate_(std::move(evaluate)) {}

  reference::ReferenceValue element(std::size_t j, const numeric::Format& f, numeric::Rounding mode,
                                    std::uint64_t error_bound, std::uint32_t random) {
    reference::ZivPolicy policy;
    policy.error_bound = error_bound;
    const auto value = [&] { return row(reference::working_precision_bits()).at(j); };
    if constexpr (kAsymptotic) {
      return reference::correctly_rounded_asymptotic(f, mode, value, policy, random);
    } else {
      return reference::correctly_rounded(f, mode, value, policy, random);
    }
  }

 private:
  static constexpr bool kAsymptotic = std::is_same_v<Value, reference::Asymptotic>;
  struct Row {
    std::vector<Value> values;
    bool inexact = true;  // Real: MPFR's inexact flag after the evaluation
  };

  const std::vector<Value>& row(int bits) {
    auto found = rows_.find(bits);
    if (found == rows_.end()) {
      Row r;
      if constexpr (!kAsymptotic) mpfr_clear_inexflag();
      r.values = evaluate_();
      if constexpr (!kAsymptotic) r.inexact = mpfr_inexflag_p() != 0;
      found = rows_.emplace(bits, std::move(r)).first;
    } else if constexpr (!kAsymptotic) {
      if (found->second.inexact) mpfr_set_inexflag();
    }
    return found->second.values;
  }

  Evaluate evaluate_;
  std::map<int, Row> rows_;  // by working precision
};
using RowReference = RowReferenceOf<Real>;
using AsymptoticRowReference = RowReferenceOf<reference::Asymptotic>;

// A row-wise reference: the positions (increasing) grouped by row, `per_row` outputs to a row;
// make_row(row) gives the row's Ziv bound and its evaluation, each output its element.
template <typename Value>
struct RowEvaluation {
  std::uint64_t bound = 0;
  typename RowReferenceOf<Value>::Evaluate evaluate;
};
template <typename Value, typename MakeRow>
Reference by_rows(std::size_t per_row, const numeric::Format& output, numeric::Rounding mode,
                  Reference result, std::uint64_t seed, MakeRow make_row) {
  const std::size_t n = result.positions.size();
  std::size_t e = 0;
  while (e < n) {
    const std::size_t row = result.positions[e] / per_row;
    RowEvaluation<Value> made = make_row(row);
    RowReferenceOf<Value> evaluate(std::move(made.evaluate));
    for (; e < n && result.positions[e] / per_row == row; ++e) {
      const std::size_t p = result.positions[e];
      const auto v =
          evaluate.element(p - row * per_row, output, mode, made.bound, draw(mode, seed, p));
      result.rounded[e] = v.rounded.value;
      result.nearest[e] = v.value;
    }
  }
  return result;
}

// A forward row-wise op of R x C (operand 0): by_rows over its rows of C values, `per_row` outputs
// to a row; make_row(row values) gives the row's Ziv bound and evaluation.
template <typename Value, typename MakeRow>
Reference forward_rows(const Shape& shape, const Inputs& in, std::size_t per_row,
                       const numeric::Format& output, numeric::Rounding mode, Reference result,
                       std::uint64_t seed, MakeRow make_row) {
  const std::size_t cols = shape.sizes[1];
  const std::span<const double> x = values(in, 0);
  return by_rows<Value>(per_row, output, mode, std::move(result), seed,
                        [&](std::size_t row) { return make_row(x.subspan(row * cols, cols)); });
}

// References of the backward row ops (x and, unless has_dy is false, dy, both R x C): each row in
// multiprecision, evaluate(row, x, dy) in Value, wider by the cancellation its formula suffers,
// condition(row, x, dy) >= 1, estimated in binary64; the Ziv bound that of the forward row and of
// the activations' derivatives.
template <typename Value, typename Condition, typename Evaluate>
Reference row_backward_reference(const Shape& shape, const Inputs& in, bool has_dy,
                                 const numeric::Format& output, numeric::Rounding mode,
                                 Reference result, std::uint64_t seed, Condition condition,
                                 Evaluate evaluate) {
  const std::size_t cols = shape.sizes[1];
  const std::span<const double> x = values(in, 0);
  return by_rows<Value>(cols, output, mode, std::move(result), seed, [&](std::size_t row) {
    const auto xr = x.subspan(row * cols, cols);
    const auto dyr = has_dy ? std::span<const double>(values(in, 1)).subspan(row * cols, cols)
                            : std::span<const double>();
    double spread = 0, largest = 0;
    const double top = *std::max_element(xr.begin(), xr.end());
    for (const double v : xr) {
      spread = std::max(spread, top - v);
      largest = std::max(largest, std::fabs(v));
    }
    const int extra = extra_bits(condition(row, xr, dyr));
    RowEvaluation<Value> made;
    made.bound = static_cast<std::uint64_t>(
        std::min(64.0 + 8.0 * static_cast<double>(cols) + 8.0 * spread + 8.0 * largest * largest,
                 static_cast<double>(1u << 31)));
    made.evaluate = [&evaluate, row, xr, dyr, extra] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      return evaluate(row, xr, dyr);
    };
    return made;
  });
}

// ---- a-priori bounds
// -----------------------------------------------------------------------------

// Relative bounds hold only above the subnormal range: each rounding of a product, a sum or the
// output may also lose up to half the spacing of the subnormals (all of it in the directed
// modes), 2^(emin - p) of its format (Higham, Section 2.1, and the underflow term of eq. (3.4)).
double underflow_error(const backends::cpu::Arithmetic& arithmetic, const numeric::Format& f);

// One rounding to compute (none for a cast: rounds_to_compute false), then one to output:
// |r - v| <= (u_c |v| + e_c) (1 + u_o) + u_o |v| + e_o, with v = exact(p) the exact result,
// known in binary64 to a relative 2^-52.
std::vector<double> one_rounding_bounds(const backends::cpu::Arithmetic& arithmetic,
                                        bool rounds_to_compute,
                                        std::span<const std::size_t> positions,
                                        const std::function<double(std::size_t)>& exact);

// Recursive summation of k terms per output (Higham, Accuracy and Stability, Lemma 3.1: the
// product of (1 + d_i) over m roundings lies within (1 + u)^m - 1 <= gamma_m): each product
// rounded once to compute (none for sums), each term then through at most k - 1 additions
// (sequential) or ceil(log2 k) (pairwise), each rounded to accumulate, plus one for a C added
// last; a mean divides once more (to compute); then the output's rounding. magnitude(p) is
// sum |terms| at position p (divided by k for a mean), computed in binary64 and enlarged here by
// (k + 2) u_64 so that its own rounding cannot make the bound too small.
struct Summed {
  std::size_t k = 0;
  bool products = false;
  bool divided = false;
  bool always_sequential = false;  // summed in order whatever the summation (mean_pool's rows)
  bool with_c = false;
};
std::vector<double> summation_bounds(const backends::cpu::Arithmetic& arithmetic,
                                     backends::cpu::Summation summation, const Summed& summed,
                                     std::span<const std::size_t> positions,
                                     const std::function<double(std::size_t)>& magnitude);

}  // namespace ampbench::ops
