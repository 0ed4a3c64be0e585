#include "harness/backends/cuda/kernel.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/backends/cuda/conv_kernel.hpp"
#include "harness/backends/cuda/lt_matmul.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "harness/numeric/options.hpp"
#include "kernels/cnn_kernels.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/device_buffer.hpp"
#include "kernels/op_kernels.hpp"
#include "kernels/rounding_kernels.cuh"

namespace ampbench::backends::cuda {
namespace {

kernels::DeviceBuffer<std::byte> on_device(const std::vector<std::byte>& host) {
  kernels::DeviceBuffer<std::byte> buffer(host.size());
  buffer.copy_from(host, nullptr);
  return buffer;
}

// A B, and for linear (`bias_operand`) + its bias through cuBLASLt's bias epilogue, the bias in
// the output's type as addmm adds it.
std::vector<double> run_gemm(const GemmCall& call, const GemmPlan& plan, const ops::Inputs& in,
                             std::optional<std::size_t> bias_operand, nlohmann::json* detail) {
  const kernels::DeviceBuffer<std::byte> a =
      on_device(to_device(in.values.at(call.a.operand), plan.inputs));
  const kernels::DeviceBuffer<std::byte> b =
      on_device(to_device(in.values.at(call.b.operand), plan.inputs));
  const kernels::DeviceBuffer<std::byte> bias =
      on_device(bias_operand ? to_device(in.values.at(*bias_operand), plan.output)
                             : std::vector<std::byte>{});
  kernels::DeviceBuffer<std::byte> d(call.m * call.n * static_cast<std::uint64_t>(call.batch) *
                                     device_type_bytes(plan.output));

  // A handle and workspace per case: the audit runs one product per case, not in a loop.
  LtMatmul matmul;
  nlohmann::json ran = matmul.run(plan, call, a.data(), b.data(), d.data(),
                                  bias_operand ? bias.data() : nullptr, nullptr);
  std::vector<std::byte> out(d.size());
  d.copy_to(out, nullptr);  // the matmul's stream: waits for it and reports its faults
  if (detail != nullptr) *detail = std::move(ran);
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

// The catalog's epsilons (harness/ops/catalog.hpp), in the kernels' binary32.
constexpr float kLayerNormEps = static_cast<float>(ops::kLayerNormEps);
constexpr float kRmsNormEps = static_cast<float>(ops::kRmsNormEps);
constexpr float kBatchNormEps = static_cast<float>(ops::kBatchNormEps);

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

// The operands of one run on the device: values exactly as their type (types[i]; the plan's),
// indices as int64.
class DeviceOperands {
 public:
  DeviceOperands(const ops::Inputs& in, const std::vector<DeviceType>& types) {
    static const std::vector<std::int64_t> kNoIndices;
    for (std::size_t i = 0; i < in.values.size(); ++i) {
      values_.push_back(on_device(to_device(in.values[i], types.at(i))));
      const std::vector<std::int64_t>& indices = i < in.indices.size() ? in.indices[i] : kNoIndices;
      kernels::DeviceBuffer<std::int64_t> index_buffer(indices.size());
      index_buffer.copy_from(indices, nullptr);
      indices_.push_back(std::move(index_buffer));
    }
  }
  // What the launch reads: pointers into the buffers above.
  OpKernelOperands view() const {
    OpKernelOperands v;
    for (const auto& b : values_) v.value.push_back(b.data());
    for (const auto& b : indices_) v.index.push_back(b.data());
    return v;
  }

 private:
  std::vector<kernels::DeviceBuffer<std::byte>> values_;
  std::vector<kernels::DeviceBuffer<std::int64_t>> indices_;
};

// Layer norm's backward ops: the forward's statistics, then the gradient this op reports.
void run_layer_norm_backward(ops::Op op, kernels::DType type, const OpKernelOperands& d, void* out,
                             std::size_t rows, std::size_t cols, cudaStream_t stream) {
  kernels::DeviceBuffer<std::byte> y(rows * cols * kernels::dtype_bytes(type));
  kernels::DeviceBuffer<float> mean(rows), rstd(rows);
  const void* gamma = op == ops::Op::layer_norm_backward ? d.values(2) : nullptr;
  kernels::layer_norm(type, d.values(0), gamma, nullptr, y.data(), mean.data(), rstd.data(), rows,
                      cols, kLayerNormEps, stream);
  kernels::layer_norm_backward(type, d.values(0), d.values(1), gamma, mean.data(), rstd.data(),
                               op == ops::Op::layer_norm_backward ? out : nullptr,
                               op == ops::Op::layer_norm_backward_gamma ? out : nullptr,
                               op == ops::Op::layer_norm_backward_beta ? out : nullptr, rows, cols,
                               stream);
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the statistics are freed
}

// Batch norm's backward ops: the three gradients of one pass, this op's written to `out`, the
// others to scratch. dgamma and dbeta do not depend on gamma (ones stand in for it).
void run_batch_norm_backward(ops::Op op, kernels::DType type, const OpKernelOperands& d, void* out,
                             std::size_t rows, std::size_t cols, cudaStream_t stream) {
  const std::size_t bytes = kernels::dtype_bytes(type);
  kernels::DeviceBuffer<std::byte> dx(rows * cols * bytes), dgamma(cols * bytes),
      dbeta(cols * bytes);
  kernels::DeviceBuffer<float> ones(cols);
  ones.copy_from(std::vector<float>(cols, 1.0F), stream);
  const bool dx_wanted = op == ops::Op::batch_norm_backward;
  const auto* gamma = dx_wanted ? static_cast<const float*>(d.values(2)) : ones.data();
  kernels::batch_norm_backward(type, d.values(0), d.values(1), gamma, dx_wanted ? out : dx.data(),
                               op == ops::Op::batch_norm_backward_gamma ? out : dgamma.data(),
                               op == ops::Op::batch_norm_backward_beta ? out : dbeta.data(), rows,
                               cols, 1, kBatchNormEps, stream);
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the scratch is freed
}

}  // namespace

void launch_op_kernel(ops::Op op, const ops::Shape& shape, kernels::DType type,
                      const OpKernelOperands& d, void* out, cudaStream_t stream) {
  const auto& s = shape.sizes;
  const std::size_t rows = s[0], cols = s.size() > 1 ? s[1] : 1, n = rows * cols;
  const auto softmax = [&](kernels::RowSoftmax what) {
    kernels::softmax(type, what, d.values(0), out, rows, cols, stream);
  };
  const auto reduce = [&](kernels::Reduction what) {
    kernels::reduce(type, what, d.values(0), out, n, stream);
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
                          cols, kLayerNormEps, stream);
      return;
    case ops::Op::rms_norm:
      kernels::rms_norm(type, d.values(0), d.values(1), out, rows, cols, kRmsNormEps, stream);
      return;
    case ops::Op::relu:
    case ops::Op::gelu:
    case ops::Op::gelu_tanh:
    case ops::Op::silu:
      kernels::bias_activation(type, activation_of(op), d.values(0), d.values(1), out, rows, cols,
                               stream);
      return;
    case ops::Op::cross_entropy: {
      const kernels::DeviceBuffer<float> loss(1);
      kernels::cross_entropy(type, d.values(0), d.indices(1), loss.data(), rows, cols, stream);
      kernels::cast(kernels::DType::f32, type, loss.data(), out, 1, stream);
      AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));  // before `loss` is freed
      return;
    }
    case ops::Op::add: kernels::add(type, d.values(0), d.values(1), out, n, stream); return;
    case ops::Op::mul: kernels::mul(type, d.values(0), d.values(1), out, n, stream); return;
    case ops::Op::fma:
      kernels::fma(type, d.values(0), d.values(1), d.values(2), out, n, stream);
      return;
    case ops::Op::softmax_backward:
      kernels::softmax_backward(type, d.values(0), d.values(1), out, rows, cols, stream);
      return;
    case ops::Op::log_softmax_backward:
      kernels::log_softmax_backward(type, d.values(0), d.values(1), out, rows, cols, stream);
      return;
    case ops::Op::cross_entropy_backward:
      kernels::cross_entropy_backward(type, d.values(0), d.indices(1), 1.0F, out, rows, cols,
                                      stream);
      return;
    case ops::Op::relu_backward:
    case ops::Op::gelu_backward:
    case ops::Op::gelu_tanh_backward:
    case ops::Op::silu_backward:
      kernels::activation_backward(type, activation_of(op), d.values(0), d.values(1), out, n,
                                   stream);
      return;
    case ops::Op::layer_norm_backward:
    case ops::Op::layer_norm_backward_gamma:
    case ops::Op::layer_norm_backward_beta:
      run_layer_norm_backward(op, type, d, out, rows, cols, stream);
      return;
    // Batch norm of N x C as NCHW with one pixel; its weight and bias in binary32
    // (op_kernel_operand_types).
    case ops::Op::batch_norm:
      kernels::batch_norm(type, d.values(0), static_cast<const float*>(d.values(1)),
                          static_cast<const float*>(d.values(2)), out, rows, cols, 1, kBatchNormEps,
                          stream);
      return;
    case ops::Op::batch_norm_backward:
    case ops::Op::batch_norm_backward_gamma:
    case ops::Op::batch_norm_backward_beta:
      run_batch_norm_backward(op, type, d, out, rows, cols, stream);
      return;
    case ops::Op::mean_pool: kernels::mean_rows(type, d.values(0), out, rows, cols, stream); return;
    case ops::Op::mean_pool_backward:
      kernels::mean_rows_backward(type, d.values(1), out, rows, cols, stream);
      return;
    case ops::Op::linear_backward_bias:
      kernels::column_sums(type, d.values(0), out, rows, cols, stream);
      return;
    default: throw std::logic_error("no op kernel for this op");
  }
}

