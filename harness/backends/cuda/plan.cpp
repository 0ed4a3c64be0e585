#include "harness/backends/cuda/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "harness/backends/cuda/conv_plan.hpp"
#include "harness/numeric/options.hpp"

namespace ampbench::backends::cuda {
namespace {

namespace formats = numeric::formats;

// PyTorch's GEMMs through cuBLASLt (bgemm_internal_cublaslt and gemm_and_bias in
// aten/src/ATen/cuda/CUDABlas.cpp): float runs CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32
// when allowTF32CuBLAS() (torch.backends.cuda.matmul.allow_tf32); Half and BFloat16 keep
// CUBLAS_COMPUTE_32F with CUDA_R_16F / CUDA_R_16BF A, B and C and an fp32 scale type.
constexpr const char* kPytorchSource = "PyTorch, aten/src/ATen/cuda/CUDABlas.cpp";

bool is_gemm_op(ops::Op op) {
  return op == ops::Op::gemm || op == ops::Op::bmm || op == ops::Op::dot ||
         op == ops::Op::gemm_backward_a || op == ops::Op::gemm_backward_b || op == ops::Op::linear;
}

bool is_fast(GemmCompute c) {
  return c == GemmCompute::f32_fast_tf32 || c == GemmCompute::f32_fast_16f ||
         c == GemmCompute::f32_fast_16bf;
}

struct ComputeChoice {
  std::optional<GemmCompute> compute;
  std::string text;  // the rule when chosen, why not otherwise
};

// The compute type PyTorch (or, for fp16 accumulation, cuBLAS's own half GEMM) uses for these
// formats.
ComputeChoice default_compute(const policy::OpPrecision& p) {
  if (numeric::same_values(p.accumulate, formats::fp32)) {
    if (numeric::same_values(p.input, formats::tf32)) {
      return {GemmCompute::f32_fast_tf32,
              fmt::format("tf32 inputs, fp32 accumulation: 32F_FAST_TF32 on fp32 A and B, as "
                          "PyTorch with allow_tf32 ({})",
                          kPytorchSource)};
    }
    if (numeric::same_values(p.input, formats::fp32)) {
      return {GemmCompute::f32,
              fmt::format("fp32 inputs and accumulation: 32F, as PyTorch's float GEMM without "
                          "TF32 ({})",
                          kPytorchSource)};
    }
    return {GemmCompute::f32,
            fmt::format("{} inputs, fp32 accumulation: 32F with {} A and B, as PyTorch's "
                        "Half/BFloat16 GEMM ({})",
                        p.input.name, p.input.name, kPytorchSource)};
  }
  if (numeric::same_values(p.accumulate, formats::fp16) &&
      numeric::same_values(p.input, formats::fp16)) {
    return {GemmCompute::f16,
            "fp16 inputs and accumulation: 16F, cuBLAS's half-precision compute type (that of "
            "cublasHgemm; PyTorch never chooses it)"};
  }
  return {std::nullopt,
          fmt::format("cuBLAS has no compute type that accumulates {} inputs in {} (its "
                      "floating-point ones accumulate in fp16, fp32 or fp64); --gemm-compute "
                      "chooses one",
                      p.input.name, p.accumulate.name)};
}

// The output types cuBLAS allows with a compute type and A/B type (the tables of supported types
// of cublasGemmEx and cublasLtMatmul in the cuBLAS documentation).
std::vector<DeviceType> allowed_outputs(GemmCompute c, DeviceType inputs) {
  if (c == GemmCompute::f16) return {DeviceType::f16};
  if (is_fast(c) || inputs == DeviceType::f32) return {DeviceType::f32};
  return {inputs, DeviceType::f32};
}

std::string type_list(const std::vector<DeviceType>& types) {
  std::string s;
  for (const DeviceType t : types)
    s += fmt::format("{}{}", s.empty() ? "" : " or ", device_type_name(t));
  return s;
}

Planning plan_gemm(const ops::OpInfo& op, const policy::OpPrecision& p,
                   std::optional<GemmCompute> requested) {
  const std::optional<DeviceType> held = holding_type(p.input);
  if (!held) {
    return not_planned(op, p, "cuBLASLt GEMMs here take fp32, tf32, fp16 or bf16 inputs");
  }
  const std::optional<DeviceType> out = output_type(p.output);
  if (!out) return not_planned(op, p, "cuBLASLt GEMMs here write fp32, fp16 or bf16 outputs");

  GemmPlan g;
  if (requested) {
    g.compute = *requested;
    g.rule = fmt::format("{} chosen with --gemm-compute", compute_name(*requested));
  } else {
    ComputeChoice choice = default_compute(p);
    if (!choice.compute) return not_planned(op, p, choice.text);
    g.compute = *choice.compute;
    g.rule = std::move(choice.text);
  }
  // The FAST types take fp32 A and B (the library converts them itself): narrower inputs widen
  // exactly. 16F takes fp16 A and B only.
  g.inputs = is_fast(g.compute) ? DeviceType::f32 : *held;
  if (g.compute == GemmCompute::f16 && g.inputs != DeviceType::f16) {
    return not_planned(op, p, "16F takes fp16 A and B (cuBLAS's table of supported types)");
  }
  const std::vector<DeviceType> outputs = allowed_outputs(g.compute, g.inputs);
  if (std::find(outputs.begin(), outputs.end(), *out) == outputs.end()) {
    return not_planned(op, p,
                       fmt::format("{} with {} A and B writes a {} D (cuBLAS's table of supported "
                                   "types), not {}",
                                   compute_name(g.compute), device_type_name(g.inputs),
                                   type_list(outputs), device_type_name(*out)));
  }
  g.output = *out;
  if (op.op == ops::Op::dot) g.rule = "as a 1 x 1 x N GEMM; " + g.rule;
  Plan plan;
  plan.gemm = std::move(g);
  return {std::move(plan), {}};
}

Planning plan_cast(const ops::OpInfo& op, const policy::OpPrecision& p) {
  if (numeric::is_stochastic(p.mode)) {
    return not_planned(op, p,
                       fmt::format("the audit's reference does not replay the device's stochastic "
                                   "draws ({})",
                                   numeric::rounding_name(p.mode)));
  }
  const numeric::RoundingOptions options{p.output, p.mode, 0, numeric::Container::binary32};
  if (const numeric::Validation v = numeric::validate(options); !v.ok()) {
    return not_planned(op, p, "the rounding kernel takes binary32 inputs: " + v.errors.front());
  }
  Plan plan;
  plan.kind = Plan::Kind::cast;
  plan.cast = CastPlan{p.output, p.mode};
  return {std::move(plan), {}};
}

// ---- the backend's own op kernels (kernels/op_kernels.hpp)
// ---------------------------------------

// The launchers each op calls, in order; null for the ops without one.
const char* op_kernel_launchers(ops::Op op) {
  switch (op) {
    case ops::Op::sum:
    case ops::Op::mean:
    case ops::Op::l2_norm: return "ampbench::kernels::reduce";
    case ops::Op::softmax:
    case ops::Op::log_softmax:
    case ops::Op::logsumexp: return "ampbench::kernels::softmax";
    case ops::Op::layer_norm: return "ampbench::kernels::layer_norm";
    case ops::Op::rms_norm: return "ampbench::kernels::rms_norm";
    case ops::Op::relu:
    case ops::Op::gelu:
    case ops::Op::gelu_tanh:
    case ops::Op::silu: return "ampbench::kernels::bias_activation";
    case ops::Op::cross_entropy:
      return "ampbench::kernels::cross_entropy, ampbench::kernels::cast (the binary32 loss)";
    case ops::Op::add: return "ampbench::kernels::add";
    case ops::Op::mul: return "ampbench::kernels::mul";
    case ops::Op::fma: return "ampbench::kernels::fma";
    case ops::Op::softmax_backward: return "ampbench::kernels::softmax_backward";
    case ops::Op::log_softmax_backward: return "ampbench::kernels::log_softmax_backward";
    case ops::Op::cross_entropy_backward: return "ampbench::kernels::cross_entropy_backward";
    case ops::Op::relu_backward:
    case ops::Op::gelu_backward:
    case ops::Op::gelu_tanh_backward:
    case ops::Op::silu_backward: return "ampbench::kernels::activation_backward";
    case ops::Op::layer_norm_backward:
    case ops::Op::layer_norm_backward_gamma:
    case ops::Op::layer_norm_backward_beta:
      return "ampbench::kernels::layer_norm (mean and rstd), "
             "ampbench::kernels::layer_norm_backward";
    // The training ops' kernels (kernels/cnn_kernels.hpp, kernels::column_sums): what the trainer
    // runs on the device, judged by the audit as every other op.
    case ops::Op::batch_norm: return "ampbench::kernels::batch_norm";
    case ops::Op::batch_norm_backward:
    case ops::Op::batch_norm_backward_gamma:
    case ops::Op::batch_norm_backward_beta: return "ampbench::kernels::batch_norm_backward";
    case ops::Op::mean_pool: return "ampbench::kernels::mean_rows";
    case ops::Op::mean_pool_backward: return "ampbench::kernels::mean_rows_backward";
    case ops::Op::linear_backward_bias: return "ampbench::kernels::column_sums";
    default: return nullptr;
  }
}

// The op kernels take one element type for every operand and the output, round to nearest even
// and compute in binary32: the policy's formats decide the type, and whether binary32 is the
// policy's arithmetic or wider than it.
Planning plan_op_kernel(const ops::OpInfo& op, const policy::OpPrecision& p) {
  if (p.mode != numeric::Rounding::nearest_even) {
    return not_planned(op, p,
                       fmt::format("the op kernels round to nearest even, not {}",
                                   numeric::rounding_name(p.mode)));
  }
  const std::optional<DeviceType> held = holding_type(p.input);
  if (!held) return not_planned(op, p, "the op kernels read fp32, fp16 or bf16 values");
  const std::optional<DeviceType> out = output_type(p.output);
  if (!out) {
    return not_planned(op, p,
                       "the op kernels write fp32, fp16 or bf16 values (overflowing to infinity)");
  }
  // One element type for inputs and output: the output's when it holds the inputs' values (fp16
  // data into an fp32 result widens exactly), which rounds the result once, as the policy asks.
  if (*held != *out && *out != DeviceType::f32) {
    return not_planned(
        op, p,
        fmt::format("the op kernels read and write one element type, and {} does not hold {} "
                    "values",
                    p.output.name, p.input.name));
  }
  for (const auto& [format, role] :
       {std::pair{&p.compute, "compute"}, std::pair{&p.accumulate, "accumulation"}}) {
    if (!policy::contains(formats::fp32, *format)) {
      return not_planned(op, p,
                         fmt::format("the op kernels compute in binary32, narrower than the "
                                     "policy's {} {}",
                                     format->name, role));
    }
  }
  Plan plan;
  plan.kind = Plan::Kind::op_kernel;
  plan.op_kernel.type = *out;
  plan.op_kernel.launchers = op_kernel_launchers(op.op);
  const bool binary32 = numeric::same_values(p.compute, formats::fp32) &&
                        numeric::same_values(p.accumulate, formats::fp32);
  plan.op_kernel.arithmetic =
      binary32 ? "binary32"
               : fmt::format(
                     "binary32 internally: the policy's {} compute and {} accumulation "
                     "are not emulated (PyTorch's CUDA kernels compute half and bfloat16 "
                     "in fp32 opmath)",
                     p.compute.name, p.accumulate.name);
  return {std::move(plan), {}};
}

// A row-major R x C matrix, stored column-major: C x R with leading dimension C.
LtOperand row_major(std::size_t operand, std::uint64_t rows, std::uint64_t cols, bool transposed) {
  return {operand, cols, rows, static_cast<std::int64_t>(cols), transposed};
}

bool is_attention_op(ops::Op op) {
  return op == ops::Op::attention || op == ops::Op::attention_backward_q ||
         op == ops::Op::attention_backward_k || op == ops::Op::attention_backward_v;
}

// Attention as the training ops run it (AttentionPlan): the inputs go to cuBLASLt in a type that
// holds them (tf32 inputs as binary32 values rounded by kernels::round_to_tf32, which cuBLASLt's
// binary32 products then read exactly); the scores, probabilities and gradients live in the
// compute format, which a device type must hold as it is; the kernels round to nearest even; and
// cuBLASLt must run both kinds of product.
Planning plan_attention(const ops::OpInfo& op, const policy::OpPrecision& p) {
  const auto exact = [](const numeric::Format& f) {
    const std::optional<DeviceType> held = holding_type(f);
    return held && numeric::same_values(device_type_format(*held), f);
  };
  if (!(exact(p.input) || numeric::same_values(p.input, formats::tf32)) || !exact(p.compute)) {
    return not_planned(op, p,
                       fmt::format("the device's attention reads fp32, tf32, fp16 and bf16 inputs "
                                   "and computes in fp32, fp16 or bf16, not {} inputs in {}",
                                   p.input.name, p.compute.name));
  }
  if (!output_type(p.output)) {
    return not_planned(op, p, "the device's attention writes fp32, fp16 or bf16 values");
  }
  for (const numeric::Rounding mode : {p.mode, p.input_mode}) {
    if (mode != numeric::Rounding::nearest_even) {
      return not_planned(op, p,
                         fmt::format("the device's attention rounds to nearest even, not {}",
                                     numeric::rounding_name(mode)));
    }
  }
  Plan plan;
  plan.kind = Plan::Kind::attention;
  plan.attention.precision = p;
  const ops::OpInfo& bmm = *ops::find_op("bmm");
  for (const auto& [inputs, product] : {std::pair{p.input, &plan.attention.input_products},
                                        std::pair{p.compute, &plan.attention.compute_products}}) {
    Planning planned = plan_gemm(bmm, attention_product(p, inputs), std::nullopt);
    if (!planned.plan) return not_planned(op, p, "its products: " + planned.reason);
    *product = std::move(planned.plan->gemm);
  }
  return {std::move(plan), {}};
}

}  // namespace

std::optional<DeviceType> holding_type(const numeric::Format& f) {
  if (numeric::same_values(f, formats::fp32) || numeric::same_values(f, formats::tf32)) {
    return DeviceType::f32;
  }
  if (numeric::same_values(f, formats::fp16)) return DeviceType::f16;
  if (numeric::same_values(f, formats::bf16)) return DeviceType::bf16;
  return std::nullopt;
}

// cuBLAS converts D, and cuDNN its output, with IEEE overflow to infinity.
kernels::DType dtype_of(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return kernels::DType::f32;
    case DeviceType::f16: return kernels::DType::f16;
    case DeviceType::bf16: return kernels::DType::bf16;
  }
  throw std::logic_error("unknown device type");
}

