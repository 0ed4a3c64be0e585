#include "harness/backends/cuda/kernel.hpp"

#include <cublasLt.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/numeric/options.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/op_kernels.hpp"
#include "kernels/rounding_kernels.cuh"

namespace ampbench::backends::cuda {
namespace {

// The scratch memory cuBLASLt may use: its heuristic offers only algorithms that fit, and split-K
// ones need some.
constexpr std::uint64_t kWorkspaceBytes = std::uint64_t{32} << 20;

// An owned cuBLASLt object: destroyed once; a failure to destroy is logged, never thrown.
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
using LtHandle = LtObject<cublasLtHandle_t, cublasLtDestroy>;
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

kernels::DeviceBuffer<std::byte> on_device(const std::vector<std::byte>& host) {
  kernels::DeviceBuffer<std::byte> buffer(host.size());
  buffer.copy_from(host);
  return buffer;
}

std::vector<double> run_gemm(const GemmCall& call, const GemmPlan& plan, const ops::Inputs& in,
                             nlohmann::json* detail) {
  const kernels::DeviceBuffer<std::byte> a =
      on_device(to_device(in.values.at(call.a.operand), plan.inputs));
  const kernels::DeviceBuffer<std::byte> b =
      on_device(to_device(in.values.at(call.b.operand), plan.inputs));
  kernels::DeviceBuffer<std::byte> d(call.m * call.n * static_cast<std::uint64_t>(call.batch) *
                                     device_type_bytes(plan.output));

  LtHandle handle;
  AMPBENCH_CUBLAS_CHECK(cublasLtCreate(handle.out()));
  // The scale type (of alpha and beta) is the compute type's: fp16 for 16F, fp32 otherwise.
  const bool half_scale = plan.compute == GemmCompute::f16;
  MatmulDesc desc;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulDescCreate(desc.out(), compute_type(plan.compute),
                                                 half_scale ? CUDA_R_16F : CUDA_R_32F));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA,
      static_cast<std::int32_t>(call.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  set(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB,
      static_cast<std::int32_t>(call.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N));
  Layout a_layout, b_layout, d_layout;
  make_layout(a_layout, plan.inputs, call.a.rows, call.a.cols, call.a.ld, call.batch,
              call.stride_a);
  make_layout(b_layout, plan.inputs, call.b.rows, call.b.cols, call.b.ld, call.batch,
              call.stride_b);
  make_layout(d_layout, plan.output, call.m, call.n, static_cast<std::int64_t>(call.m), call.batch,
              call.stride_d);

  // No reduction-scheme mask: PyTorch sets one only when the user disallows reduced-precision
  // split-K reductions (allow_fp16_reduced_precision_reduction, default allowed).
  Preference preference;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(preference.out()));
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
      sizeof kWorkspaceBytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(
      handle.get(), desc.get(), a_layout.get(), b_layout.get(), d_layout.get(), d_layout.get(),
      preference.get(), 1, &heuristic, &found));
  if (found == 0) {
    throw std::runtime_error(fmt::format(
        "cuBLASLt has no algorithm for a {}x{}x{} GEMM (batch {}) with compute type {}, {} A "
        "and B, {} D",
        call.m, call.n, call.k, call.batch, compute_name(plan.compute),
        device_type_name(plan.inputs), device_type_name(plan.output)));
  }
  kernels::DeviceBuffer<std::byte> workspace(heuristic.workspaceSize);
  const float one = 1.0F, zero = 0.0F;
  const std::uint16_t half_one = 0x3C00, half_zero = 0;  // binary16 1 and 0
  const void* alpha = half_scale ? static_cast<const void*>(&half_one) : &one;
  const void* beta = half_scale ? static_cast<const void*>(&half_zero) : &zero;
  AMPBENCH_CUBLAS_CHECK(cublasLtMatmul(handle.get(), desc.get(), alpha, a.data(), a_layout.get(),
                                       b.data(), b_layout.get(), beta, d.data(), d_layout.get(),
                                       d.data(), d_layout.get(), &heuristic.algo, workspace.data(),
                                       heuristic.workspaceSize, nullptr));
  std::vector<std::byte> out(d.size());
  d.copy_to(out);  // on the default stream: waits for the matmul and reports its faults

  if (detail != nullptr) {
    const cublasLtMatmulAlgo_t& algo = heuristic.algo;
    *detail = {{"library", "cuBLASLt"},
               {"compute_type", fmt::format("CUBLAS_COMPUTE_{}", compute_name(plan.compute))},
               {"a_b_type", fmt::format("CUDA_R_{}", device_type_name(plan.inputs))},
               {"d_type", fmt::format("CUDA_R_{}", device_type_name(plan.output))},
               {"rule", plan.rule},
               {"algorithm",
                {{"id", get<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID)},
                 {"tile", get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)},
                 {"stages", get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
                 {"split_k", get<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
                 {"reduction",
                  reduction_name(get<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME))},
                 {"workspace_bytes", heuristic.workspaceSize}}}};
  }
  return from_device(out, plan.output);
}

