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
                                                cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                std::uint64_t workspace_bytes, WhatNone what_none) {
  Preference preference;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(preference.out()));
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t asked = cublasLtMatmulAlgoGetHeuristic(
      handle, desc, a, b, c, d, preference.get(), 1, &heuristic, &found);
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

cudaDataType_t scaled_data_type(ScaledElement e) {
  switch (e) {
    case ScaledElement::e4m3: return CUDA_R_8F_E4M3;
    case ScaledElement::e5m2: return CUDA_R_8F_E5M2;
    case ScaledElement::e2m1: return CUDA_R_4F_E2M1;
  }
  throw std::logic_error("unknown scaled element");
}

std::int32_t scale_mode(ScaleMode m) {
  switch (m) {
    case ScaleMode::scalar_32f: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case ScaleMode::vec128_32f: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case ScaleMode::blk128x128_32f: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    case ScaleMode::vec32_ue8m0: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
    case ScaleMode::vec16_ue4m3: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  }
  throw std::logic_error("unknown scale mode");
}

// The current device's compute capability, major * 10 + minor.
int current_compute_capability() {
  int device = 0, major = 0, minor = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  AMPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  AMPBENCH_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
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
      handle_, desc.get(), a_layout.get(), b_layout.get(), d_layout.get(), d_layout.get(),
      workspace_.size(), [&] {
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

nlohmann::json LtMatmul::run_scaled(const DeviceOperand& a, const DeviceOperand& b, float alpha,
                                    const Output& out, bool fast_accum, cudaStream_t stream) {
  if (const auto why =
          why_no_scaled_gemm(a.shape, b.shape, current_compute_capability(), fast_accum)) {
    throw std::invalid_argument(*why);
  }
  if (out.fp8 && (*out.fp8 == ScaledElement::e2m1 || out.d_scale == nullptr)) {
    throw std::invalid_argument("run_scaled: an FP8 D takes e4m3 or e5m2 and a D scale");
  }
  if (out.fp8 == ScaledElement::e5m2 && a.shape.element != ScaledElement::e5m2 &&
      b.shape.element != ScaledElement::e5m2) {
    throw std::invalid_argument(
        "cuBLASLt has no e5m2 D from e4m3 operands alone (its FP8 table: an e5m2 D needs an e5m2 "
        "operand)");
  }
  const std::uint64_t m = a.shape.rows, n = b.shape.rows, k = a.shape.k;
  // cuBLASLt's FP8 and FP4 GEMMs are "TN" and column-major: D_col (M x N) = A_lt^T B_lt with A_lt
  // and B_lt k x M and k x N (leading dimension k, in elements). The row-major D (m x n) is the
  // column-major n x m matrix D^T = B A^T, so A_lt is B's codes (row-major n x k is column-major
  // k x n) and B_lt is A's, each with its own type, scales and scale mode. A scale layout does
  // not depend on the transposition (cuBLAS: "Scaling factors layouts").
  MatmulDesc desc;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(desc.out(), CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  set(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_MODE, scale_mode(b.shape.mode));
  set(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_MODE, scale_mode(a.shape.mode));
  set(desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b.scales);
  set(desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a.scales);
  set(desc.get(), CUBLASLT_MATMUL_DESC_FAST_ACCUM, static_cast<std::int8_t>(fast_accum ? 1 : 0));
  if (out.fp8) {
    set(desc.get(), CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, static_cast<const void*>(out.d_scale));
    if (out.amax != nullptr) {
      set(desc.get(), CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, static_cast<void*>(out.amax));
    }
  }
  const cudaDataType_t d_type = out.fp8 ? scaled_data_type(*out.fp8) : CUDA_R_32F;
  Layout a_layout, b_layout, c_layout, d_layout;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(
      a_layout.out(), scaled_data_type(b.shape.element), k, n, static_cast<std::int64_t>(k)));
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(
      b_layout.out(), scaled_data_type(a.shape.element), k, m, static_cast<std::int64_t>(k)));
  // With an FP8 D, C is 16-bit (cuBLASLt's FP8 table); beta is 0, so it is never read, and its
  // pointer is null: D's buffer given as C with another layout is an in-place call whose C and D
  // layouts differ, which cuBLASLt refuses (CUBLAS_STATUS_INVALID_VALUE, seen on an H200 with
  // cuBLAS 13.1; PyTorch's scaled_gemm passes a null C as well).
  AMPBENCH_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(
      c_layout.out(), out.fp8 ? CUDA_R_16BF : CUDA_R_32F, n, m, static_cast<std::int64_t>(n)));
  AMPBENCH_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(d_layout.out(), d_type, n, m, static_cast<std::int64_t>(n)));
  const auto describe = [&] {
    return fmt::format("a {}x{}x{} scaled GEMM ({} {} x {} {}, {} D{})", m, n, k,
                       scaled_element_name(a.shape.element), scale_mode_name(a.shape.mode),
                       scaled_element_name(b.shape.element), scale_mode_name(b.shape.mode),
                       out.fp8 ? scaled_element_name(*out.fp8) : "32F",
                       fast_accum ? ", fast accum" : "");
  };
  const cublasLtMatmulHeuristicResult_t heuristic =
      first_algorithm(handle_, desc.get(), a_layout.get(), b_layout.get(), c_layout.get(),
                      d_layout.get(), workspace_.size(),
                      [&] { return fmt::format("cuBLASLt has no algorithm for {}", describe()); });
  const float zero = 0.0F;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmul(handle_, desc.get(), &alpha, b.codes, a_layout.get(),
                                       a.codes, b_layout.get(), &zero, out.fp8 ? nullptr : out.d,
                                       c_layout.get(), out.d, d_layout.get(), &heuristic.algo,
                                       workspace_.data(), heuristic.workspaceSize, stream));
  return {
      {"library", "cuBLASLt"},
      {"compute_type", "CUBLAS_COMPUTE_32F"},
      {"a_type", fmt::format("CUDA_R_{}", scaled_element_name(a.shape.element))},
      {"b_type", fmt::format("CUDA_R_{}", scaled_element_name(b.shape.element))},
      {"a_scale_mode", scale_mode_name(a.shape.mode)},
      {"b_scale_mode", scale_mode_name(b.shape.mode)},
      {"d_type", out.fp8 ? fmt::format("CUDA_R_{}", scaled_element_name(*out.fp8)) : "CUDA_R_32F"},
      {"alpha", alpha},
      {"fast_accum", fast_accum},
      {"amax_d", out.amax != nullptr},
      {"algorithm", algorithm_json(heuristic)}};
}

}  // namespace ampbench::backends::cuda
