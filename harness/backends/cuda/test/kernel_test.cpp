// The CUDA backend on the device, judged as the CPU backend is (audit::run_kernel_case): each GEMM
// op, the cast and the op kernels under every built-in policy they can run, within the budgets
// (suites/budgets.toml) and the a-priori bound; each compute type against what it promises.
// Every test skips with the reason where there is no device.
#include "harness/backends/cuda/kernel.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/audit/budgets.hpp"
#include "harness/numeric/mma.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

class CudaBackendTest : public kernels::test::GpuTest {
 protected:
  static const std::vector<audit::Budget>& budgets() {
    static const std::vector<audit::Budget> loaded = audit::load_budgets(AMPBENCH_BUDGETS);
    return loaded;
  }

  // The result of a case at the op's default shape (the one the budgets were measured at), and
  // what ran.
  struct Run {
    audit::CaseResult result;
    nlohmann::json detail;
  };
  // The case of an op under a built-in policy, at its default shape unless one is given.
  static audit::Case case_of(const char* op_name, const char* policy_name,
                             const char* shape = nullptr) {
    const ops::OpInfo& op = *ops::find_op(op_name);
    audit::Case c;
    c.op = &op;
    c.shape = ops::parse_shape(op, shape != nullptr ? shape : op.default_shape);
    c.policy = *policy::find_builtin(policy_name);
    return c;
  }
  // The Hopper model's tests below run on sm_90 alone.
  static std::optional<std::string> why_not_hopper() {
    if (device().compute_major == 9) return std::nullopt;
    return "the hopper-tf32 model is checked on Hopper (sm_90) only, not sm_" +
           std::to_string(device().compute_major) + std::to_string(device().compute_minor);
  }
  static Run run(const char* op_name, const char* policy_name,
                 std::optional<GemmCompute> compute = std::nullopt, const char* shape = nullptr) {
    const audit::Case c = case_of(op_name, policy_name, shape);
    const ops::OpInfo& op = *c.op;
    const Planning planning = plan(op, audit::precision_of(c.policy, op), compute);
    if (!planning.plan) throw std::invalid_argument(planning.reason);
    Run r;
    const audit::Kernel kernel = make_kernel(op, c.shape, *planning.plan, &r.detail);
    r.result = audit::run_kernel_case(c, kernel, "cuda", budgets());
    return r;
  }
};

TEST_F(CudaBackendTest, EveryRunnableCaseOfTheBuiltInPoliciesIsWithinTheCpuBudgets) {
  for (const char* op : {"gemm", "bmm", "dot", "gemm_backward_a", "gemm_backward_b", "cast"}) {
    for (const char* policy_name : {"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16"}) {
      const ops::OpInfo& info = *ops::find_op(op);
      const policy::Policy& p = *policy::find_builtin(policy_name);
      if (!plan(info, audit::precision_of(p, info)).plan) continue;  // bf16 accumulation
      const Run r = run(op, policy_name);
      EXPECT_EQ(r.result.backend, "cuda");
      EXPECT_TRUE(r.result.pass()) << op << " " << policy_name << ": "
                                   << audit::to_json(r.result).dump() << " ran " << r.detail.dump();
      if (r.result.summary.bound_ratio) {
        EXPECT_LE(*r.result.summary.bound_ratio, 1.0) << op << " " << policy_name;
      }
    }
  }
}

// ---- the backend's own op kernels --------------------------------------------------------------

