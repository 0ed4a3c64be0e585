#include "harness/profile/classify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

namespace ampbench::profile {
namespace {

using Patterns = std::span<const std::string_view>;

bool contains_any(std::string_view name, Patterns patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](std::string_view p) { return name.find(p) != std::string_view::npos; });
}

bool is_letter(char c) {
  return c >= 'a' && c <= 'z';
}

// `word` where no letter precedes it: "_cast", "15CastFunctor" and "cast_f32" count,
// "broadcast" and "LoadWithCast" (a loader policy of many mixed-type kernels) do not.
bool contains_word_start(std::string_view name, std::string_view word) {
  for (std::size_t at = name.find(word); at != std::string_view::npos;
       at = name.find(word, at + 1)) {
    if (at == 0 || !is_letter(name[at - 1])) return true;
  }
  return false;
}

// "conv" anywhere but in "convert" (a cast).
bool contains_conv(std::string_view name) {
  for (std::size_t at = name.find("conv"); at != std::string_view::npos;
       at = name.find("conv", at + 1)) {
    if (name.substr(at, 7) != "convert") return true;
  }
  return false;
}

// ---- the rules, in the order they are tried; docs/profiling.md lists their sources -----------

// PyTorch's GradScaler kernels (aten/src/ATen/native/cuda/AmpKernels.cu): the unscale runs as a
// multi_tensor_apply_kernel whose functor names _amp_foreach_non_finite_check_and_unscale_cuda_,
// so this rule must precede the optimizer's multi_tensor_apply. ampbench's own scaler kernels are
// named *unscale* and *update_scale* (harness/train/).
constexpr std::string_view kLossScaler[] = {"non_finite_check", "unscale", "update_scale",
                                            "loss_scale", "grad_scale"};

// PyTorch foreach/fused optimizers (multi_tensor_apply_kernel<..., FusedAdamMathFunctor ...>),
// apex, TensorFlow ApplyAdamKernel. "lamb_"/"_lamb" because "lambda" is in every PyTorch name.
// Clipping by the global norm counts with the optimizer, as PyTorch's does: its _foreach_norm and
// _foreach_mul_ are multi_tensor_apply kernels too (ampbench's are named clip_grad_norm_*).
constexpr std::string_view kOptimizer[] = {
    "multi_tensor_apply", "adam",  "sgd",   "momentum",      "adagrad", "rmsprop",
    "optimizer",          "lamb_", "_lamb", "clip_grad_norm"};

constexpr std::string_view kCastingLoaders[] = {"loadwithcast", "storewithcast"};
constexpr std::string_view kCastFunctions[] = {"float2half", "half2float", "float2bfloat16",
                                               "bfloat162float", "round_kernel"};

bool is_cast(std::string_view name) {
  // PyTorch's dtype conversion: a copy between different dtypes is direct_copy_kernel_cuda run
  // through the casting loader/storer (aten/src/ATen/native/cuda/Copy.cu, CUDALoops.cuh).
  if (name.find("direct_copy_kernel") != std::string_view::npos &&
      contains_any(name, kCastingLoaders)) {
    return true;
  }
  // ampbench's rounding kernel (kernels/rounding_kernels.cuh) is the emulated cast to a format.
  return contains_word_start(name, "cast") || contains_word_start(name, "convert") ||
         contains_any(name, kCastFunctions);
}

constexpr std::string_view kConvolution[] = {
    "implicit_gemm", "implicit_convolve", "winograd", "fprop", "dgrad", "wgrad",
    "cudnn_",        "direct_group"};

constexpr std::string_view kGemm[] = {"gemm",       "gemv",         "nvjet",
                                      "dot_kernel", "splitkreduce", "wgmma"};

