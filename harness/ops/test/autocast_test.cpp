// Autocast's type flow (autocast.hpp): for every op of the catalog under every built-in policy,
// each operand's conversion follows from its HeldIn and the op's resolved precision, written here
// as the rules PyTorch's autocast and the cuBLASLt epilogue follow, case by case.
#include "harness/ops/autocast.hpp"

#include <gtest/gtest.h>

#include <initializer_list>

namespace ampbench::ops {
namespace {

namespace formats = numeric::formats;

const OpInfo& op(std::string_view name) {
  return *find_op(name);
}

// The precision the audit gives an op: the policy's entry for the op's precision op, resolved for
// inputs in `input` (as the trainer meets them).
policy::OpPrecision precision(const policy::Policy& p, std::string_view name,
                              const numeric::Format& input) {
  const policy::Op policy_op = *policy::op_from_name(op(name).precision_op());
  return policy::resolve(p.precision(policy_op), std::initializer_list<numeric::Format>{input});
}

TEST(Autocast, EveryOperandFollowsItsHeldInUnderEveryBuiltinPolicy) {
  for (const policy::Policy& p : policy::builtin_policies()) {
    for (const OpInfo& info : catalog()) {
      const policy::OpPrecision q = precision(p, info.name, formats::fp16);
      const Autocast flow(info, q);
      const auto roles = operand_roles(info);
      for (std::size_t k = 0; k < roles.size(); ++k) {
        const Conversion& c = flow.operand(k);
        const std::string where =
            std::string(p.name) + " " + std::string(info.name) + " " + roles[k].name;
        EXPECT_EQ(c.mode, q.input_mode) << where;
        switch (roles[k].held_in) {
          case HeldIn::input: EXPECT_TRUE(numeric::same_format(c.format, q.input)) << where; break;
          case HeldIn::output:
            EXPECT_TRUE(numeric::same_format(c.format, q.output)) << where;
            break;
          case HeldIn::accumulation:
            EXPECT_TRUE(numeric::same_format(c.format, q.accumulate)) << where;
            break;
          case HeldIn::input_or_own:
            EXPECT_EQ(c.kept, q.promote) << where;
            EXPECT_TRUE(numeric::same_format(c.format, q.promote ? formats::fp32 : q.input))
                << where;
            break;
        }
        if (roles[k].held_in != HeldIn::input_or_own) {
          EXPECT_FALSE(c.kept) << where;
        }
      }
      EXPECT_TRUE(numeric::same_format(flow.result(), q.output));
      const Conversion back = flow.gradient(formats::bf16);
      EXPECT_TRUE(numeric::same_format(back.format, formats::bf16));
      EXPECT_EQ(back.mode, q.mode);
    }
  }
}

// The cases users ask about, spelled out.
TEST(Autocast, LinearsBiasIsInTheOutputTypeAndBatchNormKeepsItsFp32WeightUnderAutocast) {
  const policy::Policy& tf32 = *policy::find_builtin("tf32");
  const Autocast linear(op("linear"), precision(tf32, "linear", formats::fp32));
  EXPECT_TRUE(numeric::same_format(linear.operand(0).format, formats::tf32));  // x
  EXPECT_TRUE(numeric::same_format(linear.operand(2).format, formats::fp32));  // bias: not tf32
  const Autocast bias_grad(op("linear_backward_bias"),
                           precision(tf32, "linear_backward_bias", formats::fp32));
  EXPECT_TRUE(numeric::same_format(bias_grad.operand(0).format, formats::fp32));  // dy

  // amp-fp16: batch norm after an fp16 convolution keeps gamma and beta in fp32 (a promote
  // entry); half-model (model.half()) holds them in fp16 with everything else.
  const Autocast amp(op("batch_norm"),
                     precision(*policy::find_builtin("amp-fp16"), "batch_norm", formats::fp16));
  EXPECT_TRUE(numeric::same_format(amp.operand(0).format, formats::fp16));
  EXPECT_TRUE(amp.operand(1).kept);
  EXPECT_TRUE(amp.operand(2).kept);
  const Autocast half(op("batch_norm"),
                      precision(*policy::find_builtin("half-model"), "batch_norm", formats::fp16));
  EXPECT_FALSE(half.operand(1).kept);
  EXPECT_TRUE(numeric::same_format(half.operand(1).format, formats::fp16));

  // gemm's C in the accumulation format: fp32 under amp-fp16.
  const Autocast gemm(op("gemm"),
                      precision(*policy::find_builtin("amp-fp16"), "gemm", formats::fp32));
  EXPECT_TRUE(numeric::same_format(gemm.operand(0).format, formats::fp16));
  EXPECT_TRUE(numeric::same_format(gemm.operand(2).format, formats::fp32));
}

}  // namespace
}  // namespace ampbench::ops
