// The kernel classifier on real kernel names, each with where it was seen, and the Tensor Core
// eligibility of GEMM shapes.
#include "harness/profile/classify.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ampbench::profile {
namespace {

using C = KernelCategory;

struct RealName {
  std::string_view name;
  KernelCategory expected;
};

// Kernel names as profilers printed them (nvprof, nsys, torch.profiler), with the category they
// must get. Names cut with "..." by the profiler that printed them are given as printed.
constexpr RealName kRealNames[] = {
    // ---- cuBLAS / CUTLASS GEMMs on Tensor Cores ----
    // Volta HMMA m8n8k4: the examples TensorFlow's IsKernelUsingTensorCore names
    // (tensorflow/tensorflow tensorflow/core/profiler/utils/kernel_stats_utils.cc).
    {"volta_h884gemm", C::gemm_tensor_core},
    {"volta_fp16_s884gemm", C::gemm_tensor_core},
    // Turing/Ampere HMMA m16n8k8 and m16n8k16 (karpathy/nanochat#105, RTX 3060, bf16 training).
    {"ampere_bf16_s1688gemm_bf16_128x128_ldg8_f2f_stages_32x1_nn", C::gemm_tensor_core},
    {"ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_32x3_nn", C::gemm_tensor_core},
    // Ampere fp16 (Triton proton profiles of torch.matmul on A100, in public tutorial repos).
    {"ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", C::gemm_tensor_core},
    {"ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn", C::gemm_tensor_core},
    // CUTLASS 2.x TF32 tensorop in TensorFlow (exalearn/EXARL#84, nsys on A100).
    {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align1>(cutlass_80_tensorop_"
     "s1688g...",
     C::gemm_tensor_core},
    // CUTLASS fp16 tensorop inside PyTorch (vllm-project/vllm-omni#553, torch.profiler table).
    {"void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm...", C::gemm_tensor_core},
    // CUTLASS 3 Hopper warp-specialized GEMMs (CUTLASS library procedural names, as TorchInductor's
    // CUTLASS backend and public Hopper GEMM write-ups print them).
    {"cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x128x64_2x1x1_0_tnt_align8_"
     "warpspecialized_cooperative_epi_tma",
     C::gemm_tensor_core},
    {"cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_void_bf16_128x128x64_1x1x1_0_tnn_"
     "align8_warpspecialized_pingpong_epi_tma",
     C::gemm_tensor_core},
    // cuBLAS 12 on Hopper, bf16 (vLLM docs "Profiling vLLM", nsys stats on H100) and TF32 (public
    // nsys output, code search).
    {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
     "segment_k_of…",
     C::gemm_tensor_core},
    {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment"
     "_k_off_kernel__5x_cublas",
     C::gemm_tensor_core},
    // cuBLAS 12.x "nvjet" Hopper GEMMs (NVIDIA/Fuser#3137 nsys on H100; GindaChen/nsys-ai#582
    // classifies the family as Tensor Core, reaching ~77% of H100 dense FP16 peak).
    {"nvjet_hsh_192x192_64x3_2x1_v_bz_coopB_NTN", C::gemm_tensor_core},
    // bf16 ("tst") and TF32 ("sss_tf32") members of the family (public nsys output, code search).
    {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", C::gemm_tensor_core},
    {"nvjet_sss_tf32_128x256_TNT", C::gemm_tensor_core},
    // ---- GEMMs on CUDA cores ----
    // fp32 SGEMM (official-stockfish/nnue-pytorch#96, torch.profiler on V100).
    {"volta_sgemm_32x128_tn", C::gemm_cuda_core},
    {"volta_sgemm_128x64_nn", C::gemm_cuda_core},
    {"void gemv2T_kernel_val<int, int, float, float, float...", C::gemm_cuda_core},
    // Complex GEMM (NVIDIA/apex#666, nvprof).
    {"volta_cgemm_32x64_tn", C::gemm_cuda_core},
    // cuBLAS's xmma family running FFMA: fp32 without TF32 on A100 (pytorch/pytorch#167503).
    // torch-tb-profiler's "xmma_gemm" pattern would call this a Tensor Core kernel.
    {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8_stage3_warpsize2x2x1_ffma",
     C::gemm_cuda_core},
    // CUTLASS SIMT in the same trace (pytorch/pytorch#167503).
    {"void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1", C::gemm_cuda_core},
    // Small-dimension cuBLAS kernels (facebookexperimental/triton#2757, ALGO_IDs 11, 13, 14, 16).
    {"gemmSN_NN_kernel", C::gemm_cuda_core},
    {"gemv2T_kernel", C::gemm_cuda_core},
    {"dot_kernel", C::gemm_cuda_core},
    {"magma_sgemmEx_kernel", C::gemm_cuda_core},
    // cuBLASLt split-K reduction after a Tensor Core GEMM: CUDA-core work.
    {"cublasLt::splitKreduce_kernel<32, 16, int, float, ...>", C::gemm_cuda_core},
    // ---- convolutions ----
    // cuDNN Tensor Core convolutions (NVIDIA/apex#666 on V100, NVIDIA/apex#530 on Turing).
    {"volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc2nchw_tn_v1",
     C::conv_tensor_core},
    {"turing_fp16_s1688cudnn_fp16_256x128_ldg8_relu_filter1x1_stg8_interior_nchw_nn_v1",
     C::conv_tensor_core},
    {"turing_fp16_s1688cudnn_fp16_128x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1", C::conv_tensor_core},
    // cuDNN 8 on Ampere: implicit GEMM through xmma (torch-tb-profiler allowlist
    // "xmma_implicit_gemm"); fp16 and TF32, from public torch.profiler output (code search).
    {"sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize256x64x32_stage3_"
     "warpsize4x1x1_g1_tensor16x8x16_execute_kernel__5x_cudnn",
     C::conv_tensor_core},
    {"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nh...", C::conv_tensor_core},
    // fp32 cuDNN convolutions on CUDA cores (ryujaehun/pytorch-gpu-benchmark#6, nvprof on V100;
    // apache/mxnet#14684).
    {"volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", C::conv_cuda_core},
    {"void cudnn::detail::implicit_convolve_sgemm<float, float, int=1024, int=5, int=5, int=3, "
     "int=3, int=3, int=1, bool=1, bool=0, bool=1>(int, int, int, float const *, int, float*, ...)",
     C::conv_cuda_core},
    {"void cudnn::detail::wgrad_alg0_engine<float, int=128, int=6, int=8, int=3, int=3, int=5, "
     "bool=1, int=512>(int, int, int, float const *, int, ...)",
     C::conv_cuda_core},
    {"void cudnn::detail::dgrad2d_alg1_1<float, int=0, int=6, int=7, int=5, int=4, int=5, bool=0, "
     "bool=1>(int, int, int, float const *, int, float const , int, ...)",
     C::conv_cuda_core},
    {"volta_scudnn_128x128_stridedB_splitK_xregs_large_nn_v1", C::conv_cuda_core},
    // ---- casts ----
    // PyTorch's float<->half copy: direct_copy_kernel_cuda through LoadWithCast/StoreWithCast
    // (aten/src/ATen/native/cuda/Copy.cu, CUDALoops.cuh; the same string in many public
    // torch.profiler tables).
    {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
     "TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
     "const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned "
     "int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
     "at::native::memory::StoreWithCast<1> >(int, ...)",
     C::cast},
    // TensorFlow's cast (Eigen scalar_cast_op, abridged), ampbench's rounding kernel and a cast
    // named as ampbench names its own (docs/profiling.md).
    {"void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<..., "
     "Eigen::TensorConversionOp<Eigen::half, ...>, Eigen::internal::scalar_cast_op<float, "
     "Eigen::half> ...",
     C::cast},
    {"ampbench::kernels::round_kernel(ampbench::numeric::Format, ampbench::numeric::Rounding, "
     "unsigned long, unsigned long, float const*, unsigned long*, float*, unsigned long)",
     C::cast},
    {"cast_fp32_to_fp16_kernel", C::cast},
    // ---- loss scaler ----
    // PyTorch GradScaler (aten/src/ATen/native/cuda/AmpKernels.cu; the unscale runs through
    // multi_tensor_apply since pytorch/pytorch#44778, as printed in public profiler tables).
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::UnaryOpFunctor<float, "
     "1, 1, 0>, at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::"
     "Tensor>, at::Tensor&, at::Tensor const&)::{lambda()#1}::operator()() "
     "const::{lambda()#2}::operator()() const::{lambda(float)#1}>(...)",
     C::loss_scaler},
    {"at::native::amp_update_scale_cuda_kernel(float*, int*, float*, double, double, int)",
     C::loss_scaler},
    // ---- optimizer ----
    // TensorFlow Adam (exalearn/EXARL#84) and PyTorch's fused Adam (kernel and functor names from
    // aten/src/ATen/native/cuda/fused_adam_impl.cu, abridged).
    {"void tensorflow::functor::ApplyAdamKernel<float>(int, float*, float*, float*, float const*, "
     "float c?",
     C::optimizer},
    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
     "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
     "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, ...>",
     C::optimizer},
    // ---- reductions and normalisations (PyTorch and vLLM kernels as torch.profiler prints them)
    // ----
    {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, "
     "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>...",
     C::reduction},
    // Kernel names from PyTorch's source (PersistentSoftmax.cuh, layer_norm_kernel.cu), abridged.
    {"void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 10, ...>",
     C::reduction},
    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(...)",
     C::reduction},
    {"cudnn::detail::bn_bw_1C11_kernel", C::reduction},
    {"void vllm::rms_norm_kernel", C::reduction},
    // ---- elementwise ----
    {"void at::native::vectorized_elementwise_kernel<4, at::native::...", C::elementwise},
    {"void kernelPointwiseApply2<ThresholdUpdateOutput<at::Half>, at::Half, at::Half, unsigned "
     "int, int=1, int=1>(...)",
     C::elementwise},                      // NVIDIA/apex#666
    {"nchwToNhwcKernel", C::elementwise},  // NVIDIA/apex#530 (cuDNN layout transform)
    {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, (bool)1>",
     C::elementwise},
    // ---- names that match no rule ----
    {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMa…",
     C::other},
    {"my_mystery_kernel", C::other},
    {"", C::other},
};