// Instruction shapes and families that only Tensor Cores execute: HMMA m8n8k4 (Volta "884"),
// m16n8k8 ("1688"), m16n8k16 ("16816"), IMMA ("8816", "16832"), Hopper warpgroup MMA ("gmma",
// "wgmma"), CUTLASS "tensorop", cuBLAS/cuDNN "xmma" and cuBLAS 12 "nvjet" kernels, Blackwell
// "tcgen05"; plus the cuDNN kernels torch-tb-profiler's allowlist names.
constexpr std::string_view kTensorCore[] = {"h884",
                                            "s884",
                                            "i884",
                                            "h1688",
                                            "s1688",
                                            "c1688",
                                            "i8816",
                                            "16816",
                                            "16832",
                                            "hmma",
                                            "imma",
                                            "xmma",
                                            "tensorop",
                                            "gmma",
                                            "nvjet",
                                            "tcgen05",
                                            "dgrad_1x1_stride_2x2",
                                            "first_layer_wgrad_kernel",
                                            "conv1x1",
                                            "conv2d_c1_k1",
                                            "direct_group"};

// Names that say the math is scalar FMA even inside a family that is otherwise Tensor Core:
// cuBLAS's "sm80_xmma_gemm_f32f32_f32f32_..._ffma" (fp32 without TF32) and CUTLASS "simt".
constexpr std::string_view kCudaCoreMarkers[] = {"ffma", "dfma", "hfma", "simt", "f32f32_f32f32"};

bool tensor_core_name(std::string_view name) {
  return !contains_any(name, kCudaCoreMarkers) && contains_any(name, kTensorCore);
}

constexpr std::string_view kReduction[] = {
    "softmax",    "layer_norm", "layernorm", "rms_norm", "rmsnorm", "batch_norm", "batchnorm",
    "group_norm", "groupnorm",  "bn_fw",     "bn_bw",    "reduce",  "nll_loss",   "cross_entropy",
    "logsumexp",  "gammabeta",  "welford",   "argmax",   "argmin"};

constexpr std::string_view kElementwise[] = {
    "elementwise", "pointwise", "eigenmetakernel", "triton_poi", "relu", "gelu", "silu",
    "sigmoid",     "tanh",      "dropout",         "fill",       "copy", "bias", "act_and_mul",
    "index",       "gather",    "scatter",         "transpose",  "nchw", "nhwc"};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

constexpr std::array<std::string_view, 12> kCategoryNames = {
    "gemm_tensor_core", "gemm_cuda_core", "conv_tensor_core", "conv_cuda_core", "cast",
    "elementwise",      "reduction",      "loss_scaler",      "optimizer",      "memcpy",
    "memset",           "other"};

}  // namespace

std::string_view to_string(KernelCategory category) {
  return kCategoryNames[static_cast<std::size_t>(category)];
}

std::optional<KernelCategory> category_from_string(std::string_view name) {
  for (KernelCategory c : kAllCategories) {
    if (to_string(c) == name) return c;
  }
  return std::nullopt;
}

bool uses_tensor_cores(KernelCategory category) {
  return category == KernelCategory::gemm_tensor_core ||
         category == KernelCategory::conv_tensor_core;
}

KernelCategory classify_kernel(std::string_view raw_name) {
  const std::string name = lower(raw_name);
  if (contains_any(name, kLossScaler)) return KernelCategory::loss_scaler;
  if (contains_any(name, kOptimizer)) return KernelCategory::optimizer;
  if (is_cast(name)) return KernelCategory::cast;
  if (contains_conv(name) || contains_any(name, kConvolution)) {
    return tensor_core_name(name) ? KernelCategory::conv_tensor_core
                                  : KernelCategory::conv_cuda_core;
  }
  if (contains_any(name, kGemm)) {
    return tensor_core_name(name) ? KernelCategory::gemm_tensor_core
                                  : KernelCategory::gemm_cuda_core;
  }
  if (contains_any(name, kReduction)) return KernelCategory::reduction;
  if (contains_any(name, kElementwise)) return KernelCategory::elementwise;
  return KernelCategory::other;
}