std::vector<double> run_cast(const CastPlan& plan, const ops::Inputs& in, nlohmann::json* detail) {
  const std::vector<double>& x = in.values.at(0);
  std::vector<float> binary32(x.size());  // the cast's inputs are fp32 values: exact
  for (std::size_t i = 0; i < x.size(); ++i) binary32[i] = static_cast<float>(x[i]);
  std::vector<std::uint64_t> bits(x.size());
  std::vector<float> values(x.size());
  kernels::round_on_device({plan.format, plan.mode}, binary32, bits, values);
  if (detail != nullptr) {
    *detail = {{"kernel", "ampbench::kernels::round_kernel"},
               {"format", plan.format.name},
               {"mode", numeric::rounding_name(plan.mode)}};
  }
  std::vector<double> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return out;
}

// ---- the backend's own op kernels ---------------------------------------------------------------

// The catalog's epsilons (harness/ops/catalog.cpp: torch.nn.LayerNorm's default, and rms_norm's).
constexpr float kLayerNormEps = 1e-5F;
constexpr float kRmsNormEps = 1e-6F;

kernels::DType dtype_of(DeviceType t) {
  switch (t) {
    case DeviceType::f32: return kernels::DType::f32;
    case DeviceType::f16: return kernels::DType::f16;
    case DeviceType::bf16: return kernels::DType::bf16;
  }
  throw std::logic_error("unknown device type");
}

kernels::Activation activation_of(ops::Op op) {
  switch (op) {
    case ops::Op::relu:
    case ops::Op::relu_backward: return kernels::Activation::relu;
    case ops::Op::gelu:
    case ops::Op::gelu_backward: return kernels::Activation::gelu;
    case ops::Op::gelu_tanh:
    case ops::Op::gelu_tanh_backward: return kernels::Activation::gelu_tanh;
    case ops::Op::silu:
    case ops::Op::silu_backward: return kernels::Activation::silu;
    default: throw std::logic_error("not an activation op");
  }
}

// The operands of one run on the device: values exactly as the plan's type, indices as int64.
class DeviceOperands {
 public:
  DeviceOperands(const ops::Inputs& in, DeviceType type) {
    static const std::vector<std::int64_t> kNoIndices;
    for (std::size_t i = 0; i < in.values.size(); ++i) {
      values_.push_back(on_device(to_device(in.values[i], type)));
      const std::vector<std::int64_t>& indices = i < in.indices.size() ? in.indices[i] : kNoIndices;
      kernels::DeviceBuffer<std::int64_t> index_buffer(indices.size());
      index_buffer.copy_from(indices);
      indices_.push_back(std::move(index_buffer));
    }
  }
  const void* values(std::size_t i) const { return values_.at(i).data(); }
  const std::int64_t* indices(std::size_t i) const { return indices_.at(i).data(); }

 private:
  std::vector<kernels::DeviceBuffer<std::byte>> values_;
  std::vector<kernels::DeviceBuffer<std::int64_t>> indices_;
};

// Layer norm's backward ops: the forward's statistics, then the gradient this op reports.
void run_layer_norm_backward(ops::Op op, kernels::DType type, const DeviceOperands& d, void* out,
                             std::size_t rows, std::size_t cols) {
  kernels::DeviceBuffer<std::byte> y(rows * cols * kernels::dtype_bytes(type));
  kernels::DeviceBuffer<float> mean(rows), rstd(rows);
  const void* gamma = op == ops::Op::layer_norm_backward ? d.values(2) : nullptr;
  kernels::layer_norm(type, d.values(0), gamma, nullptr, y.data(), mean.data(), rstd.data(), rows,
                      cols, kLayerNormEps, nullptr);
  kernels::layer_norm_backward(type, d.values(0), d.values(1), gamma, mean.data(), rstd.data(),
                               op == ops::Op::layer_norm_backward ? out : nullptr,
                               op == ops::Op::layer_norm_backward_gamma ? out : nullptr,
                               op == ops::Op::layer_norm_backward_beta ? out : nullptr, rows, cols,
                               nullptr);
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // before the statistics are freed
}

