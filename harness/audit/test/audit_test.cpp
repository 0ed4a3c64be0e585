// Audit cases end to end on the CPU backend: AMP semantics as PyTorch's autocast defines them, the
// a-priori bounds under fp32, and bit-reproducible seeded cases.
#include "harness/audit/audit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "harness/inputs/distributions.hpp"
#include "harness/inputs/tensor_file.hpp"

namespace ampbench::audit {
namespace {

Case make(const char* op, const char* shape, const char* policy_name, std::uint64_t seed = 1) {
  const ops::OpInfo* info = ops::find_op(op);
  Case c;
  c.op = info;
  c.shape = ops::parse_shape(*info, shape);
  c.policy = *policy::find_builtin(policy_name);
  c.seed = seed;
  return c;
}

TEST(AmpSemantics, SoftmaxRunsInFp32AndIsFarMoreAccurateThanUnderFp16) {
  const CaseResult amp = run_case(make("softmax", "16x512", "amp-fp16"), {});
  const CaseResult pure = run_case(make("softmax", "16x512", "fp16"), {});
  EXPECT_STREQ(amp.precision.compute.name, "fp32");
  EXPECT_STREQ(amp.precision.output.name, "fp32");  // an fp32-listed op returns fp32
  EXPECT_STREQ(pure.precision.output.name, "fp16");
  EXPECT_LT(*amp.summary.normwise_rel_error * 1000, *pure.summary.normwise_rel_error);
}

TEST(AmpSemantics, MatmulInputsAreRoundedToFp16AndAccumulatedInFp32) {
  const CaseResult amp = run_case(make("gemm", "16x16x256", "amp-fp16"), {});
  EXPECT_STREQ(amp.precision.input.name, "fp16");
  EXPECT_STREQ(amp.precision.accumulate.name, "fp32");
  EXPECT_STREQ(amp.precision.output.name, "fp16");
  // Normal samples have more bits than fp16: rounding them changed almost every one.
  ASSERT_EQ(amp.operands.size(), 2u);
  EXPECT_GT(amp.operands[0].changed, 16u * 256u * 9 / 10);
  // One rounding of an fp32 sum: nearly every output correctly rounded.
  EXPECT_GT(*amp.summary.fraction_correctly_rounded, 0.95);
  const CaseResult layer_norm = run_case(make("layer_norm", "8x256", "amp-bf16"), {});
  EXPECT_STREQ(layer_norm.precision.output.name, "fp32");
}

TEST(AmpSemantics, OperandsAreConvertedWithThePolicysInputMode) {
  // tf32 with input_mode = "rz" (a Tensor Core fed raw fp32 registers): every operand is the
  // distribution's sample truncated, not rounded to nearest.
  const Case c = make("gemm", "8x8x64", "tf32");
  policy::OpPrecision truncating = precision_of(c.policy, *c.op);
  truncating.input_mode = numeric::Rounding::toward_zero;
  const Generated nearest = generate_operands(c, precision_of(c.policy, *c.op));
  const Generated truncated = generate_operands(c, truncating);
  const auto operands = ops::operands(*c.op, c.shape);
  for (std::size_t k = 0; k < 2; ++k) {
    const std::uint64_t seed = inputs::operand_seed(c.seed, k);
    EXPECT_EQ(truncated.inputs.values[k],
              inputs::generate("normal", operands[k].shape, numeric::formats::tf32, seed,
                               numeric::Rounding::toward_zero)
                  .tensor.data);
    EXPECT_NE(truncated.inputs.values[k], nearest.inputs.values[k]);
  }
}

// Under tf32 linear's x and W are rounded to tf32, its bias is not: addmm's epilogue adds it in
// the output's type (fp32). The other operands of every op keep to the input format.
TEST(AmpSemantics, LinearsBiasIsHeldInTheOutputFormat) {
  const Case c = make("linear", "4x64x8", "tf32");
  const policy::OpPrecision precision = precision_of(c.policy, *c.op);
  ASSERT_TRUE(numeric::same_format(precision.input, numeric::formats::tf32));
  const Generated g = generate_operands(c, precision);
  const auto in_tf32 = [](const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) {
      return numeric::round_to(numeric::formats::tf32, numeric::Rounding::nearest_even, v).event ==
             numeric::RoundingEvent::exact;
    });
  };
  EXPECT_TRUE(in_tf32(g.inputs.values[0]));
  EXPECT_TRUE(in_tf32(g.inputs.values[1]));
  EXPECT_FALSE(in_tf32(g.inputs.values[2]));
  EXPECT_EQ(g.inputs.values[2],
            inputs::generate("normal", std::vector<std::size_t>{64}, numeric::formats::fp32,
                             inputs::operand_seed(c.seed, 2), numeric::Rounding::nearest_even)
                .tensor.data);
}

