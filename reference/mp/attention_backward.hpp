// The reference gradients of one attention head (ops::attention), written once over the scalar
// type as the ops of ops.hpp are: Real for references, double for estimates and tests.
//
// With S = Q K^T / sqrt d, P = softmax(S) by rows and O = P V, the gradients for the upstream dO:
//   dV = P^T dO,  dP = dO V^T,  dS = P * (dP - D) with D_i = sum_j P_ij dP_ij (the softmax
//   backward, ops::softmax_backward),  dQ = dS K / sqrt d,  dK = dS^T Q / sqrt d.
// D_i equals rowsum(dO_i * O_i), the form FlashAttention computes (Dao, FlashAttention-2, 2023,
// Algorithm 2); the reference takes sum_j P_ij dP_ij, which is exact where the other would round:
// with a single key P = 1 and dS = 0 exactly. Each division comes last (P = e / sum e with
// e = exp(S - max)), so that exact exponentials give exact dyadic results. dP - D cancels where one
// key dominates a row; the catalog evaluates the reference wider by that cancellation.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "reference/mp/ops.hpp"

namespace ampbench::reference::ops {

template <class T>
struct AttentionGradients {
  std::vector<T> dq;  // queries x d
  std::vector<T> dk;  // keys x d
  std::vector<T> dv;  // keys x value_dim
};

// Q is queries x d, K keys x d, V keys x value_dim, dO queries x value_dim. No mask, no dropout.
template <class T>
AttentionGradients<T> attention_backward(std::span<const T> q, std::span<const T> k,
                                         std::span<const T> v, std::span<const T> d_out,
                                         std::size_t queries, std::size_t keys, std::size_t d,
                                         std::size_t value_dim) {
  detail::require(q.size() == queries * d && k.size() == keys * d && v.size() == keys * value_dim &&
                      d_out.size() == queries * value_dim && keys > 0,
                  "attention_backward: Q, K, V or dO has the wrong size");
  AttentionGradients<T> g{std::vector<T>(queries * d), std::vector<T>(keys * d),
                          std::vector<T>(keys * value_dim)};
  if (keys == 1) {
    // A single key takes all the weight whatever its score: P = 1, dS = 0, and dV is the column
    // sums of dO. Computing no score or scale leaves those exact results marked exact (MPFR's
    // inexact flag, which the Ziv loop reads), so that they round directly, ties included.
    for (std::size_t i = 0; i < queries; ++i) {
      for (std::size_t t = 0; t < value_dim; ++t) g.dv[t] += d_out[i * value_dim + t];
    }
    return g;
  }
  const T scale = math::rsqrt(T(d));
  std::vector<T> scores(queries * keys);
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t j = 0; j < keys; ++j) {
      scores[i * keys + j] = dot(q.subspan(i * d, d), k.subspan(j * d, d)) * scale;
    }
  }
  // Per row, with e_j = exp(S_ij - max) and their sum E: P_ij = e_j / E, and
  // dS_ij = e_j (dP_ij - D_i) / E with D_i = sum_j e_j dP_ij / E (detail::weighted_mean): each
  // division last, as ops::softmax_backward takes them.
  std::vector<T> p(queries * keys);
  std::vector<T> ds(queries * keys);
  std::vector<T> dp(keys);
  for (std::size_t i = 0; i < queries; ++i) {
    const auto e = detail::shifted_exponentials(std::span<const T>(scores).subspan(i * keys, keys));
    const T total = 1 + e.rest;
    const auto do_i = d_out.subspan(i * value_dim, value_dim);
    for (std::size_t j = 0; j < keys; ++j) {
      dp[j] = dot(do_i, v.subspan(j * value_dim, value_dim));
      p[i * keys + j] = e.exponentials[j] / total;
    }
    const T row_sum = detail::weighted_mean(e, total, [&](std::size_t j) { return dp[j]; });
    for (std::size_t j = 0; j < keys; ++j) {
      ds[i * keys + j] = e.exponentials[j] * (dp[j] - row_sum) / total;
    }
  }
  for (std::size_t i = 0; i < queries; ++i) {
    for (std::size_t t = 0; t < d; ++t) {
      T total = 0;
      for (std::size_t j = 0; j < keys; ++j) total += ds[i * keys + j] * k[j * d + t];
      g.dq[i * d + t] = total * scale;
    }
  }
  for (std::size_t j = 0; j < keys; ++j) {
    for (std::size_t t = 0; t < d; ++t) {
      T total = 0;
      for (std::size_t i = 0; i < queries; ++i) total += ds[i * keys + j] * q[i * d + t];
      g.dk[j * d + t] = total * scale;
    }
    for (std::size_t t = 0; t < value_dim; ++t) {
      T total = 0;
      for (std::size_t i = 0; i < queries; ++i) {
        total += p[i * keys + j] * d_out[i * value_dim + t];
      }
      g.dv[j * value_dim + t] = total;
    }
  }
  return g;
}

}  // namespace ampbench::reference::ops
