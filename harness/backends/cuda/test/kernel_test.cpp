// The CUDA backend on the device, judged as the CPU backend is (audit::run_kernel_case): each GEMM
// op, the cast and the op kernels under every built-in policy they can run, within the budgets
// (suites/budgets.toml) and the a-priori bound; each compute type against what it promises.
// Every test skips with the reason where there is no device.
#include "harness/backends/cuda/kernel.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/audit/budgets.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

class CudaBackendTest : public kernels::test::GpuTest {
 protected:
  static const std::vector<audit::Budget>& budgets() {
    static const std::vector<audit::Budget> loaded = audit::load_budgets(AMPBENCH_BUDGETS);
    return loaded;
  }

  // The case at the op's default shape (the one the budgets were measured at), its plan and what
  // ran.
  struct Run {
    audit::CaseResult result;
    nlohmann::json detail;
  };
  static Run run(const char* op_name, const char* policy_name,
                 std::optional<GemmCompute> compute = std::nullopt, const char* shape = nullptr) {
    const ops::OpInfo& op = *ops::find_op(op_name);
    audit::Case c;
    c.op = &op;
    c.shape = ops::parse_shape(op, shape != nullptr ? shape : op.default_shape);
    c.policy = *policy::find_builtin(policy_name);
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
  EXPECT_EQ(cases, 26u * 6u);  // every op kernel (plan_test lists them) under every policy
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