// The training ops the catalog audits run under every built-in policy within their references'
// verdict (no budget breached, every output compared).
TEST(AmpSemantics, TrainingOpsPassUnderEveryBuiltinPolicy) {
  for (const char* op :
       {"linear", "linear_backward_bias", "mean_pool", "mean_pool_backward", "batch_norm_backward",
        "batch_norm_backward_gamma", "batch_norm_backward_beta"}) {
    for (const policy::Policy& p : policy::builtin_policies()) {
      Case c = make(op, ops::find_op(op)->shape_syntax == "MxNxK" ? "16x12x40" : "24x10", "fp32");
      c.policy = p;
      const CaseResult r = run_case(c, {});
      EXPECT_TRUE(r.pass()) << op << " " << p.name;
      EXPECT_EQ(r.summary.compared, r.outputs) << op << " " << p.name;
      if (r.summary.bound_ratio) {
        EXPECT_LE(*r.summary.bound_ratio, 1.0) << op << " " << p.name;
      }
    }
  }
}

// eval's operands (read_operands) under a stochastic input mode: each operand rounds with draws
// of its own stream, so two operands holding the same values do not round alike element for
// element (one shared stream would make a == b after rounding, whatever the values).
TEST(AmpSemantics, StochasticInputModeGivesEachReadOperandItsOwnStream) {
  policy::Policy p = *policy::find_builtin("bf16");
  policy::OpPrecision precision = precision_of(p, *ops::find_op("add"));
  precision.input_mode = numeric::Rounding::stochastic_proportional;
  // 1 + k 2^-12 for odd k < 256: never a bf16 value (7 fraction bits), so every element rounds
  // with a draw.
  std::vector<double> values;
  for (int k = 1; k < 256; k += 2) values.push_back(1.0 + k * 0x1p-12);
  const auto read = [&](const inputs::Conversion& conversion) {
    std::map<std::string, inputs::Loaded> tensors;
    for (const char* name : {"x", "y"}) {
      tensors.emplace(name, inputs::convert({1, values.size()}, values, conversion, name));
    }
    return tensors;
  };
  const OperandSet set = read_operands(*ops::find_op("add"), precision, read);
  ASSERT_EQ(set.inputs.values.size(), 2u);
  const auto& x = set.inputs.values[0];
  const auto& y = set.inputs.values[1];
  ASSERT_EQ(x.size(), values.size());
  std::size_t different = 0;
  for (std::size_t i = 0; i < x.size(); ++i) different += x[i] != y[i] ? 1 : 0;
  EXPECT_GT(different, 10u);  // about half of the 128 elements round the other way
  EXPECT_EQ(set.rounded, 2 * values.size());
  // The streams are operand_seed(0, k)'s conversion streams: operand 0 is reproducible alone.
  const inputs::Conversion first(numeric::formats::bf16, numeric::Rounding::stochastic_proportional,
                                 inputs::conversion_stream(inputs::operand_seed(0, 0)));
  EXPECT_EQ(x, inputs::convert({1, values.size()}, values, first, "x").tensor.data);
}

TEST(Bounds, Fp32ResultsOfOpsWithABoundStayWithinIt) {
  for (const char* op : {"gemm", "dot", "sum", "mean"}) {
    const bool matrix = std::string_view(op) == "gemm";
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      const CaseResult r = run_case(make(op, matrix ? "32x32x512" : "20000", "fp32", seed), {});
      ASSERT_TRUE(r.summary.bound_ratio.has_value()) << op;
      EXPECT_LE(*r.summary.bound_ratio, 1.0) << op << " seed " << seed;
      EXPECT_TRUE(r.pass()) << op;
    }
  }
}

