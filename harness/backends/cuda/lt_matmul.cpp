#include "harness/backends/cuda/lt_matmul.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "kernels/cuda_check.hpp"

namespace ampbench::backends::cuda {
namespace {

// The scratch memory cuBLASLt may use: its heuristic offers only algorithms that fit, and split-K
// ones need some.
constexpr std::uint64_t kWorkspaceBytes = std::uint64_t{32} << 20;

// An owned cuBLASLt descriptor: destroyed once; a failure to destroy is logged, never thrown.
template <typename Handle, cublasStatus_t (*Destroy)(Handle)>
class LtObject {
 public:
  LtObject() = default;
  ~LtObject() {
    if (handle_ != nullptr) AMPBENCH_CUBLAS_CHECK_NOTHROW(Destroy(handle_));
  }
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;

  Handle get() const { return handle_; }
  Handle* out() { return &handle_; }  // for the create call

 private:
  Handle handle_ = nullptr;
};
using MatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

cudaDataType_t data_type(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return CUDA_R_32F;
    case DeviceType::f16: return CUDA_R_16F;
    case DeviceType::bf16: return CUDA_R_16BF;
  }
  throw std::logic_error("unknown device type");
}

cublasComputeType_t compute_type(GemmCompute c) {
  switch (c) {
    case GemmCompute::f32: return CUBLAS_COMPUTE_32F;
    case GemmCompute::f32_pedantic: return CUBLAS_COMPUTE_32F_PEDANTIC;
    case GemmCompute::f32_fast_tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmCompute::f32_fast_16f: return CUBLAS_COMPUTE_32F_FAST_16F;
    case GemmCompute::f32_fast_16bf: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GemmCompute::f16: return CUBLAS_COMPUTE_16F;
  }
  throw std::logic_error("unknown compute type");
}

std::string_view reduction_name(std::uint32_t scheme) {
  switch (scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute_type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output_type";
    default: return "other";
  }
}

template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, T value) {
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
}

template <typename T>
void set(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attribute, T value) {
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, attribute, &value, sizeof value));
}

template <typename T>
T get(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  std::size_t written = 0;
  AMPBENCH_CUBLAS_CHECK(
      cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written));
  return value;
}

void make_layout(Layout& layout, DeviceType type, std::uint64_t rows, std::uint64_t cols,
                 std::int64_t ld, std::int32_t batch, std::int64_t stride) {
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(layout.out(), data_type(type), rows, cols, ld));
  if (batch > 1) {
    set(layout.get(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
    set(layout.get(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, stride);
  }
}

// The algorithm cuBLASLt's heuristic ranks first for the product within `workspace_bytes`; when
// it has none (NOT_SUPPORTED means the same), std::runtime_error with `what_none()` (any other
// failure throws CudaError).
template <typename WhatNone>
cublasLtMatmulHeuristicResult_t first_algorithm(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                cublasLtMatrixLayout_t d,
                                                std::uint64_t workspace_bytes, WhatNone what_none) {
  Preference preference;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(preference.out()));
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t asked = cublasLtMatmulAlgoGetHeuristic(
      handle, desc, a, b, d, d, preference.get(), 1, &heuristic, &found);
  if (asked != CUBLAS_STATUS_NOT_SUPPORTED) AMPBENCH_CUBLAS_CHECK(asked);
  if (asked == CUBLAS_STATUS_NOT_SUPPORTED || found == 0 ||
      heuristic.state != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(what_none());
  }
  return heuristic;
}

nlohmann::json algorithm_json(const cublasLtMatmulHeuristicResult_t& heuristic) {
  const cublasLtMatmulAlgo_t& algo = heuristic.algo;
  return {{"id", get<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID)},
          {"tile", get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)},
          {"stages", get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
          {"split_k", get<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
          {"reduction",
           reduction_name(get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))},
          {"workspace_bytes", heuristic.workspaceSize}};
}

cudaDataType_t fp8_data_type(Fp8Type t) {
  return t == Fp8Type::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

}  // namespace

LtMatmul::LtMatmul() : workspace_(kWorkspaceBytes) {
  AMPBENCH_CUBLAS_CHECK(cublasLtCreate(&handle_));
}

LtMatmul::~LtMatmul() {
  if (handle_ != nullptr) AMPBENCH_CUBLAS_CHECK_NOTHROW(cublasLtDestroy(handle_));
}

