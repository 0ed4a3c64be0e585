// The attention family: one head of scaled dot-product attention, softmax(Q K^T / sqrt D) V, and
// its three gradients dQ, dK, dV. References in multiprecision (Asymptotic: the softmax's
// exponentials), each evaluation wider by the conditioning estimated in binary64.
#include "harness/ops/definition.hpp"
#include "reference/mp/attention_backward.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::ops {
namespace {
// The family's own names (a unity build compiles the families as one unit).
namespace attention_family {

using backends::cpu::Arithmetic;
using backends::cpu::Summation;
using reference::Asymptotic;

std::vector<Operand> qkv(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"q", {s[0], s[2]}}, {"k", {s[1], s[2]}}, {"v", {s[1], s[2]}}};
}
std::vector<Operand> qkv_d_out(const OpInfo&, const Shape& shape) {
  const auto& s = shape.sizes;
  return {{"q", {s[0], s[2]}}, {"k", {s[1], s[2]}}, {"v", {s[1], s[2]}}, {"d_out", {s[0], s[2]}}};
}
std::vector<std::size_t> query_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[0], shape.sizes[2]};
}
std::vector<std::size_t> key_output(const OpInfo&, const Shape& shape) {
  return {shape.sizes[1], shape.sizes[2]};
}
Shape attention_shape(const OpInfo&, const std::vector<std::vector<std::size_t>>& shapes) {
  // q L x D, k S x D
  if (shapes.size() < 2 || shapes[0].size() != 2 || shapes[1].size() != 2) return {};
  return Shape{{shapes[0][0], shapes[1][0], shapes[0][1]}};
}

CpuRun attention_run(const OpInfo&, const Shape& shape, const Arithmetic& arithmetic, Summation,
                     const Inputs& in) {
  const auto& s = shape.sizes;
  CpuRun run;
  run.output = backends::cpu::attention(arithmetic, values(in, 0), values(in, 1), values(in, 2),
                                        s[0], s[1], s[2], run.events);
  return run;
}

// Row by row of queries. Conditioning, estimated in binary64: exp turns the absolute error of a
// score (at most sum |q k| / sqrt d units of 2^-P) into a relative one, and o = sum p v cancels by
// the factor sum p |v| / |o|. The row is evaluated with that many more bits (capped at 2048), so
// that the bound stays a few units of 2^-P.
Reference attention_reference(const OpInfo&, const Shape& shape, const Inputs& in,
                              const numeric::Format& output, numeric::Rounding mode,
                              Reference result, std::uint64_t seed) {
  const std::size_t keys = shape.sizes[1];
  const std::size_t d = shape.sizes[2];
  return by_rows<Asymptotic>(d, output, mode, std::move(result), seed, [&](std::size_t row) {
    const auto q_row = std::span<const double>(values(in, 0)).subspan(row * d, d);
    std::vector<double> score(keys), weight(keys);
    double score_scale = 0;
    for (std::size_t j = 0; j < keys; ++j) {
      double dot = 0, magnitude = 0;
      for (std::size_t t = 0; t < d; ++t) {
        dot += q_row[t] * values(in, 1)[j * d + t];
        magnitude += std::fabs(q_row[t] * values(in, 1)[j * d + t]);
      }
      score[j] = dot / std::sqrt(static_cast<double>(d));
      score_scale = std::max(score_scale, magnitude / std::sqrt(static_cast<double>(d)));
    }
    const double top = *std::max_element(score.begin(), score.end());
    double total = 0;
    for (std::size_t j = 0; j < keys; ++j) total += (weight[j] = std::exp(score[j] - top));
    double condition = 1;
    for (std::size_t t = 0; t < d; ++t) {
      double o = 0, magnitude = 0;
      for (std::size_t j = 0; j < keys; ++j) {
        o += weight[j] / total * values(in, 2)[j * d + t];
        magnitude += weight[j] / total * std::fabs(values(in, 2)[j * d + t]);
      }
      condition = std::max(condition, o == 0 ? 0x1p1000 : magnitude / std::fabs(o));
    }
    const int extra = extra_bits(condition);
    RowEvaluation<Asymptotic> made;
    made.bound = static_cast<std::uint64_t>(std::min(
        64.0 + 8.0 * static_cast<double>(keys) + 8.0 * score_scale, static_cast<double>(1u << 31)));
    made.evaluate = [&in, q_row, extra, keys, d] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      return reference::ops::attention<Asymptotic>(to_asymptotic(q_row),
                                                   to_asymptotic(values(in, 1)),
                                                   to_asymptotic(values(in, 2)), 1, keys, d, d);
    };
    return made;
  });
}