// ---- eligibility ------------------------------------------------------------------------------

std::string_view to_string(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::fp32: return "fp32";
    case GemmDtype::tf32: return "tf32";
    case GemmDtype::fp16: return "fp16";
    case GemmDtype::bf16: return "bf16";
    case GemmDtype::fp8: return "fp8";
    case GemmDtype::int8: return "int8";
  }
  return "fp32";
}

std::optional<GemmDtype> gemm_dtype_from_string(std::string_view raw) {
  const std::string name = lower(raw);
  if (name == "fp32" || name == "float32" || name == "float") return GemmDtype::fp32;
  if (name == "tf32") return GemmDtype::tf32;
  if (name == "fp16" || name == "float16" || name == "half") return GemmDtype::fp16;
  if (name == "bf16" || name == "bfloat16") return GemmDtype::bf16;
  if (name == "fp8" || name == "e4m3" || name == "e5m2" || name == "fp8-e4m3" ||
      name == "fp8-e5m2") {
    return GemmDtype::fp8;
  }
  if (name == "int8" || name == "s8" || name == "i8") return GemmDtype::int8;
  return std::nullopt;
}

std::string_view to_string(TensorCoreEligibility eligibility) {
  switch (eligibility) {
    case TensorCoreEligibility::eligible: return "eligible";
    case TensorCoreEligibility::misaligned: return "misaligned";
    case TensorCoreEligibility::unsupported_dtype: return "unsupported_dtype";
  }
  return "unsupported_dtype";
}

std::uint64_t tensor_core_alignment(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::fp32: return 0;
    case GemmDtype::tf32: return 4;
    case GemmDtype::fp16:
    case GemmDtype::bf16: return 8;
    case GemmDtype::fp8:
    case GemmDtype::int8: return 16;
  }
  return 0;
}

TensorCoreEligibility tensor_core_eligibility(const GemmShape& shape) {
  const std::uint64_t alignment = tensor_core_alignment(shape.dtype);
  if (alignment == 0) return TensorCoreEligibility::unsupported_dtype;
  const bool aligned =
      shape.m % alignment == 0 && shape.n % alignment == 0 && shape.k % alignment == 0;
  return aligned ? TensorCoreEligibility::eligible : TensorCoreEligibility::misaligned;
}

std::optional<GemmShape> parse_gemm_range_name(std::string_view name) {
  constexpr std::string_view kPrefix = "gemm ";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  std::optional<std::uint64_t> m, n, k, batch;
  std::optional<GemmDtype> dtype;
  std::string_view rest = name.substr(kPrefix.size());
  while (!rest.empty()) {
    const std::size_t space = rest.find(' ');
    const std::string_view word = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    const std::size_t equals = word.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view key = word.substr(0, equals);
    const std::string_view value = word.substr(equals + 1);
    if (key == "dtype") {
      dtype = gemm_dtype_from_string(value);
      if (!dtype) return std::nullopt;
      continue;
    }
    std::optional<std::uint64_t>* target = key == "m"       ? &m
                                           : key == "n"     ? &n
                                           : key == "k"     ? &k
                                           : key == "batch" ? &batch
                                                            : nullptr;
    if (target == nullptr) continue;
    std::uint64_t parsed = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc{} || end != value.data() + value.size()) return std::nullopt;
    *target = parsed;
  }
  if (!m || !n || !k || !dtype || batch == 0u) return std::nullopt;
  return GemmShape{.m = *m, .n = *n, .k = *k, .dtype = *dtype, .batch = batch.value_or(1)};
}

std::string gemm_range_name(const GemmShape& shape) {
  std::string name = fmt::format("gemm m={} n={} k={} dtype={}", shape.m, shape.n, shape.k,
                                 to_string(shape.dtype));
  if (shape.batch != 1) name += fmt::format(" batch={}", shape.batch);
  return name;
}

}  // namespace ampbench::profile