// Every op kernel under every built-in policy, judged as the CPU backend is: the budgets measured
// on the CPU (whose pure fp16 and bf16 runs emulate fp16 and bf16 arithmetic: binary32 inside can
// only be more accurate) and the a-priori bound where the op has one.
TEST_F(CudaBackendTest, EveryOpKernelCaseOfTheBuiltInPoliciesIsWithinTheCpuBudgets) {
  std::size_t cases = 0;
  for (const ops::OpInfo& info : ops::catalog()) {
    const std::string op(info.name);
    for (const char* policy_name : {"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16"}) {
      const Planning planned =
          plan(info, audit::precision_of(*policy::find_builtin(policy_name), info));
      if (!planned.plan || planned.plan->kind != Plan::Kind::op_kernel) continue;
      ++cases;
      const Run r = run(op.c_str(), policy_name);
      EXPECT_TRUE(r.result.pass()) << op << " " << policy_name << ": "
                                   << audit::to_json(r.result).dump() << " ran " << r.detail.dump();
      if (r.result.summary.bound_ratio) {
        EXPECT_LE(*r.result.summary.bound_ratio, 1.0) << op << " " << policy_name;
      }
    }
  }
  EXPECT_EQ(cases, 33u * 6u);  // every op kernel (plan_test's kOpKernelOps) under every policy
}

// Attention and its gradients run by the trainer's CudaOps, judged as the CPU backend is: every
// built-in policy the device runs attention under, within the CPU's budgets; the record names
// what ran.
TEST_F(CudaBackendTest, AttentionAsTheTrainerRunsItIsWithinTheCpuBudgets) {
  std::size_t cases = 0;
  for (const char* op :
       {"attention", "attention_backward_q", "attention_backward_k", "attention_backward_v"}) {
    for (const char* policy_name : {"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16"}) {
      const ops::OpInfo& info = *ops::find_op(op);
      if (!plan(info, audit::precision_of(*policy::find_builtin(policy_name), info)).plan) {
        continue;  // pure bf16: bf16 accumulation
      }
      ++cases;
      const Run r = run(op, policy_name);
      EXPECT_TRUE(r.result.pass()) << op << " " << policy_name << ": "
                                   << audit::to_json(r.result).dump() << " ran " << r.detail.dump();
      EXPECT_EQ(r.detail["ran"].get<std::string>().rfind("backends::cuda::CudaOps::attention", 0),
                0u)
          << r.detail.dump();
    }
  }
  EXPECT_EQ(cases, 4u * 5u);
}

TEST_F(CudaBackendTest, OpKernelRecordsSayWhatRanInWhichTypeAndArithmetic) {
  const Run amp = run("gelu", "amp-bf16");
  EXPECT_EQ(amp.detail["kernel"], "ampbench::kernels::bias_activation");
  EXPECT_EQ(amp.detail["element_type"], "bf16");
  EXPECT_EQ(amp.detail["arithmetic"], "binary32");
  const Run pure = run("layer_norm_backward", "fp16");
  EXPECT_EQ(pure.detail["element_type"], "fp16");
  EXPECT_EQ(pure.detail["arithmetic"].get<std::string>().rfind("binary32 internally", 0), 0u);
  EXPECT_EQ(run("softmax", "amp-fp16").detail["element_type"], "fp32");
}

// In binary32 the element-wise ops round once, as the CPU backend does: every output of add, mul
// and fma is correctly rounded, and relu's too (it is exact).
TEST_F(CudaBackendTest, OneRoundingOpsAreCorrectlyRoundedInFp32) {
  for (const char* op : {"add", "mul", "fma", "relu", "relu_backward"}) {
    const Run r = run(op, "fp32");
    EXPECT_EQ(*r.result.summary.fraction_correctly_rounded, 1.0) << op;
  }
}