CpuRun attention_backward_run(const OpInfo& op, const Shape& shape, const Arithmetic& arithmetic,
                              Summation, const Inputs& in) {
  const auto& s = shape.sizes;
  backends::cpu::Events all;
  auto g = backends::cpu::attention_backward(arithmetic, values(in, 0), values(in, 1),
                                             values(in, 2), values(in, 3), s[0], s[1], s[2], all);
  return op.op == Op::attention_backward_q   ? one_gradient(g.dq, g.dq_output, all)
         : op.op == Op::attention_backward_k ? one_gradient(g.dk, g.dk_output, all)
                                             : one_gradient(g.dv, g.dv_output, all);
}

// The gradients (reference/mp/attention_backward.hpp), each output rounded by Ziv's strategy. A
// row of dQ needs its query's rows of P and dS only and is evaluated row by row; every element of
// dK and dV sums over all queries, so those are evaluated whole.
//
// Conditioning, estimated in binary64 from the same formulas: a_i = max_j sum_t |dO_it V_jt|
// bounds |dP_ij| and |D_i|, so the error of dS_ij = P_ij (dP_ij - D_i) is a few units of 2^-P
// times P_ij a_i however much dP_ij - D_i cancels, and the outputs sum those terms. Each output is
// set against the sum of its terms' magnitudes:
//   dQ_it: (1/sqrt d) sum_j P_ij a_i |K_jt|,  dK_jt: (1/sqrt d) sum_i P_ij a_i |Q_it|,
//   dV_jt: sum_i P_ij |dO_it|,
// and the evaluation is wider by that ratio (extra_bits). A ratio beyond 2^40 is past what
// binary64 can measure (its own result is then mostly rounding error): those take the full 2048
// bits. The Ziv bound covers the roundings along the way: sums of L, S and d terms, and exp
// turning the absolute error of a score (up to d sum_t |q_t k_t| / sqrt d units) into a relative
// one.
Reference attention_backward_reference(const OpInfo& op, const Shape& shape, const Inputs& in,
                                       const numeric::Format& output, numeric::Rounding mode,
                                       Reference result, std::uint64_t seed) {
  const std::size_t queries = shape.sizes[0];
  const std::size_t keys = shape.sizes[1];
  const std::size_t d = shape.sizes[2];
  const std::span<const double> q = values(in, 0);
  const std::span<const double> k = values(in, 1);
  const std::span<const double> v = values(in, 2);
  const std::span<const double> d_out = values(in, 3);
  const double scale = 1 / std::sqrt(static_cast<double>(d));

  std::vector<double> scores(queries * keys), dp_bound(queries, 0.0);
  double score_scale = 0;
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t j = 0; j < keys; ++j) {
      double dot = 0, magnitude = 0, dp_magnitude = 0;
      for (std::size_t t = 0; t < d; ++t) {
        dot += q[i * d + t] * k[j * d + t];
        magnitude += std::fabs(q[i * d + t] * k[j * d + t]);
        dp_magnitude += std::fabs(d_out[i * d + t] * v[j * d + t]);
      }
      scores[i * keys + j] = dot * scale;
      score_scale = std::max(score_scale, magnitude * scale);
      dp_bound[i] = std::max(dp_bound[i], dp_magnitude);
    }
  }
  const std::vector<double> p =
      reference::ops::softmax<double>(std::span<const double>(scores), queries, keys);
  const auto estimate =
      reference::ops::attention_backward<double>(q, k, v, d_out, queries, keys, d, d);
  const std::vector<double>& estimated = op.op == Op::attention_backward_q   ? estimate.dq
                                         : op.op == Op::attention_backward_k ? estimate.dk
                                                                             : estimate.dv;
  const auto extra_bits_at = [&](std::size_t position) {
    const std::size_t row = position / d;  // a query for dQ, a key for dK and dV
    const std::size_t t = position % d;
    double terms = 0;
    if (op.op == Op::attention_backward_q) {
      for (std::size_t j = 0; j < keys; ++j) {
        terms += p[row * keys + j] * dp_bound[row] * std::fabs(k[j * d + t]);
      }
      terms *= scale;
    } else {
      for (std::size_t i = 0; i < queries; ++i) {
        terms += p[i * keys + row] * (op.op == Op::attention_backward_k
                                          ? dp_bound[i] * std::fabs(q[i * d + t]) * scale
                                          : std::fabs(d_out[i * d + t]));
      }
    }
    const double condition = ratio(terms, estimated[position]);
    return condition > 0x1p40 ? 2048 : extra_bits(condition);
  };
  const std::uint64_t bound =
      static_cast<std::uint64_t>(std::min(64.0 + 8.0 * static_cast<double>(queries + keys + d) +
                                              8.0 * static_cast<double>(d) * score_scale,
                                          static_cast<double>(1u << 31)));
  const auto evaluate_at = [&](std::span<const double> q_rows, std::span<const double> d_out_rows,
                               std::size_t rows, int extra) {
    return [&, q_rows, d_out_rows, rows, extra] {
      const reference::WorkingPrecision wider(reference::working_precision_bits() + extra);
      auto g = reference::ops::attention_backward<Asymptotic>(
          to_asymptotic(q_rows), to_asymptotic(k), to_asymptotic(v), to_asymptotic(d_out_rows),
          rows, keys, d, d);
      return op.op == Op::attention_backward_q   ? std::move(g.dq)
             : op.op == Op::attention_backward_k ? std::move(g.dk)
                                                 : std::move(g.dv);
    };
  };
  if (op.op == Op::attention_backward_q) {
    // The row's evaluation as wide as its widest output asked for.
    const std::vector<std::size_t> positions = result.positions;
    return by_rows<Asymptotic>(d, output, mode, std::move(result), seed, [&](std::size_t row) {
      int extra = 0;
      auto at = std::lower_bound(positions.begin(), positions.end(), row * d);
      for (; at != positions.end() && *at / d == row; ++at) {
        extra = std::max(extra, extra_bits_at(*at));
      }
      return RowEvaluation<Asymptotic>{
          bound, evaluate_at(q.subspan(row * d, d), d_out.subspan(row * d, d), 1, extra)};
    });
  }
  int extra = 0;
  for (const std::size_t position : result.positions) {
    extra = std::max(extra, extra_bits_at(position));
  }
  // dK and dV whole: one "row" holding every output.
  const std::size_t outputs = keys * d;
  return by_rows<Asymptotic>(outputs, output, mode, std::move(result), seed, [&](std::size_t) {
    return RowEvaluation<Asymptotic>{bound, evaluate_at(q, d_out, queries, extra)};
  });
}

