// The trainer's CPU ops and the catalog ops that audit them compute the same values, bit for bit,
// under every built-in policy: what `ampbench audit` judges for linear, its gradients, mean_pool,
// batch_norm's backward and their gradients is what `ampbench train` runs. Operands are given
// in the formats autocast holds them in (the catalog's HeldIn), so the trainer's casts are exact.
#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/ops/autocast.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"
#include "harness/train/ops.hpp"

namespace ampbench::train {
namespace {

// Normal values rounded to `f`, from `seed`.
EmulatedTensor values_in(const numeric::Format& f, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.5);
  EmulatedTensor t{{}, f};
  for (std::size_t i = 0; i < n; ++i) {
    t.values.push_back(numeric::round_to(f, numeric::Rounding::nearest_even, normal(rng)).value);
  }
  return t;
}

// The catalog op `name` on `inputs` under the policy's precision for it, as the audit runs it.
std::vector<double> catalog_run(const char* name, const char* shape, const policy::Policy& p,
                                const std::vector<const EmulatedTensor*>& inputs) {
  const ops::OpInfo& op = *ops::find_op(name);
  ops::Inputs in;
  for (const EmulatedTensor* t : inputs) {
    in.values.push_back(t->values);
    in.indices.emplace_back();
  }
  return ops::run_cpu(op, ops::parse_shape(op, shape),
                      audit::arithmetic_of(audit::precision_of(p, op)),
                      backends::cpu::Summation::sequential, in)
      .output;
}

policy::OpPrecision precision(const policy::Policy& p, const char* op) {
  return audit::precision_of(p, *ops::find_op(op));
}

TEST(CatalogOps, LinearAndItsGradientsAreTheTrainersOps) {
  constexpr std::size_t kRows = 7, kIn = 9, kOut = 5;
  for (const policy::Policy& p : policy::builtin_policies()) {
    SCOPED_TRACE(p.name);
    const policy::OpPrecision q = precision(p, "linear");
    const EmulatedTensor x = values_in(q.input, kRows * kIn, 1);
    const EmulatedTensor w = values_in(q.input, kIn * kOut, 2);
    const EmulatedTensor bias = values_in(q.output, kOut, 3);
    const EmulatedTensor dy = values_in(q.output, kRows * kOut, 4);
    EmulatedOps ops(p);
    EXPECT_EQ(ops.linear(x, w, bias, kRows, kIn, kOut).values,
              catalog_run("linear", "7x5x9", p, {&x, &w, &bias}));
    // The bias gradient sums dy in the output's type; dx and dw are the gemm gradients of x W.
    const auto g = ops.linear_backward(x, w, bias, dy, kRows, kIn, kOut, true);
    EXPECT_EQ(g.db.values, catalog_run("linear_backward_bias", "7x5", p, {&dy}));
    if (numeric::same_format(q.input, q.output)) {
      EXPECT_EQ(g.dx.values, catalog_run("gemm_backward_a", "7x5x9", p, {&dy, &w}));
      EXPECT_EQ(g.dw.values, catalog_run("gemm_backward_b", "7x5x9", p, {&x, &dy}));
    }
  }
}

TEST(CatalogOps, MeanPoolAndItsGradientAreTheTrainersOps) {
  constexpr std::size_t kRows = 6, kCols = 37;
  for (const policy::Policy& p : policy::builtin_policies()) {
    SCOPED_TRACE(p.name);
    const policy::OpPrecision q = precision(p, "mean_pool");
    const EmulatedTensor x = values_in(q.input, kRows * kCols, 5);
    const EmulatedTensor dy = values_in(q.input, kRows, 6);
    EmulatedOps ops(p);
    EXPECT_EQ(ops.mean_pool(x, kRows, kCols).values, catalog_run("mean_pool", "6x37", p, {&x}));
    EXPECT_EQ(ops.mean_pool_backward(x, dy, kRows, kCols).values,
              catalog_run("mean_pool_backward", "6x37", p, {&x, &dy}));
  }
}

TEST(CatalogOps, BatchNormBackwardIsTheTrainersOp) {
  constexpr std::size_t kBatch = 12, kChannels = 5;
  for (const policy::Policy& p : policy::builtin_policies()) {
    SCOPED_TRACE(p.name);
    const policy::OpPrecision q = precision(p, "batch_norm_backward");
    const EmulatedTensor x = values_in(q.input, kBatch * kChannels, 7);
    const EmulatedTensor dy = values_in(q.input, kBatch * kChannels, 8);
    // gamma as autocast holds it: in the input format, or kept in fp32 under a promote entry (the
    // amp policies), where the trainer must not round it either.
    const numeric::Format held =
        ops::Autocast(*ops::find_op("batch_norm_backward"), q).operand(2).format;
    const EmulatedTensor gamma = values_in(held, kChannels, 9);
    const EmulatedTensor beta = values_in(held, kChannels, 10);
    EmulatedOps ops(p);
    // NCHW with one pixel: the trainer's channels-last relayout is the identity.
    const auto g = ops.batch_norm_backward(x, dy, gamma, beta, kBatch, kChannels, 1);
    EXPECT_EQ(g.dx.values, catalog_run("batch_norm_backward", "12x5", p, {&x, &dy, &gamma}));
    EXPECT_EQ(g.dgamma.values, catalog_run("batch_norm_backward_gamma", "12x5", p, {&x, &dy}));
    EXPECT_EQ(g.dbeta.values, catalog_run("batch_norm_backward_beta", "12x5", p, {&x, &dy}));
  }
}

}  // namespace
}  // namespace ampbench::train