DeviceType device_type_of(kernels::DType t) {
  switch (t) {
    case kernels::DType::f32: return DeviceType::f32;
    case kernels::DType::f16: return DeviceType::f16;
    case kernels::DType::bf16: return DeviceType::bf16;
  }
  throw std::logic_error("unknown element type");
}

std::optional<DeviceType> output_type(const numeric::Format& f) {
  for (const DeviceType t : {DeviceType::f32, DeviceType::f16, DeviceType::bf16}) {
    if (numeric::same_format(f, device_type_format(t))) return t;
  }
  return std::nullopt;
}

Planning not_planned(const ops::OpInfo& op, const policy::OpPrecision& p, const std::string& why) {
  return {std::nullopt, fmt::format("{} ({} inputs, {} accumulation, {} output): {}", op.name,
                                    p.input.name, p.accumulate.name, p.output.name, why)};
}

std::string_view compute_name(GemmCompute c) {
  switch (c) {
    case GemmCompute::f32: return "32F";
    case GemmCompute::f32_pedantic: return "32F_PEDANTIC";
    case GemmCompute::f32_fast_tf32: return "32F_FAST_TF32";
    case GemmCompute::f32_fast_16f: return "32F_FAST_16F";
    case GemmCompute::f32_fast_16bf: return "32F_FAST_16BF";
    case GemmCompute::f16: return "16F";
  }
  return "?";
}