// Shapes at the kernels' edges: rows longer than a block and not a multiple of it, more rows than
// the grid's blocks, reductions over many elements; judged against a sampled reference. amp-bf16
// runs these ops in fp32: the well-conditioned ones (no cancellation in their sums) come within
// 1e-5 normwise of it; the sums of normal values cancel, and are held to their a-priori bound.
TEST_F(CudaBackendTest, OpKernelsHoldAtLargerShapes) {
  const struct {
    const char* op;
    const char* shape;
    bool well_conditioned;
  } rows[] = {{"softmax", "3x70001", true},
              {"layer_norm", "70000x3", true},
              {"cross_entropy", "300x5003", true},
              {"rms_norm", "16x12289", true},
              {"layer_norm_backward_beta", "4097x33", false},
              {"sum", "3000001", false}};
  for (const auto& row : rows) {
    const ops::OpInfo& op = *ops::find_op(row.op);
    audit::Case c;
    c.op = &op;
    c.shape = ops::parse_shape(op, row.shape);
    c.policy = *policy::find_builtin("amp-bf16");
    c.samples = 300;
    const Planning planning = plan(op, audit::precision_of(c.policy, op));
    ASSERT_TRUE(planning.plan.has_value()) << planning.reason;
    const audit::CaseResult r =
        audit::run_kernel_case(c, make_kernel(op, c.shape, *planning.plan, nullptr), "cuda", {});
    EXPECT_TRUE(r.pass()) << row.op << " " << row.shape << ": " << audit::to_json(r).dump();
    if (row.well_conditioned) {
      EXPECT_LT(*r.summary.normwise_rel_error, 1e-5) << row.op << " " << row.shape;
    } else {
      ASSERT_TRUE(r.summary.bound_ratio.has_value()) << row.op;
      EXPECT_LE(*r.summary.bound_ratio, 1.0) << row.op << " " << row.shape;
    }
  }
}

TEST_F(CudaBackendTest, TheCastIsCorrectlyRoundedEverywhere) {
  for (const char* policy_name : {"tf32", "fp16", "bf16"}) {
    const Run r = run("cast", policy_name);
    EXPECT_EQ(*r.result.summary.fraction_correctly_rounded, 1.0) << policy_name;
    EXPECT_EQ(r.detail["kernel"], "ampbench::kernels::round_kernel");
  }
}

TEST_F(CudaBackendTest, PedanticFp32GemmStaysWithinTheFp32Bound) {
  for (const char* op : {"gemm", "bmm", "gemm_backward_b"}) {
    const Run r = run(op, "fp32", GemmCompute::f32_pedantic);
    ASSERT_TRUE(r.result.summary.bound_ratio.has_value());
    EXPECT_LE(*r.result.summary.bound_ratio, 1.0) << op;
    EXPECT_EQ(r.detail["compute_type"], "CUBLAS_COMPUTE_32F_PEDANTIC");
  }
}

// cuBLASLt's TF32 GEMMs (32F_FAST_TF32, as PyTorch's allow_tf32 calls them) are the hopper-tf32
// Tensor Core model (docs/mma-models.md) on the budgets' operands: where cuBLASLt's algorithm does
// not split K, every output is the model's binary32, bit for bit. Their error is the model's,
// larger than the CPU's fp32 accumulation, whose budgets they therefore do not meet (the cuda
// budgets in suites/budgets.toml). A split-K algorithm adds partial sums the model does not
// chain (gemm_backward_b's on an H200: 4 ways): how many outputs differ is printed as a finding.
// Other architectures: not checked, skipped with the reason.
TEST_F(CudaBackendTest, Tf32GemmsWithoutSplitKOnHopperAreTheHopperTensorCoreModelBitForBit) {
  if (const auto why = why_not_hopper()) GTEST_SKIP() << *why;
  const numeric::MmaModel model = *numeric::mma_model_named("hopper-tf32");
  std::size_t compared = 0;
  for (const char* op_name : {"gemm", "bmm", "gemm_backward_a", "gemm_backward_b"}) {
    const audit::Case c = case_of(op_name, "tf32");
    const ops::OpInfo& op = *c.op;
    const policy::OpPrecision precision = audit::precision_of(c.policy, op);
    const audit::Generated operands = audit::generate_operands(c, precision);
    const Planning planning = plan(op, precision);
    ASSERT_TRUE(planning.plan.has_value()) << op_name << ": " << planning.reason;
    nlohmann::json ran;
    const std::vector<double> device_out =
        make_kernel(op, c.shape, *planning.plan, &ran)(operands.inputs);
    const std::vector<double> model_out =
        ops::run_cpu_mma(op, c.shape, model, precision.output, precision.mode, operands.inputs)
            .output;
    ASSERT_EQ(device_out.size(), model_out.size()) << op_name;
    std::size_t differ = 0, first = 0;
    for (std::size_t i = 0; i < device_out.size(); ++i) {
      if (std::bit_cast<std::uint64_t>(device_out[i]) !=
          std::bit_cast<std::uint64_t>(model_out[i])) {
        if (differ++ == 0) first = i;
      }
    }
    const std::string what = std::string(op_name) + ": " + std::to_string(differ) + " of " +
                             std::to_string(device_out.size()) +
                             " outputs differ from hopper-tf32's; ran " + ran.dump();
    if (ran["algorithm"]["split_k"] != 1) {
      std::cout << "finding (split K): " << what << "\n";
      continue;
    }
    ++compared;
    EXPECT_EQ(differ, 0u) << what << "; the first at " << first << " (" << device_out[first]
                          << " vs " << model_out[first] << ")";
  }
  EXPECT_GE(compared, 1u) << "every GEMM split K: nothing was compared";
}