std::vector<DeviceType> op_kernel_operand_types(const ops::OpInfo& op, const ops::Shape& shape,
                                                DeviceType type) {
  std::vector<DeviceType> types;
  for (const ops::Operand& o : ops::operands(op, shape)) {
    types.push_back(o.held_in == ops::HeldIn::input_or_own ? DeviceType::f32 : type);
  }
  return types;
}

namespace {

std::vector<double> run_op_kernel(const ops::OpInfo& op, const ops::Shape& shape,
                                  const OpKernelPlan& plan, const ops::Inputs& in,
                                  nlohmann::json* detail) {
  const kernels::DType type = dtype_of(plan.type);
  const DeviceOperands operands(in, op_kernel_operand_types(op, shape, plan.type));
  const std::size_t outputs = ops::element_count(ops::output_shape(op, shape));
  kernels::DeviceBuffer<std::byte> out(outputs * kernels::dtype_bytes(type));
  launch_op_kernel(op.op, shape, type, operands.view(), out.data(), nullptr);
  std::vector<std::byte> bytes(out.size());
  out.copy_to(bytes, nullptr);  // the kernels' stream: waits for them and reports their faults
  if (detail != nullptr) {
    *detail = {{"kernel", plan.launchers},
               {"element_type", kernels::dtype_name(type)},
               {"arithmetic", plan.arithmetic}};
  }
  return from_device(bytes, plan.type);
}

// A policy under which CudaOps runs attention at precision q (resolved: no promote entry) and
// every other op in fp32; the ops every model has (linear, the loss) must run, and do in fp32.
policy::Policy attention_policy(const policy::OpPrecision& q) {
  policy::Policy p = *policy::find_builtin("fp32");
  p.name = "audit-attention";
  p.exceptions.push_back({policy::Op::attention, q});
  return p;
}

// Attention (one head, L = S queries and keys of D features: plan() refused other shapes) or one
// of its gradients through the training ops, on operands uploaded exactly as binary32 values.
std::vector<double> run_attention(const ops::OpInfo& op, const ops::Shape& shape,
                                  const AttentionPlan& plan, const ops::Inputs& in,
                                  nlohmann::json* detail) {
  const std::size_t length = shape.sizes.at(0);
  const std::size_t d = shape.sizes.at(2);
  if (shape.sizes.at(1) != length) {
    throw std::invalid_argument("attention on the device needs as many keys as queries");
  }
  CudaOps device(attention_policy(plan.precision));
  const auto q = device.constant(in.values.at(0));
  const auto k = device.constant(in.values.at(1));
  const auto v = device.constant(in.values.at(2));
  std::vector<double> out;
  if (op.op == ops::Op::attention) {
    out = CudaOps::to_doubles(device.attention(q, k, v, 1, length, d));
  } else {
    const auto g =
        device.attention_backward(q, k, v, device.constant(in.values.at(3)), 1, length, d);
    out = CudaOps::to_doubles(op.op == ops::Op::attention_backward_q   ? g.dq
                              : op.op == ops::Op::attention_backward_k ? g.dk
                                                                       : g.dv);
  }
  if (detail != nullptr) {
    const auto product = [](const GemmPlan& g) {
      return nlohmann::json{{"compute", compute_name(g.compute)},
                            {"inputs", device_type_name(g.inputs)},
                            {"output", device_type_name(g.output)}};
    };
    *detail = {{"library", "cuBLASLt and ampbench's kernels"},
               {"ran", op.op == ops::Op::attention ? "backends::cuda::CudaOps::attention"
                                                   : "backends::cuda::CudaOps::attention_backward"},
               {"input_products", product(plan.input_products)},
               {"compute_products", product(plan.compute_products)},
               {"compute", plan.precision.compute.name},
               {"kernels", op.op == ops::Op::attention
                               ? "ampbench::kernels::scale, ampbench::kernels::softmax"
                               : "ampbench::kernels::scale, ampbench::kernels::softmax, "
                                 "ampbench::kernels::attention_softmax_backward"}};
  }
  return out;
}

}  // namespace

ops::Kernel make_kernel(const ops::OpInfo& op, const ops::Shape& shape, const Plan& plan,
                        nlohmann::json* detail) {
  if (plan.kind == Plan::Kind::cast) {
    return [cast = plan.cast, detail](const ops::Inputs& in) { return run_cast(cast, in, detail); };
  }
  if (plan.kind == Plan::Kind::convolution) {
    return make_convolution_kernel(shape, plan.convolution, detail);
  }
  if (plan.kind == Plan::Kind::attention) {
    return [op, shape, attention = plan.attention, detail](const ops::Inputs& in) {
      return run_attention(op, shape, attention, in, detail);
    };
  }
  if (plan.kind == Plan::Kind::op_kernel) {
    return [op, shape, op_kernel = plan.op_kernel, detail](const ops::Inputs& in) {
      return run_op_kernel(op, shape, op_kernel, in, detail);
    };
  }
  const std::optional<std::size_t> bias =
      op.op == ops::Op::linear ? std::optional<std::size_t>(2) : std::nullopt;
  return [call = gemm_call(op, shape), gemm = plan.gemm, bias, detail](const ops::Inputs& in) {
    return run_gemm(call, gemm, in, bias, detail);
  };
}

}  // namespace ampbench::backends::cuda