std::optional<GemmCompute> compute_from_name(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  for (const GemmCompute c : kGemmComputes) {
    if (compute_name(c) == upper) return c;
  }
  return std::nullopt;
}

std::string compute_names() {
  std::string s;
  for (const GemmCompute c : kGemmComputes)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", compute_name(c));
  return s;
}

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return "32F";
    case DeviceType::f16: return "16F";
    case DeviceType::bf16: return "16BF";
  }
  return "?";
}

std::size_t device_type_bytes(DeviceType t) {
  return t == DeviceType::f32 ? 4 : 2;
}

numeric::Format device_type_format(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return formats::fp32;
    case DeviceType::f16: return formats::fp16;
    case DeviceType::bf16: return formats::bf16;
  }
  return formats::fp32;
}

policy::OpPrecision attention_product(const policy::OpPrecision& attention,
                                      const numeric::Format& inputs) {
  policy::OpPrecision product = attention;
  product.input = inputs;
  product.output = attention.compute;
  return product;
}

Planning plan(const ops::OpInfo& op, const policy::OpPrecision& precision,
              std::optional<GemmCompute> compute,
              std::optional<kernels::ConvolutionMath> conv_math) {
  if (is_gemm_op(op.op)) return plan_gemm(op, precision, compute);
  if (op.op == ops::Op::cast) return plan_cast(op, precision);
  if (convolution_pass(op.op)) return plan_convolution(op, precision, conv_math);
  if (op_kernel_launchers(op.op) != nullptr) return plan_op_kernel(op, precision);
  if (is_attention_op(op.op)) return plan_attention(op, precision);
  return {std::nullopt, fmt::format("{} has no CUDA implementation yet (the CUDA backend runs {})",
                                    op.name, supported_ops())};
}