TEST(Reproducibility, SeededCasesGiveIdenticalRecords) {
  for (const char* op : {"gemm", "softmax", "cross_entropy"}) {
    const ops::OpInfo* info = ops::find_op(op);
    const char* shape = std::string_view(op) == "gemm" ? "8x8x64" : "8x64";
    const auto first = to_json(run_case(make(op, shape, "bf16", 9), {}));
    const auto second = to_json(run_case(make(op, shape, "bf16", 9), {}));
    const auto other = to_json(run_case(make(op, shape, "bf16", 10), {}));
    EXPECT_EQ(first.dump(), second.dump()) << info->name;
    EXPECT_NE(first["inputs"].dump(), other["inputs"].dump()) << info->name;
  }
}

TEST(Samples, ASampledCaseUsesThatManyReferencePositions) {
  Case c = make("gemm", "64x64x64", "fp16");
  c.samples = 100;
  const CaseResult r = run_case(c, {});
  EXPECT_EQ(r.references, 100u);
  EXPECT_EQ(r.outputs, 64u * 64u);
  EXPECT_EQ(r.summary.count, 100u);
}

}  // namespace
}  // namespace ampbench::audit

namespace ampbench::audit {
namespace {

// A kernel from outside (here the CPU backend itself, called as a user's kernel would be): judged
// exactly as run_case judges the backend, whether the reference is full or sampled.
TEST(KernelCases, TheBackendAsAKernelGetsTheBackendsVerdict) {
  for (const std::size_t samples : {std::size_t{0}, std::size_t{40}}) {
    Case c = make("gemm", "16x16x256", "fp32", 4);
    c.samples = samples;
    const CaseResult backend = run_case(c, {});
    const auto kernel = [&](const ops::Inputs& inputs) {
      return ops::run_cpu(*c.op, c.shape, arithmetic_of(precision_of(c.policy, *c.op)),
                          backends::cpu::Summation::sequential, inputs)
          .output;
    };
    const CaseResult judged = run_kernel_case(c, kernel, "mine", {});
    EXPECT_EQ(judged.backend, "mine");
    EXPECT_EQ(judged.references, backend.references);
    EXPECT_EQ(judged.summary.max_ulp, backend.summary.max_ulp);
    EXPECT_EQ(judged.summary.normwise_rel_error, backend.summary.normwise_rel_error);
    EXPECT_EQ(judged.summary.bound_ratio, backend.summary.bound_ratio);
    EXPECT_TRUE(judged.pass());
  }
}

// A kernel that accumulates in fp16 where the policy says fp32 breaks the policy's bound.
TEST(KernelCases, AKernelBelowThePolicysPrecisionBreaksTheBound) {
  const Case c = make("gemm", "8x8x1024", "fp32", 2);
  const auto fp16_accumulation = [&](const ops::Inputs& inputs) {
    backends::cpu::Arithmetic arithmetic = arithmetic_of(precision_of(c.policy, *c.op));
    arithmetic.accumulate = numeric::formats::fp16;
    return ops::run_cpu(*c.op, c.shape, arithmetic, backends::cpu::Summation::sequential, inputs)
        .output;
  };
  const CaseResult r = run_kernel_case(c, fp16_accumulation, "fp16-accumulating", {});
  ASSERT_TRUE(r.summary.bound_ratio.has_value());
  EXPECT_GT(*r.summary.bound_ratio, 1.0);
  EXPECT_FALSE(r.pass());
}

TEST(KernelCases, AnOutputOfTheWrongLengthIsRefused) {
  const Case c = make("softmax", "4x8", "fp32");
  const auto short_output = [](const ops::Inputs&) { return std::vector<double>(31, 0.0); };
  try {
    run_kernel_case(c, short_output, "mine", {});
    ADD_FAILURE() << "accepted 31 outputs for 32";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "softmax 4x8 (mine): the kernel gave 31 output values, the op has 32");
  }
}

}  // namespace
}  // namespace ampbench::audit