TEST(ClassifyKernel, RealNames) {
  for (const RealName& real : kRealNames) {
    EXPECT_EQ(to_string(classify_kernel(real.name)), to_string(real.expected)) << real.name;
  }
}

// The names of the __global__ functions a source file defines (after `__global__`, the return type
// and any __launch_bounds__(...)).
std::vector<std::string> kernel_names(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string source = text.str();
  EXPECT_FALSE(source.empty()) << "cannot read " << path;
  std::vector<std::string> names;
  for (std::size_t at = source.find("__global__"); at != std::string::npos;
       at = source.find("__global__", at + 1)) {
    std::size_t i = at + std::string_view("__global__").size();
    std::string word;
    while (i < source.size()) {
      while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
      std::size_t end = i;
      while (end < source.size() &&
             (std::isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_')) {
        ++end;
      }
      word = source.substr(i, end - i);
      i = end;
      if (word == "__launch_bounds__") {
        i = source.find(')', i) + 1;  // skip its arguments
      } else if (word != "void" && word != "static" && word != "inline") {
        break;
      }
    }
    names.push_back(word);
  }
  return names;
}

// Every kernel ampbench itself launches in an audit, a training step or a profile falls into a
// category, so that its own time is attributed where it belongs; read from the sources, so that a
// kernel added later with an unclassifiable name fails here. Each name is tried as CUPTI
// demangles it, with the namespace and a template argument.
TEST(ClassifyKernel, AmpbenchsOwnKernels) {
  const std::map<std::string, KernelCategory> expected = {
      {"cast_kernel", C::cast},
      {"cast_to_tf32_kernel", C::cast},
      {"round_kernel", C::cast},
      {"pointwise_binary_kernel", C::elementwise},
      {"pointwise_fma_kernel", C::elementwise},
      {"pointwise_scale_kernel", C::elementwise},
      {"bias_activation_kernel", C::elementwise},
      {"pointwise_activation_backward_kernel", C::elementwise},
      {"reduce_columns_kernel", C::reduction},
      {"reduce_kernel", C::reduction},
      {"softmax_kernel", C::reduction},
      {"softmax_backward_kernel", C::reduction},
      {"attention_softmax_backward_kernel", C::reduction},
      {"layer_norm_kernel", C::reduction},
      {"layer_norm_dx_kernel", C::reduction},
      {"layer_norm_parameters_kernel", C::reduction},
      {"rms_norm_kernel", C::reduction},
      {"cross_entropy_rows_kernel", C::reduction},
      {"cross_entropy_backward_kernel", C::reduction},
      {"unscale_and_check_kernel", C::loss_scaler},
      {"update_scale_kernel", C::loss_scaler},
      {"loss_scale_inverse_kernel", C::loss_scaler},
      {"sgd_kernel", C::optimizer},
      {"adamw_kernel", C::optimizer},
      {"optimizer_advance_step_kernel", C::optimizer},
      {"clip_grad_norm_squares_kernel", C::optimizer},
      {"clip_grad_norm_coefficient_kernel", C::optimizer},
      {"clip_grad_norm_scale_kernel", C::optimizer},
      {"batch_norm_kernel", C::reduction},
      {"batch_norm_backward_kernel", C::reduction},
      {"reduce_mean_rows_kernel", C::reduction},
      {"pointwise_mean_rows_backward_kernel", C::elementwise},
  };
  std::size_t found = 0;
  for (const char* file : {"kernels/op_kernels.cu", "kernels/cnn_kernels.cu",
                           "kernels/train_kernels.cu", "kernels/rounding_kernels.cu"}) {
    for (const std::string& name : kernel_names(std::string(AMPBENCH_SOURCE_DIR) + "/" + file)) {
      ++found;
      const auto it = expected.find(name);
      ASSERT_NE(it, expected.end())
          << file << " defines kernel " << name << ": add it here with the category it must get";
      const std::string demangled = "void ampbench::kernels::(anonymous namespace)::" + name +
                                    "<__half>(__half const*, __half*, unsigned long)";
      EXPECT_EQ(classify_kernel(demangled), it->second) << demangled;
    }
  }
  EXPECT_EQ(found, expected.size()) << "a kernel of the table is no longer in the sources";
}

TEST(ClassifyKernel, IgnoresCase) {
  EXPECT_EQ(classify_kernel("VOLTA_H884GEMM_64X64_NT"), C::gemm_tensor_core);
  EXPECT_EQ(classify_kernel("Volta_Sgemm_128x64_NN"), C::gemm_cuda_core);
}

// Words that contain a rule's pattern but are not that kind of kernel.
TEST(ClassifyKernel, NearMissesDoNotMatch) {
  // "broadcast" and the LoadWithCast policy of a comparison are not casts.
  EXPECT_EQ(classify_kernel("mul_broadcast_kernel"), C::other);
  EXPECT_EQ(classify_kernel("void at::native::unrolled_elementwise_kernel<at::native::"
                            "BUnaryFunctor<at::native::CompareEqFunctor<long> >, ..., "
                            "at::native::memory::LoadWithCast<1>, "
                            "at::native::memory::StoreWithCast>(...)"),
            C::elementwise);
  // "convert" is a cast, not a convolution; every PyTorch "lambda" is not the LAMB optimizer.
  EXPECT_EQ(classify_kernel("convert_fp32_to_bf16_kernel"), C::cast);
  EXPECT_EQ(classify_kernel("void at::native::elementwise_kernel<128, 2, {lambda(int)#1}>"),
            C::elementwise);
  EXPECT_EQ(classify_kernel("fused_lamb_update"), C::optimizer);
}

TEST(ClassifyKernel, CategoryNamesRoundTrip) {
  for (KernelCategory c : kAllCategories) {
    EXPECT_EQ(category_from_string(to_string(c)), c);
  }
  EXPECT_FALSE(category_from_string("gemm").has_value());
  EXPECT_TRUE(uses_tensor_cores(C::gemm_tensor_core));
  EXPECT_TRUE(uses_tensor_cores(C::conv_tensor_core));
  EXPECT_FALSE(uses_tensor_cores(C::gemm_cuda_core));
  EXPECT_FALSE(uses_tensor_cores(C::cast));
}

// ---- eligibility ------------------------------------------------------------------------------

TensorCoreEligibility eligibility(std::uint64_t m, std::uint64_t n, std::uint64_t k,
                                  GemmDtype dtype) {
  return tensor_core_eligibility({.m = m, .n = n, .k = k, .dtype = dtype});
}

TEST(TensorCoreEligibility, MultiplesOfTheAlignment) {
  using E = TensorCoreEligibility;
  EXPECT_EQ(eligibility(64, 256, 784, GemmDtype::fp16), E::eligible);   // 784 = 98 x 8
  EXPECT_EQ(eligibility(64, 10, 256, GemmDtype::fp16), E::misaligned);  // n = 10
  EXPECT_EQ(eligibility(63, 256, 256, GemmDtype::bf16), E::misaligned);
  EXPECT_EQ(eligibility(64, 256, 1001, GemmDtype::bf16), E::misaligned);
  EXPECT_EQ(eligibility(4, 12, 20, GemmDtype::tf32), E::eligible);  // multiples of 4
  EXPECT_EQ(eligibility(4, 12, 22, GemmDtype::tf32), E::misaligned);
  EXPECT_EQ(eligibility(16, 32, 48, GemmDtype::fp8), E::eligible);
  EXPECT_EQ(eligibility(16, 32, 40, GemmDtype::fp8),
            E::misaligned);  // 40 is a multiple of 8, not 16
  EXPECT_EQ(eligibility(16, 32, 40, GemmDtype::int8), E::misaligned);
  EXPECT_EQ(eligibility(64, 64, 64, GemmDtype::fp32), E::unsupported_dtype);
  EXPECT_EQ(tensor_core_alignment(GemmDtype::fp16), 8u);
  EXPECT_EQ(tensor_core_alignment(GemmDtype::fp32), 0u);
}

TEST(GemmRangeName, ParsesTheConvention) {
  const auto shape = parse_gemm_range_name("gemm m=64 n=10 k=256 dtype=half layer=fc3");
  ASSERT_TRUE(shape.has_value());
  EXPECT_EQ(shape->m, 64u);
  EXPECT_EQ(shape->n, 10u);
  EXPECT_EQ(shape->k, 256u);
  EXPECT_EQ(shape->dtype, GemmDtype::fp16);
  EXPECT_EQ(shape->batch, 1u);
  EXPECT_EQ(gemm_range_name(*shape), "gemm m=64 n=10 k=256 dtype=fp16");
  // A batched product names its batch; the name reads back as the same shape.
  const GemmShape batched{.m = 16, .n = 16, .k = 4, .dtype = GemmDtype::tf32, .batch = 8};
  EXPECT_EQ(gemm_range_name(batched), "gemm m=16 n=16 k=4 dtype=tf32 batch=8");
  const auto back = parse_gemm_range_name(gemm_range_name(batched));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->batch, 8u);
  EXPECT_EQ(back->m, 16u);
  EXPECT_EQ(back->dtype, GemmDtype::tf32);
  EXPECT_EQ(
      parse_gemm_range_name(gemm_range_name({.m = 1, .n = 2, .k = 3, .dtype = GemmDtype::bf16}))
          ->dtype,
      GemmDtype::bf16);
}

TEST(GemmRangeName, RejectsOtherNames) {
  EXPECT_FALSE(parse_gemm_range_name("gemm").has_value());
  EXPECT_FALSE(parse_gemm_range_name("forward").has_value());
  EXPECT_FALSE(parse_gemm_range_name("gemm m=64 n=10 dtype=fp16").has_value());  // no k
  EXPECT_FALSE(parse_gemm_range_name("gemm m=64 n=10 k=2x dtype=fp16").has_value());
  EXPECT_FALSE(parse_gemm_range_name("gemm m=64 n=10 k=2 dtype=fp12").has_value());
  EXPECT_FALSE(parse_gemm_range_name("gemm m=-1 n=10 k=2 dtype=fp16").has_value());
  EXPECT_FALSE(parse_gemm_range_name("gemm m=64 n=10 k=2 dtype=fp16 batch=0").has_value());
  EXPECT_FALSE(parse_gemm_range_name("gemm m=64 n=10 k=2 dtype=fp16 batch=two").has_value());
}

}  // namespace
}  // namespace ampbench::profile