// One pass computes the three gradients together, and dK, dV sum over every query: sampled runs
// run whole.
constexpr Definition gradient(OpInfo info, Definition::OutputOf output) {
  return {.info = info,
          .operands = qkv_d_out,
          .output_shape = output,
          .shape_of = attention_shape,
          .run = attention_backward_run,
          .reference = attention_backward_reference};
}

constexpr Definition kAttention[] = {
    {.info = {Op::attention, "attention", "attention", "LxSxD", "128x128x64",
              "softmax(Q K^T / sqrt D) V, one head: Q L x D, K and V S x D", "none"},
     .operands = qkv,
     .output_shape = query_output,
     .shape_of = attention_shape,
     .run = attention_run,
     .sampling = rows_of(1),
     .reference = attention_reference},
    gradient(
        {Op::attention_backward_q, "attention_backward_q", "attention", "LxSxD", "64x64x32",
         "dQ = dS K / sqrt D, dS = P * (dO V^T - rowsum(dO * O)), P = softmax(Q K^T / sqrt D), "
         "for the forward attention (dO L x D)",
         "none", "attention"},
        query_output),
    gradient({Op::attention_backward_k, "attention_backward_k", "attention", "LxSxD", "64x64x32",
              "dK = dS^T Q / sqrt D, dS = P * (dO V^T - rowsum(dO * O)), for the forward "
              "attention",
              "none", "attention"},
             key_output),
    gradient({Op::attention_backward_v, "attention_backward_v", "attention", "LxSxD", "64x64x32",
              "dV = P^T dO, P = softmax(Q K^T / sqrt D), for the forward attention", "none",
              "attention"},
             key_output),
};

}  // namespace attention_family
}  // namespace

std::span<const Definition> attention_ops() {
  return attention_family::kAttention;
}

}  // namespace ampbench::ops