Planning plan(const ops::OpInfo& op, const ops::Shape& shape, const policy::OpPrecision& precision,
              std::optional<GemmCompute> compute,
              std::optional<kernels::ConvolutionMath> conv_math) {
  if (is_attention_op(op.op) && shape.sizes.size() == 3 && shape.sizes[0] != shape.sizes[1]) {
    return not_planned(op, precision,
                       fmt::format("the device's attention is the trainer's self-attention, with "
                                   "as many keys as queries (L = S), not {} queries and {} keys",
                                   shape.sizes[0], shape.sizes[1]));
  }
  return plan(op, precision, compute, conv_math);
}

std::string supported_ops() {
  std::string names;
  for (const ops::OpInfo& op : ops::catalog()) {
    if (is_gemm_op(op.op) || op.op == ops::Op::cast || convolution_pass(op.op) ||
        op_kernel_launchers(op.op) != nullptr || is_attention_op(op.op)) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", op.name);
    }
  }
  return names;
}

GemmCall gemm_call(const ops::OpInfo& op, const ops::Shape& shape) {
  const auto& s = shape.sizes;
  GemmCall call;
  switch (op.op) {
    case ops::Op::linear:  // x W as gemm's A B; the bias is the epilogue's (kernel.cpp)
    case ops::Op::gemm:    // C (M x N) = A (M x K) B (K x N): C^T = B^T A^T
      call.m = s[1];
      call.n = s[0];
      call.k = s[2];
      call.a = row_major(1, s[2], s[1], false);
      call.b = row_major(0, s[0], s[2], false);
      break;
    case ops::Op::bmm: {  // the same per batch, matrices one after another
      call.m = s[2];
      call.n = s[1];
      call.k = s[3];
      call.a = row_major(1, s[3], s[2], false);
      call.b = row_major(0, s[1], s[3], false);
      if (s[0] > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        throw std::invalid_argument(
            fmt::format("bmm: {} batches exceed cuBLASLt's batch count", s[0]));
      }
      call.batch = static_cast<std::int32_t>(s[0]);
      call.stride_a = static_cast<std::int64_t>(s[3] * s[2]);
      call.stride_b = static_cast<std::int64_t>(s[1] * s[3]);
      call.stride_d = static_cast<std::int64_t>(s[1] * s[2]);
      break;
    }
    case ops::Op::dot:  // a (1 x N) b (N x 1)
      call.m = 1;
      call.n = 1;
      call.k = s[0];
      call.a = {0, 1, s[0], 1, false};
      call.b = {1, s[0], 1, static_cast<std::int64_t>(s[0]), false};
      break;
    case ops::Op::gemm_backward_a:  // dA (M x K) = dY (M x N) B^T, B K x N: dA^T = B dY^T
      call.m = s[2];
      call.n = s[0];
      call.k = s[1];
      call.a = row_major(1, s[2], s[1], true);
      call.b = row_major(0, s[0], s[1], false);
      break;
    case ops::Op::gemm_backward_b:  // dB (K x N) = A^T dY, A M x K, dY M x N: dB^T = dY^T A
      call.m = s[1];
      call.n = s[2];
      call.k = s[0];
      call.a = row_major(1, s[0], s[1], false);
      call.b = row_major(0, s[0], s[2], true);
      break;
    default:
      throw std::invalid_argument(fmt::format("{} is not a GEMM of the CUDA backend", op.name));
  }
  return call;
}

