// The backward pass of one attention head as a fused kernel computes it: FlashAttention-2's
// backward (Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work
// Partitioning", 2023, Algorithm 2), which keeps no L x S matrix from the forward pass: it
// recomputes P from Q and K, and takes the softmax backward's row sums from the forward output,
// D_i = rowsum(dO_i * O_i) (Algorithm 2, line 4; `dot_do_o` in csrc/flash_attn/src/
// flash_bwd_preprocess_kernel.h of Dao-AILab/flash-attention), which equals sum_j P_ij dP_ij.
//
// The order of the roundings (c: compute, a: a sum accumulated in `accumulate`, o: output):
//   forward, as attention() does it:  s_ij = c(a_t(c(q_it k_jt)) * c(1 / c(sqrt d)))
//                                     P_ij = c(e_ij / a_j(e_ij)), e_ij = c(exp(c(s_ij - max_j s)))
//                                     O_it = o(a_j(c(P_ij v_jt)))   the output the forward stored
//   D_i   = a_t(c(dO_it O_it))
//   dP_ij = a_t(c(dO_it v_jt))
//   dS_ij = c(P_ij * c(dP_ij - D_i))                       flash_bwd_kernel.h: p * (dp - d)
//   dQ_it = o(c(a_j(c(dS_ij k_jt)) * scale))               the scale last, as FlashAttention
//   dK_jt = o(c(a_i(c(dS_ij q_it)) * scale))               multiplies its fp32 accumulators
//   dV_jt = o(a_i(c(P_ij dO_it)))
// Every sum runs sequentially: over t, over keys j (dQ), over queries i (dK, dV). FlashAttention
// accumulates dK and dV over query blocks in that order, and dQ over key blocks with atomic
// additions, whose order the hardware decides. It also rounds P and dS to the input format before
// its matrix products; here they stay in `compute`, as P does in attention().
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/backends/cpu/rounders.hpp"

namespace ampbench::backends::cpu {

using namespace detail;

namespace {

// 1 / sqrt(d), FlashAttention's softmax_scale, as attention() rounds it.
double softmax_scale(Rounders& round, std::size_t d) {
  return round.compute(1.0 / round.compute(std::sqrt(static_cast<double>(d))));
}

}  // namespace

AttentionGradients attention_backward(const Arithmetic& arithmetic, std::span<const double> q,
                                      std::span<const double> k, std::span<const double> v,
                                      std::span<const double> d_out, std::size_t queries,
                                      std::size_t keys, std::size_t d, Events& events) {
  require(q.size() == queries * d && d_out.size() == queries * d && k.size() == keys * d &&
              v.size() == keys * d && keys > 0,
          fmt::format("attention_backward: Q ({}), dO ({}), K ({}) and V ({}) do not make {} "
                      "queries and {} keys of dimension {}",
                      q.size(), d_out.size(), k.size(), v.size(), queries, keys, d));
  require_exact(arithmetic);
  AttentionGradients g;
  g.dq.resize(queries * d);
  g.dk.resize(keys * d);
  g.dv.resize(keys * d);
  // P and dS, which the key side reads by columns.
  std::vector<double> p(queries * keys), ds(queries * keys);
  const Events query_side = for_rows(queries, [&](std::size_t first, std::size_t end, Events& e) {
    std::vector<double> products(std::max(d, keys)), scores(keys), shifted(keys), exps(keys);
    std::vector<double> o(d);
    for (std::size_t i = first; i < end; ++i) {
      Rounders round(arithmetic, e, i);
      // O is the output the forward pass stored, in the output format; here an intermediate.
      Rounder stored(arithmetic.output, arithmetic.mode, e.intermediate, numeric::splitmix64(i, 3));
      const double scale = softmax_scale(round, d);
      const double* q_i = q.data() + i * d;
      const double* do_i = d_out.data() + i * d;
      double* p_i = p.data() + i * keys;
      double* ds_i = ds.data() + i * keys;
      for (std::size_t j = 0; j < keys; ++j) {
        for (std::size_t t = 0; t < d; ++t) products[t] = round.compute(q_i[t] * k[j * d + t]);
        scores[j] = round.compute(
            accumulate_sum(round.accumulate, Summation::sequential, products.data(), d) * scale);
      }
      double m = 0;
      const double total = exp_sum(round, scores.data(), keys, shifted.data(), exps.data(), m);
      for (std::size_t j = 0; j < keys; ++j) p_i[j] = round.compute(exps[j] / total);
      for (std::size_t t = 0; t < d; ++t) {
        for (std::size_t j = 0; j < keys; ++j) products[j] = round.compute(p_i[j] * v[j * d + t]);
        o[t] =
            stored(accumulate_sum(round.accumulate, Summation::sequential, products.data(), keys));
      }
      for (std::size_t t = 0; t < d; ++t) products[t] = round.compute(do_i[t] * o[t]);
      const double row_sum =
          accumulate_sum(round.accumulate, Summation::sequential, products.data(), d);
      for (std::size_t j = 0; j < keys; ++j) {
        for (std::size_t t = 0; t < d; ++t) products[t] = round.compute(do_i[t] * v[j * d + t]);
        const double dp =
            accumulate_sum(round.accumulate, Summation::sequential, products.data(), d);
        ds_i[j] = round.compute(p_i[j] * round.compute.sum(dp, -row_sum));
      }
      for (std::size_t t = 0; t < d; ++t) {
        for (std::size_t j = 0; j < keys; ++j) products[j] = round.compute(ds_i[j] * k[j * d + t]);
        g.dq[i * d + t] = round.output(round.compute(
            accumulate_sum(round.accumulate, Summation::sequential, products.data(), keys) *
            scale));
      }
    }
  });
  // The key side, one pass per gradient so that each counts its own output events: row j of dK
  // (dV) sums dS_ij q_i (P_ij dO_i) over the queries. Its rows are numbered after the queries'.
  const auto key_side = [&](const std::vector<double>& weights, std::span<const double> rows,
                            bool scaled, std::size_t stream, std::vector<double>& out) {
    return for_rows(keys, [&](std::size_t first, std::size_t end, Events& e) {
      std::vector<double> products(queries);
      for (std::size_t j = first; j < end; ++j) {
        Rounders round(arithmetic, e, stream + j);
        const double scale = scaled ? softmax_scale(round, d) : 1.0;
        for (std::size_t t = 0; t < d; ++t) {
          for (std::size_t i = 0; i < queries; ++i) {
            products[i] = round.compute(weights[i * keys + j] * rows[i * d + t]);
          }
          const double total =
              accumulate_sum(round.accumulate, Summation::sequential, products.data(), queries);
          out[j * d + t] = round.output(scaled ? round.compute(total * scale) : total);
        }
      }
    });
  };
  const Events dk_side = key_side(ds, q, true, queries, g.dk);
  const Events dv_side = key_side(p, d_out, false, queries + keys, g.dv);
  g.dq_output = query_side.output;
  g.dk_output = dk_side.output;
  g.dv_output = dv_side.output;
  for (const Events* e : {&query_side, &dk_side, &dv_side}) events += *e;
  return g;
}

}  // namespace ampbench::backends::cpu