nlohmann::json LtMatmul::run(const GemmPlan& plan, const GemmCall& call, const void* a,
                             const void* b, void* d, const void* bias, cudaStream_t stream) {
  // The scale type (of alpha and beta) is the compute type's: fp16 for 16F, fp32 otherwise.
  const bool half_scale = plan.compute == GemmCompute::f16;
  MatmulDesc desc;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(desc.out(), compute_type(plan.compute),
                                                 half_scale ? CUDA_R_16F : CUDA_R_32F));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA,
      static_cast<std::int32_t>(call.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB,
      static_cast<std::int32_t>(call.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  if (bias != nullptr) {
    // The bias is added in the compute type before D is rounded, as addmm's cuBLASLt path does;
    // its type defaults to D's.
    set(desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE,
        static_cast<std::uint32_t>(CUBLASLT_EPILOGUE_BIAS));
    set(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  Layout a_layout, b_layout, d_layout;
  make_layout(a_layout, plan.inputs, call.a.rows, call.a.cols, call.a.ld, call.batch,
              call.stride_a);
  make_layout(b_layout, plan.inputs, call.b.rows, call.b.cols, call.b.ld, call.batch,
              call.stride_b);
  make_layout(d_layout, plan.output, call.m, call.n, static_cast<std::int64_t>(call.m), call.batch,
              call.stride_d);

  // No reduction-scheme mask: PyTorch sets one only when the user disallows reduced-precision
  // split-K reductions (allow_fp16_reduced_precision_reduction, default allowed).
  const cublasLtMatmulHeuristicResult_t heuristic = first_algorithm(
      handle_, desc.get(), a_layout.get(), b_layout.get(), d_layout.get(), workspace_.size(), [&] {
        return fmt::format(
            "cuBLASLt has no algorithm for a {}x{}x{} GEMM (batch {}) with compute type {}, {} A "
            "and B, {} D{}",
            call.m, call.n, call.k, call.batch, compute_name(plan.compute),
            device_type_name(plan.inputs), device_type_name(plan.output),
            bias != nullptr ? " and a bias epilogue" : "");
      });
  const float one = 1.0F, zero = 0.0F;
  const std::uint16_t half_one = 0x3C00, half_zero = 0;  // binary16 1 and 0
  const void* alpha = half_scale ? static_cast<const void*>(&half_one) : &one;
  const void* beta = half_scale ? static_cast<const void*>(&half_zero) : &zero;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmul(
      handle_, desc.get(), alpha, a, a_layout.get(), b, b_layout.get(), beta, d, d_layout.get(), d,
      d_layout.get(), &heuristic.algo, workspace_.data(), heuristic.workspaceSize, stream));

  return {{"library", "cuBLASLt"},
          {"compute_type", fmt::format("CUBLAS_COMPUTE_{}", compute_name(plan.compute))},
          {"a_b_type", fmt::format("CUDA_R_{}", device_type_name(plan.inputs))},
          {"d_type", fmt::format("CUDA_R_{}", device_type_name(plan.output))},
          {"epilogue", bias != nullptr ? "bias" : "none"},
          {"rule", plan.rule},
          {"algorithm", algorithm_json(heuristic)}};
}

nlohmann::json LtMatmul::run_fp8(Fp8Type a_type, Fp8Type b_type, std::uint64_t m, std::uint64_t n,
                                 std::uint64_t k, const void* a, const void* b,
                                 const float* a_scale, const float* b_scale, float* d,
                                 bool fast_accum, cudaStream_t stream) {
  if (const auto why = why_no_fp8_gemm(m, n, k, a_type, b_type)) {
    throw std::invalid_argument(*why);
  }
  // cuBLASLt's FP8 GEMMs are "TN" and column-major: D_col (M x N) = A_lt^T B_lt with A_lt and B_lt
  // k x M and k x N (leading dimension k). The row-major D (m x n) is the column-major n x m
  // matrix D^T = B A^T, so that A_lt is B's codes (row-major n x k is column-major k x n) and
  // B_lt is A's, each with its own type and scale.
  MatmulDesc desc;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(desc.out(), CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  set(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(b_scale));
  set(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(a_scale));
  set(desc.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<std::int8_t>(fast_accum ? 1 : 0));
  Layout a_layout, b_layout, d_layout;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(a_layout.out(), fp8_data_type(b_type), k, n,
                                                   static_cast<std::int64_t>(k)));
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(b_layout.out(), fp8_data_type(a_type), k, m,
                                                   static_cast<std::int64_t>(k)));
  AMPBENCH_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(d_layout.out(), CUDA_R_32F, n, m, static_cast<std::int64_t>(n)));
  const cublasLtMatmulHeuristicResult_t heuristic = first_algorithm(
      handle_, desc.get(), a_layout.get(), b_layout.get(), d_layout.get(), workspace_.size(), [&] {
        return fmt::format(
            "cuBLASLt has no algorithm for a {}x{}x{} FP8 GEMM ({} x {}, 32F D{}): FP8 Tensor "
            "Cores need sm_89 or later",
            m, n, k, fp8_type_name(a_type), fp8_type_name(b_type),
            fast_accum ? ", fast accum" : "");
      });
  const float one = 1.0F, zero = 0.0F;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmul(
      handle_, desc.get(), &one, b, a_layout.get(), a, b_layout.get(), &zero, d, d_layout.get(), d,
      d_layout.get(), &heuristic.algo, workspace_.data(), heuristic.workspaceSize, stream));
  return {{"library", "cuBLASLt"},
          {"compute_type", "CUBLAS_COMPUTE_32F"},
          {"a_type", fmt::format("CUDA_R_{}", fp8_type_name(a_type))},
          {"b_type", fmt::format("CUDA_R_{}", fp8_type_name(b_type))},
          {"d_type", "CUDA_R_32F"},
          {"scales", "per tensor (A and B scale pointers)"},
          {"fast_accum", fast_accum},
          {"algorithm", algorithm_json(heuristic)}};
}

}  // namespace ampbench::backends::cuda
