// Kernel categories from kernel names, and whether a GEMM could have run on Tensor Cores.
//
// GPU libraries do not report which functional units a kernel used; their kernel names do, by
// convention (cuBLAS "ampere_fp16_s16816gemm", cuDNN "turing_fp16_s1688cudnn", CUTLASS
// "cutlass_80_tensorop_...", cuBLAS 12 "nvjet_..."). The patterns below follow
// torch-tb-profiler's Tensor Core allowlist (pytorch/kineto
// tb_plugin/torch_tb_profiler/profiler/tensor_core.py) and TensorFlow's IsKernelUsingTensorCore,
// extended for Hopper and Blackwell and corrected where real names contradict them; the table in
// test/classify_test.cpp lists the real names each pattern was checked against and where each was
// seen. docs/profiling.md explains every rule. A name that matches nothing is `other`, never an
// error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ampbench::profile {

enum class KernelCategory {
  gemm_tensor_core,
  gemm_cuda_core,
  conv_tensor_core,
  conv_cuda_core,
  cast,
  elementwise,
  reduction,  // reductions and normalisations: softmax, layer/RMS/batch norm, losses
  loss_scaler,
  optimizer,
  memcpy,  // from the record kind, never from a name
  memset,  // likewise
  other
};

inline constexpr KernelCategory kAllCategories[] = {KernelCategory::gemm_tensor_core,
                                                    KernelCategory::gemm_cuda_core,
                                                    KernelCategory::conv_tensor_core,
                                                    KernelCategory::conv_cuda_core,
                                                    KernelCategory::cast,
                                                    KernelCategory::elementwise,
                                                    KernelCategory::reduction,
                                                    KernelCategory::loss_scaler,
                                                    KernelCategory::optimizer,
                                                    KernelCategory::memcpy,
                                                    KernelCategory::memset,
                                                    KernelCategory::other};

std::string_view to_string(KernelCategory category);
// The category named by to_string, or nothing.
std::optional<KernelCategory> category_from_string(std::string_view name);

bool uses_tensor_cores(KernelCategory category);

// The category of a kernel from its name (mangled or demangled, any case). Rules are tried in a
// fixed order (docs/profiling.md): loss scaler, optimizer, cast, convolution, GEMM, reduction,
// elementwise; the first that matches wins; `other` when none does.
KernelCategory classify_kernel(std::string_view name);

// ---- Tensor Core eligibility of a GEMM --------------------------------------------------------

enum class GemmDtype { fp32, tf32, fp16, bf16, fp8, int8 };

std::string_view to_string(GemmDtype dtype);
std::optional<GemmDtype> gemm_dtype_from_string(std::string_view name);  // also "half", "e4m3", ...

// C (m x n) = A (m x k) B (k x n), in `dtype` (of A and B), for each of `batch` matrices (a
// batched or strided-batched product).
struct GemmShape {
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  GemmDtype dtype = GemmDtype::fp32;
  std::uint64_t batch = 1;
};

enum class TensorCoreEligibility {
  eligible,          // a Tensor Core type and every dimension a multiple of the alignment
  misaligned,        // a Tensor Core type, but m, n or k is not a multiple of the alignment
  unsupported_dtype  // fp32 without TF32: CUDA cores by definition
};

std::string_view to_string(TensorCoreEligibility eligibility);

// The multiple of elements each of m, n and k must be for cuBLAS to use Tensor Cores with no
// padding (NVIDIA Deep Learning Performance Guide, "Matrix Multiplication Background": 8 for
// fp16/bf16, 4 for tf32, 16 for int8 and fp8); 0 for fp32.
std::uint64_t tensor_core_alignment(GemmDtype dtype);
TensorCoreEligibility tensor_core_eligibility(const GemmShape& shape);

// The shape named by a GEMM range, the convention by which the harness tells the profile what a
// GEMM computes: an NVTX range (or host phase) named "gemm m=M n=N k=K dtype=D" around the library
// call, with " batch=B" for a batched product (B > 1); further "key=value" words may follow in any
// order. Nothing when the name is not of that form (a range named "gemm" alone, missing m, n, k
// or dtype, or a batch of 0).
std::optional<GemmShape> parse_gemm_range_name(std::string_view name);
std::string gemm_range_name(const GemmShape& shape);

}  // namespace ampbench::profile
