// What the CUDA backend would run for an op under a policy's formats, decided on the host without
// a GPU or a CUDA header: which cuBLASLt compute type and data types a GEMM gets, how a row-major
// op maps onto cuBLASLt's column-major call, and how values travel to and from the device. Plain
// C++, built in every configuration: the command line checks its arguments with it before it knows
// whether a device exists, and the CPU tests check every table here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/policy/policy.hpp"
#include "kernels/convolution_shape.hpp"  // plain data, no CUDA header
#include "kernels/device.hpp"             // plain data, no CUDA header
#include "kernels/dtype.hpp"              // likewise

namespace ampbench::backends::cuda {

// cuBLAS compute types (cublasComputeType_t) for floating-point GEMMs, named as the command line's
// --gemm-compute takes them: the enumerator's name without CUBLAS_COMPUTE_.
enum class GemmCompute {
  f32,            // 32F: fp32 accumulation; 16-bit inputs run on Tensor Cores, fp32 inputs do not
  f32_pedantic,   // 32F_PEDANTIC: fp32 arithmetic throughout, no reduced-precision shortcuts
  f32_fast_tf32,  // 32F_FAST_TF32: fp32 inputs may be converted to tf32 for Tensor Cores
  f32_fast_16f,   // 32F_FAST_16F: fp32 inputs may be converted to fp16 or tf32
  f32_fast_16bf,  // 32F_FAST_16BF: fp32 inputs may be converted to bf16 or tf32
  f16,            // 16F: fp16 arithmetic and accumulation
};
inline constexpr GemmCompute kGemmComputes[] = {
    GemmCompute::f32,          GemmCompute::f32_pedantic,  GemmCompute::f32_fast_tf32,
    GemmCompute::f32_fast_16f, GemmCompute::f32_fast_16bf, GemmCompute::f16};
std::string_view compute_name(GemmCompute c);                         // "32F_FAST_TF32"
std::optional<GemmCompute> compute_from_name(std::string_view name);  // case-insensitive
std::string compute_names();  // "32F, 32F_PEDANTIC, ..." for messages

// The element types of matrices on the device (cudaDataType_t CUDA_R_32F, _16F, _16BF).
enum class DeviceType { f32, f16, bf16 };
std::string_view device_type_name(DeviceType t);  // "32F", "16F", "16BF"
std::size_t device_type_bytes(DeviceType t);
numeric::Format device_type_format(DeviceType t);
// The element type the backend's own kernels call a device type, and back.
kernels::DType dtype_of(DeviceType t);
DeviceType device_type_of(kernels::DType t);

// A GEMM as cuBLASLt runs it: the compute type, the types of A and B and of D (no C: the audit
// measures A B alone), and why this compute type (the rule and its source, for the records).
struct GemmPlan {
  GemmCompute compute = GemmCompute::f32;
  DeviceType inputs = DeviceType::f32;
  DeviceType output = DeviceType::f32;
  std::string rule;
};

// The cast op: fp32 values rounded on the device by kernels::round_kernel.
struct CastPlan {
  numeric::Format format = numeric::formats::fp32;
  numeric::Rounding mode = numeric::Rounding::nearest_even;
};

// A convolution pass through cuDNN (conv_plan.hpp): the type of its tensors, the compute type
// (f32, or f16 for fp16 data accumulated in fp16), the math type the user allows, and the rule
// that chose them (for the records).
struct ConvPlan {
  kernels::ConvolutionPass pass = kernels::ConvolutionPass::forward;
  DeviceType data = DeviceType::f32;
  DeviceType compute = DeviceType::f32;
  kernels::ConvolutionMath math = kernels::ConvolutionMath::default_math;
  std::string rule;
};

// An op the backend runs with its own kernels (kernels/op_kernels.hpp): the element type every
// operand and the output have on the device, the launchers it calls, and its arithmetic. The
// kernels compute in binary32 whatever the policy's compute and accumulation formats, as PyTorch's
// CUDA kernels compute half and bfloat16 in fp32 "opmath"; `arithmetic` says so when the policy
// asks for narrower ones (docs/cuda-backend.md).
struct OpKernelPlan {
  DeviceType type = DeviceType::f32;
  std::string launchers;  // "ampbench::kernels::layer_norm, ampbench::kernels::layer_norm_backward"
  std::string arithmetic;  // "binary32", or "binary32 internally (...)"
};

// Attention or one of its gradients as the training ops run it (CudaOps::attention and
// attention_backward, training_ops.hpp): scores, probabilities and their gradients in the compute
// format, the products through cuBLASLt (their plans here) and the softmax and its backward
// through the backend's kernels, as the CPU emulation's fused kernel computes. The audit judges
// the code the trainer runs.
struct AttentionPlan {
  policy::OpPrecision precision;  // the attention's, resolved
  GemmPlan input_products;        // Q K^T and dO V^T: A and B in the input format
  GemmPlan compute_products;      // P V, dS K, dS^T Q, P^T dO: A and B in the compute format
};

struct Plan {
  enum class Kind { gemm, cast, convolution, op_kernel, attention };
  Kind kind = Kind::gemm;
  GemmPlan gemm;            // kind == gemm
  CastPlan cast;            // kind == cast
  ConvPlan convolution;     // kind == convolution
  OpKernelPlan op_kernel;   // kind == op_kernel
  AttentionPlan attention;  // kind == attention
};

// The plan of `op` under `precision` (audit::precision_of), with `compute` replacing the policy's
// compute type for GEMMs and `conv_math` the policy's cuDNN math type for convolutions when
// given; or why the CUDA backend cannot run it, as one sentence that names the op, the formats
// and what would be needed. Ops without a GPU implementation yet say so.
struct Planning {
  std::optional<Plan> plan;
  std::string reason;  // set when plan is empty
};
Planning plan(const ops::OpInfo& op, const policy::OpPrecision& precision,
              std::optional<GemmCompute> compute = std::nullopt,
              std::optional<kernels::ConvolutionMath> conv_math = std::nullopt);
// The same for a case of `shape`: besides, the refusal of a shape the device's kernel does not
// take (attention runs self-attention, L = S, as the trainer's does).
Planning plan(const ops::OpInfo& op, const ops::Shape& shape, const policy::OpPrecision& precision,
              std::optional<GemmCompute> compute = std::nullopt,
              std::optional<kernels::ConvolutionMath> conv_math = std::nullopt);

// One matrix product of attention under its resolved precision `attention`: A and B in `inputs`
// (its input format, or its compute format for the products that read the probabilities or the
// score gradients), D in the compute format, as the emulation keeps scores, probabilities and
// unscaled gradients.
policy::OpPrecision attention_product(const policy::OpPrecision& attention,
                                      const numeric::Format& inputs);

// The ops the CUDA backend runs, in catalog order: "gemm, bmm, dot, sum, mean, ...".
std::string supported_ops();

// The device type that holds a format's values as they are (tf32 values are binary32 values), and
// the one a result format is stored in (the same values and IEEE overflow to infinity); or none.
std::optional<DeviceType> holding_type(const numeric::Format& f);
std::optional<DeviceType> output_type(const numeric::Format& f);
// A refusal of `op` under `p`: "op (X inputs, Y accumulation, Z output): why".
Planning not_planned(const ops::OpInfo& op, const policy::OpPrecision& p, const std::string& why);

// A matrix operand of cuBLASLt's column-major call: which of the op's operands (ops::operands
// order) it is, its stored shape (rows x cols, column-major, leading dimension ld) and whether the
// call transposes it.
struct LtOperand {
  std::size_t operand = 0;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::int64_t ld = 0;
  bool transposed = false;
};

// The column-major call D = op(A) op(B), D m x n with leading dimension m, that computes a
// row-major op of the catalog: a row-major matrix is the column-major storage of its transpose,
// so a row-major C = X Y is computed as C^T = Y^T X^T. bmm is one strided-batched call.
struct GemmCall {
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  LtOperand a;
  LtOperand b;
  std::int32_t batch = 1;
  std::int64_t stride_a = 0;  // elements from one batch's matrix to the next (0: one matrix)
  std::int64_t stride_b = 0;
  std::int64_t stride_d = 0;
};
// For gemm, bmm, dot (a 1 x 1 x N GEMM) and the two gemm gradients; std::invalid_argument for the
// other ops and for sizes beyond cuBLASLt's 32-bit batch count.
GemmCall gemm_call(const ops::OpInfo& op, const ops::Shape& shape);

// Values of a format that `type` holds, as the device stores them (binary32 or 16-bit patterns in
// the host's byte order, which is the device's). std::invalid_argument names the first value the
// type does not hold exactly: the audit's operands are values of the policy's input format, and
// converting them must not round.
std::vector<std::byte> to_device(std::span<const double> values, DeviceType type);
// The values stored as `type` in `bytes`; exact.
std::vector<double> from_device(std::span<const std::byte> bytes, DeviceType type);

// What the audit's records say of the device a CUDA case ran on: its name and compute capability,
// the driver, CUDA runtime, cuBLAS and cuDNN versions, and `nvidia_tf32_override`: the value of
// NVIDIA_TF32_OVERRIDE (null when unset), which at "0" turns TF32 off in cuBLAS and cuDNN whatever
// a policy asks for (the process's environment unless given).
nlohmann::json device_record(const kernels::DeviceStatus& device,
                             const kernels::LibraryVersions& versions,
                             const char* tf32_override = std::getenv("NVIDIA_TF32_OVERRIDE"));

}  // namespace ampbench::backends::cuda
