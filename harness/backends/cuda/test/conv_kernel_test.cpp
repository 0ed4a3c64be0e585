// The CUDA backend's cuDNN convolutions on the device, judged as the CPU backend is
// (audit::run_kernel_case): each pass under each built-in policy cuDNN can run, within the
// checked-in budgets (suites/budgets.toml) and the a-priori bound; FMA math against fp32's budgets
// and Tensor Core math against what TF32 conversion allows; descriptors of strided, padded,
// dilated, grouped geometries. Every test skips with the reason where there is no device.
#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "harness/audit/audit.hpp"
#include "harness/audit/budgets.hpp"
#include "harness/backends/cuda/conv_plan.hpp"
#include "harness/backends/cuda/kernel.hpp"
#include "kernels/test/gpu_test.hpp"

namespace ampbench::backends::cuda {
namespace {

using kernels::ConvolutionMath;

constexpr const char* kPasses[] = {"conv2d", "conv2d_backward_data", "conv2d_backward_filter"};

class CudnnConvolutionTest : public kernels::test::GpuTest {
 protected:
  struct Run {
    audit::CaseResult result;
    nlohmann::json detail;
  };

  // The case under `policy_name` at `shape` (the op's default, where the budgets were measured,
  // when null), judged against the budgets when `judged_by_budgets`.
  static Run run(const char* op_name, const char* policy_name,
                 std::optional<ConvolutionMath> math = std::nullopt, const char* shape = nullptr,
                 bool judged_by_budgets = true) {
    static const std::vector<audit::Budget> budgets = audit::load_budgets(AMPBENCH_BUDGETS);
    const ops::OpInfo& op = *ops::find_op(op_name);
    audit::Case c;
    c.op = &op;
    c.shape = ops::parse_shape(op, shape != nullptr ? shape : op.default_shape);
    c.policy = *policy::find_builtin(policy_name);
    const Planning planning = plan(op, audit::precision_of(c.policy, op), std::nullopt, math);
    if (!planning.plan) throw std::invalid_argument(planning.reason);
    Run r;
    const audit::Kernel kernel = make_kernel(op, c.shape, *planning.plan, &r.detail);
    r.result = audit::run_kernel_case(c, kernel, "cuda",
                                      judged_by_budgets ? budgets : std::vector<audit::Budget>{});
    return r;
  }
};

TEST_F(CudnnConvolutionTest, EachPassAndTypeIsWithinTheCpuBudgets) {
  const struct {
    const char* policy;
    const char* data_type;
    const char* compute_type;
    const char* requested_math;
  } rows[] = {
      {"fp32", "CUDNN_DATA_FLOAT", "CUDNN_DATA_FLOAT", "CUDNN_FMA_MATH"},
      {"tf32", "CUDNN_DATA_FLOAT", "CUDNN_DATA_FLOAT", "CUDNN_DEFAULT_MATH"},
      {"fp16", "CUDNN_DATA_HALF", "CUDNN_DATA_HALF", "CUDNN_TENSOR_OP_MATH"},
      {"amp-fp16", "CUDNN_DATA_HALF", "CUDNN_DATA_FLOAT", "CUDNN_TENSOR_OP_MATH"},
      {"amp-bf16", "CUDNN_DATA_BFLOAT16", "CUDNN_DATA_FLOAT", "CUDNN_TENSOR_OP_MATH"},
  };
  for (const char* op : kPasses) {
    for (const auto& row : rows) {
      const Run r = run(op, row.policy);
      const nlohmann::json& algorithm = r.detail["algorithm"];
      std::cout << op << " " << row.policy << ": normwise " << *r.result.summary.normwise_rel_error
                << ", ran " << algorithm.dump() << '\n';
      EXPECT_EQ(r.result.backend, "cuda");
      EXPECT_TRUE(r.result.pass()) << op << " " << row.policy << ": "
                                   << audit::to_json(r.result).dump() << " ran " << r.detail.dump();
      if (r.result.summary.bound_ratio) {
        EXPECT_LE(*r.result.summary.bound_ratio, 1.0) << op << " " << row.policy;
      }
      EXPECT_EQ(r.detail["library"], "cuDNN");
      EXPECT_EQ(r.detail["data_type"], row.data_type) << op << " " << row.policy;
      EXPECT_EQ(r.detail["compute_type"], row.compute_type) << op << " " << row.policy;
      EXPECT_EQ(algorithm["requested_math"], row.requested_math) << op << " " << row.policy;
      EXPECT_EQ(algorithm["name"].get<std::string>().rfind("CUDNN_CONVOLUTION_", 0), 0u);
      EXPECT_TRUE(algorithm.contains("workspace_bytes"));
    }
  }
}

// FMA math rules Tensor Cores (and so TF32) out: fp32 convolutions stay within fp32's budgets.
// Tensor Core math on the same fp32 data may convert it to tf32 (whether it does is the device's
// and cuDNN's choice, printed here): its error is then at most that of rounding the inputs to tf32
// (normal inputs: about 2^-11 normwise, far below this limit).
TEST_F(CudnnConvolutionTest, FmaMathMeetsFp32BudgetsAndTensorOpMathStaysWithinTf32Conversion) {
  for (const char* op : kPasses) {
    const Run fma = run(op, "fp32", ConvolutionMath::fma);
    EXPECT_TRUE(fma.result.pass())
        << op << ": " << audit::to_json(fma.result).dump() << " ran " << fma.detail.dump();
    EXPECT_EQ(fma.detail["algorithm"]["math"], "CUDNN_FMA_MATH") << op;
    EXPECT_FALSE(fma.detail["algorithm"]["tensor_op_math"].get<bool>()) << op;

    for (const ConvolutionMath math :
         {ConvolutionMath::tensor_op, ConvolutionMath::tensor_op_allow_conversion}) {
      const Run tensor = run(op, "fp32", math);
      const double normwise = *tensor.result.summary.normwise_rel_error;
      std::cout << op << " fp32 " << kernels::math_name(math) << ": normwise " << normwise
                << " (fma: " << *fma.result.summary.normwise_rel_error << "), ran "
                << tensor.detail["algorithm"].dump() << '\n';
      EXPECT_LT(normwise, 4 * 0x1p-11) << op << " " << kernels::math_name(math);
      EXPECT_EQ(tensor.detail["algorithm"]["requested_math"],
                std::string(kernels::math_enumerator(math)));
    }
  }
}

// A wrong descriptor (padding, stride, dilation or groups swapped or lost) reads the wrong taps:
// errors of order one, far beyond the bound these geometries are judged by.
TEST_F(CudnnConvolutionTest, StridedPaddedDilatedGroupedGeometriesAreWithinTheBound) {
  for (const char* shape : {"2x8x9x11:12x3x2,stride=2x1,pad=1x2,dilation=2x1,groups=4",
                            "3x6x7x7:6x3x3,stride=2,pad=1,groups=6", "1x3x12x10:5x5x3,pad=2x0"}) {
    for (const char* op : kPasses) {
      for (const char* policy_name : {"fp32", "amp-fp16"}) {
        const Run r = run(op, policy_name, std::nullopt, shape, false);
        ASSERT_TRUE(r.result.summary.bound_ratio.has_value()) << op;
        EXPECT_LE(*r.result.summary.bound_ratio, 1.0)
            << op << " " << shape << " " << policy_name << " ran " << r.detail.dump();
        EXPECT_TRUE(r.result.pass()) << op << " " << shape << " " << policy_name;
      }
    }
  }
}

// The heuristic is a query, not a timing: the same case picks the same algorithm every time.
TEST_F(CudnnConvolutionTest, TheAlgorithmChoiceRepeats) {
  for (const char* op : kPasses) {
    const Run first = run(op, "amp-bf16");
    const Run second = run(op, "amp-bf16");
    EXPECT_EQ(first.detail["algorithm"]["name"], second.detail["algorithm"]["name"]) << op;
    EXPECT_EQ(first.detail["algorithm"]["math"], second.detail["algorithm"]["math"]) << op;
  }
}

}  // namespace
}  // namespace ampbench::backends::cuda