// How cuBLASLt's FAST_TF32 converts fp32 operands that are no tf32 values (docs/policies.md): its
// outputs against the hopper-tf32 model fed the same fp32 values (the model truncates them, as
// MMA-Sim's Tensor Core does) and fed them rounded to tf32 to nearest, ties to even or away,
// first. On an H200 (cuBLAS 13.1) round-to-nearest-even matched every output, as the tf32 policy
// models the conversion; each count is printed.
TEST_F(CudaBackendTest, Tf32ConversionOfFp32OperandsRoundsToNearestEven) {
  if (const auto why = why_not_hopper()) GTEST_SKIP() << *why;
  const numeric::MmaModel model = *numeric::mma_model_named("hopper-tf32");
  const audit::Case c = case_of("gemm", "fp32");
  const ops::OpInfo& op = *c.op;
  const policy::OpPrecision precision = audit::precision_of(c.policy, op);
  const audit::Generated operands = audit::generate_operands(c, precision);
  const Planning planning = plan(op, precision, GemmCompute::f32_fast_tf32);
  ASSERT_TRUE(planning.plan.has_value()) << planning.reason;
  nlohmann::json ran;
  const std::vector<double> device_out =
      make_kernel(op, c.shape, *planning.plan, &ran)(operands.inputs);
  const auto differing = [&](std::optional<numeric::Rounding> conversion) {
    ops::Inputs inputs = operands.inputs;
    if (conversion) {
      for (std::vector<double>& values : inputs.values) {
        for (double& x : values)
          x = numeric::round_to(numeric::formats::tf32, *conversion, x).value;
      }
    }
    const std::vector<double> model_out =
        ops::run_cpu_mma(op, c.shape, model, precision.output, precision.mode, inputs).output;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < device_out.size(); ++i) {
      differ += std::bit_cast<std::uint64_t>(device_out[i]) !=
                std::bit_cast<std::uint64_t>(model_out.at(i));
    }
    return differ;
  };
  const std::size_t truncated = differing(std::nullopt);
  const std::size_t nearest_even = differing(numeric::Rounding::nearest_even);
  const std::size_t nearest_away = differing(numeric::Rounding::nearest_away);
  std::cout << "finding: cuBLASLt 32F_FAST_TF32 on fp32 operands, outputs of " << device_out.size()
            << " that differ from hopper-tf32 with the inputs truncated: " << truncated
            << ", rounded to nearest even: " << nearest_even
            << ", rounded to nearest away: " << nearest_away << "; ran " << ran.dump() << "\n";
  EXPECT_EQ(nearest_even, 0u) << "the tf32 policy's conversion (round to nearest even) is not "
                                 "what cuBLASLt did";
}