std::vector<std::byte> to_device(std::span<const double> values, DeviceType type) {
  const std::size_t size = device_type_bytes(type);
  std::vector<std::byte> bytes(values.size() * size);
  const numeric::Format format = device_type_format(type);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    bool exact = false;
    if (type == DeviceType::f32) {
      const auto f = static_cast<float>(v);
      exact = static_cast<double>(f) == v || (std::isnan(v) && std::isnan(f));
      std::memcpy(&bytes[i * size], &f, size);
    } else {
      const numeric::Rounded r = numeric::round_to(format, numeric::Rounding::nearest_even, v, 0);
      exact = r.value == v || (std::isnan(v) && std::isnan(r.value));
      const auto bits = static_cast<std::uint16_t>(r.bits);
      std::memcpy(&bytes[i * size], &bits, size);
    }
    if (!exact) {
      throw std::invalid_argument(
          fmt::format("element {} ({}) is not a {} value", i, v, format.name));
    }
  }
  return bytes;
}

std::vector<double> from_device(std::span<const std::byte> bytes, DeviceType type) {
  const std::size_t size = device_type_bytes(type);
  std::vector<double> values(bytes.size() / size);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (type == DeviceType::f32) {
      float f = 0;
      std::memcpy(&f, &bytes[i * size], size);
      values[i] = f;
    } else {
      std::uint16_t bits = 0;
      std::memcpy(&bits, &bytes[i * size], size);
      values[i] = numeric::decode(device_type_format(type), bits);
    }
  }
  return values;
}

nlohmann::json device_record(const kernels::DeviceStatus& device,
                             const kernels::LibraryVersions& versions, const char* tf32_override) {
  const auto version = [](const kernels::Version& v) {
    return fmt::format("{}.{}.{}", v.major, v.minor, v.patch);
  };
  return {{"name", device.name},
          {"compute_capability", fmt::format("{}.{}", device.compute_major, device.compute_minor)},
          {"driver", version(versions.cuda_driver)},
          {"cuda_runtime", version(versions.cuda_runtime)},
          {"cublas", version(versions.cublas)},
          {"cudnn", version(versions.cudnn)},
          {"nvidia_tf32_override",
           tf32_override == nullptr ? nlohmann::json(nullptr) : nlohmann::json(tf32_override)}};
}

}  // namespace ampbench::backends::cuda