// Enqueues the op's launchers on the default stream, writing the output to `out`.
void launch_op_kernel(ops::Op op, const ops::Shape& shape, kernels::DType type,
                      const DeviceOperands& d, void* out) {
  const auto& s = shape.sizes;
  const std::size_t rows = s[0], cols = s.size() > 1 ? s[1] : 1, n = rows * cols;
  const auto softmax = [&](kernels::RowSoftmax what) {
    kernels::softmax(type, what, d.values(0), out, rows, cols, nullptr);
  };
  const auto reduce = [&](kernels::Reduction what) {
    kernels::reduce(type, what, d.values(0), out, n, nullptr);
  };
  switch (op) {
    case ops::Op::sum: reduce(kernels::Reduction::sum); return;
    case ops::Op::mean: reduce(kernels::Reduction::mean); return;
    case ops::Op::l2_norm: reduce(kernels::Reduction::l2_norm); return;
    case ops::Op::softmax: softmax(kernels::RowSoftmax::softmax); return;
    case ops::Op::log_softmax: softmax(kernels::RowSoftmax::log_softmax); return;
    case ops::Op::logsumexp: softmax(kernels::RowSoftmax::logsumexp); return;
    case ops::Op::layer_norm:
      kernels::layer_norm(type, d.values(0), d.values(1), d.values(2), out, nullptr, nullptr, rows,
                          cols, kLayerNormEps, nullptr);
      return;
    case ops::Op::rms_norm:
      kernels::rms_norm(type, d.values(0), d.values(1), out, rows, cols, kRmsNormEps, nullptr);
      return;
    case ops::Op::relu:
    case ops::Op::gelu:
    case ops::Op::gelu_tanh:
    case ops::Op::silu:
      kernels::bias_activation(type, activation_of(op), d.values(0), d.values(1), out, rows, cols,
                               nullptr);
      return;
    case ops::Op::cross_entropy: {
      const kernels::DeviceBuffer<float> loss(1);
      kernels::cross_entropy(type, d.values(0), d.indices(1), loss.data(), rows, cols, nullptr);
      kernels::cast(kernels::DType::f32, type, loss.data(), out, 1, nullptr);
      AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // before `loss` is freed
      return;
    }
    case ops::Op::add: kernels::add(type, d.values(0), d.values(1), out, n, nullptr); return;
    case ops::Op::mul: kernels::mul(type, d.values(0), d.values(1), out, n, nullptr); return;
    case ops::Op::fma:
      kernels::fma(type, d.values(0), d.values(1), d.values(2), out, n, nullptr);
      return;
    case ops::Op::softmax_backward:
      kernels::softmax_backward(type, d.values(0), d.values(1), out, rows, cols, nullptr);
      return;
    case ops::Op::log_softmax_backward:
      kernels::log_softmax_backward(type, d.values(0), d.values(1), out, rows, cols, nullptr);
      return;
    case ops::Op::cross_entropy_backward:
      kernels::cross_entropy_backward(type, d.values(0), d.indices(1), 1.0F, out, rows, cols,
                                      nullptr);
      return;
    case ops::Op::relu_backward:
    case ops::Op::gelu_backward:
    case ops::Op::gelu_tanh_backward:
    case ops::Op::silu_backward:
      kernels::activation_backward(type, activation_of(op), d.values(0), d.values(1), out, n,
                                   nullptr);
      return;
    case ops::Op::layer_norm_backward:
    case ops::Op::layer_norm_backward_gamma:
    case ops::Op::layer_norm_backward_beta:
      run_layer_norm_backward(op, type, d, out, rows, cols);
      return;
    default: throw std::logic_error("no op kernel for this op");
  }
}

std::vector<double> run_op_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                                  const OpKernelPlan& plan, const ops::Inputs& in,
                                  nlohmann::json* detail) {
  const kernels::DType type = dtype_of(plan.type);
  const DeviceOperands operands(in, plan.type);
  const std::size_t outputs = ops::element_count(ops::output_shape(op, shape));
  kernels::DeviceBuffer<std::byte> out(outputs * kernels::dtype_bytes(type));
  launch_op_kernel(op.op, shape, type, operands, out.data());
  std::vector<std::byte> bytes(out.size());
  out.copy_to(bytes);  // on the default stream: waits for the kernels and reports their faults
  if (detail != nullptr) {
    *detail = {{"kernel", plan.launchers},
               {"element_type", kernels::dtype_name(type)},
               {"arithmetic", plan.arithmetic}};
  }
  return from_device(bytes, plan.type);
}

}  // namespace

audit::Kernel make_kernel(const ops::OpInfo& op, const ops::Shape& shape, const Plan& plan,
                          nlohmann::json* detail) {
  if (plan.kind == Plan::Kind::cast) {
    return [cast = plan.cast, detail](const ops::Inputs& in) { return run_cast(cast, in, detail); };
  }
  if (plan.kind == Plan::Kind::op_kernel) {
    return [op, shape, op_kernel = plan.op_kernel, detail](const ops::Inputs& in) {
      return run_op_kernel(op, shape, op_kernel, in, detail);
    };
  }
  return [call = gemm_call(op, shape), gemm = plan.gemm, detail](const ops::Inputs& in) {
    return run_gemm(call, gemm, in, detail);
  };
}

}  // namespace ampbench::backends::cuda