TEST_F(CudaBackendTest, EachCompute32FTypeRunsAndReportsItsAlgorithm) {
  for (const GemmCompute c :
       {GemmCompute::f32, GemmCompute::f32_pedantic, GemmCompute::f32_fast_tf32,
        GemmCompute::f32_fast_16f, GemmCompute::f32_fast_16bf}) {
    const Run r = run("gemm", "fp32", c);
    EXPECT_EQ(r.detail["compute_type"], "CUBLAS_COMPUTE_" + std::string(compute_name(c)));
    EXPECT_TRUE(r.detail["algorithm"].contains("id")) << r.detail.dump();
    EXPECT_TRUE(r.result.summary.normwise_rel_error.has_value());
  }
}

// The FAST types only allow cuBLAS to down-convert fp32 inputs (to tf32, or to fp16 / bf16 or
// tf32: cublas_api.h), so which conversion ran is a finding, printed here, not an assumption. What
// holds whichever ran: the error is at most that of rounding the inputs to the narrowest allowed
// format (normal inputs, k = 256: about u_in, far below these limits), and fp32 without
// conversion is far more accurate still.
TEST_F(CudaBackendTest, FastComputeTypesStayWithinTheErrorOfTheirDownConversion) {
  const struct {
    GemmCompute compute;
    double limit;  // a few times the unit roundoff of the narrowest format allowed
  } rows[] = {{GemmCompute::f32_pedantic, 1e-6},
              {GemmCompute::f32_fast_tf32, 4 * 0x1p-11},
              {GemmCompute::f32_fast_16f, 4 * 0x1p-11},
              {GemmCompute::f32_fast_16bf, 4 * 0x1p-8}};
  for (const auto& row : rows) {
    const Run r = run("gemm", "fp32", row.compute);
    const double normwise = *r.result.summary.normwise_rel_error;
    std::cout << compute_name(row.compute) << ": normwise " << normwise << ", max_ulp "
              << *r.result.summary.max_ulp << ", ran " << r.detail["algorithm"].dump() << '\n';
    EXPECT_LT(normwise, row.limit) << compute_name(row.compute);
  }
}

TEST_F(CudaBackendTest, Fp16AccumulationIsMeasurablyWorseThanFp32) {
  const Run accumulate16 = run("gemm", "fp16", GemmCompute::f16);
  const Run accumulate32 = run("gemm", "fp16", GemmCompute::f32);
  EXPECT_EQ(accumulate16.detail["compute_type"], "CUBLAS_COMPUTE_16F");
  EXPECT_EQ(accumulate32.detail["a_b_type"], "CUDA_R_16F");
  EXPECT_GT(*accumulate16.result.summary.mean_ulp, 2 * *accumulate32.result.summary.mean_ulp);
  // One rounding of an fp32 sum to fp16: almost always correctly rounded.
  EXPECT_GT(*accumulate32.result.summary.fraction_correctly_rounded, 0.9);
}

TEST_F(CudaBackendTest, ASampledReferenceJudgesTheFullDeviceOutput) {
  const ops::OpInfo& op = *ops::find_op("gemm");
  audit::Case c;
  c.op = &op;
  c.shape = ops::parse_shape(op, "512x512x512");
  c.policy = *policy::find_builtin("amp-bf16");
  c.samples = 200;
  const Planning planning = plan(op, audit::precision_of(c.policy, op));
  const audit::CaseResult r =
      audit::run_kernel_case(c, make_kernel(op, c.shape, *planning.plan, nullptr), "cuda", {});
  EXPECT_EQ(r.references, 200u);
  EXPECT_EQ(r.outputs, 512u * 512u);
  EXPECT_TRUE(r.pass());
}

}  // namespace
}  // namespace ampbench::backends::cuda
