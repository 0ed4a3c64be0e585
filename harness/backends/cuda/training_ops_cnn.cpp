// The cnn's ops of CudaOps: convolutions through cuDNN, batch norm and global average pooling
// through kernels/cnn_kernels.hpp, relu through kernels/op_kernels.hpp, each with the dtype flow
// of train::EmulatedOps (harness/train/ops.cpp): inputs cast to the op's input type, results in
// its output type, gradients cast back to the format of the tensor they belong to.
#include <fmt/format.h>

#include <initializer_list>
#include <stdexcept>

#include "harness/backends/cuda/conv_plan.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "harness/backends/cuda/training_ops_context.hpp"
#include "harness/ops/catalog.hpp"
#include "kernels/cnn_kernels.hpp"
#include "kernels/cudnn_convolution.hpp"

namespace ampbench::backends::cuda {
namespace {

using numeric::Format;
using training_ops_detail::dtype_of;

// The binary32 eps the kernels take, as ATen's batch-norm kernels convert it (their accumulation
// type).
const float kBinary32BatchNormEps = static_cast<float>(ops::kBatchNormEps);

const float* binary32_data(const CudaTensor& t) {
  if (t.type != kernels::DType::f32) throw std::logic_error("batch norm's weight is not binary32");
  return static_cast<const float*>(t.data());
}

}  // namespace

CudaTensor CudaOps::convolution(const policy::OpPrecision& q, std::string_view pass,
                                const ops::convolution::Geometry& g, const Tensor& first,
                                const Tensor& second) {
  // The audit's plan for the pass: why_not_trainable has checked that every conv precision of the
  // policy has one.
  const Planning planned = plan(*ops::find_op(pass), q);
  if (!planned.plan) throw std::invalid_argument(planned.reason);
  const ConvPlan& c = planned.plan->convolution;
  kernels::ConvolutionConfig config;
  config.pass = c.pass;
  config.shape = convolution_shape(g);
  config.data = dtype_of(c.data);
  config.compute = dtype_of(c.compute);
  config.math = c.math;
  const Tensor a = cast(first, config.data);
  const Tensor b = cast(second, config.data);
  Tensor out =
      empty(kernels::element_count(kernels::output_dims(c.pass, config.shape)), config.data);
  const auto range =
      recording() ? phase(fmt::format("{} {} {}", pass,
                                      ops::convolution::to_string(ops::convolution::to_shape(g)),
                                      kernels::dtype_name(config.data)))
                  : std::nullopt;
  // Runs on the handle's stream, this CudaOps' own, and waits for it (run_convolution frees its
  // workspace on return).
  kernels::run_convolution(context_->cudnn_handle(), config, a.data(), b.data(), out.data());
  return out;
}

CudaTensor CudaOps::conv2d(const Tensor& x, const Tensor& w, const ops::convolution::Geometry& g) {
  const auto range = op_range("conv2d");
  const auto q = resolved(policy::Op::conv, std::initializer_list<Format>{x.format});
  return convolution(q, "conv2d", g, x, w);
}

CudaOps::ConvolutionGradients CudaOps::conv2d_backward(const Tensor& x, const Tensor& w,
                                                       const Tensor& dy,
                                                       const ops::convolution::Geometry& g,
                                                       bool need_dx) {
  const auto range = op_range("conv2d_backward");
  const auto q = resolved(policy::Op::conv, std::initializer_list<Format>{x.format});
  ConvolutionGradients grads;
  if (need_dx) grads.dx = cast(convolution(q, "conv2d_backward_data", g, dy, w), x.format);
  grads.dw = cast(convolution(q, "conv2d_backward_filter", g, x, dy), w.format);
  return grads;
}

CudaTensor CudaOps::batch_norm_weight(const ops::Conversion& c, const Tensor& weight) const {
  // Under autocast batch norm keeps its fp32 weight (a promote entry: kept); a policy that fixes
  // its formats holds the weight in its input format, which the kernel takes widened (exactly).
  if (c.kept) return weight;
  return cast(convert(weight, c), kernels::DType::f32);
}

CudaTensor CudaOps::batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               std::size_t batch, std::size_t channels, std::size_t spatial) {
  const auto range = op_range("batch_norm");
  const auto flow =
      autocast("batch_norm", policy::Op::batch_norm, std::initializer_list<Format>{x.format});
  const auto& q = flow.precision();
  const Tensor xa = convert(x, flow.operand(0));
  const Tensor ga = batch_norm_weight(flow.operand(1), gamma);
  const Tensor ba = batch_norm_weight(flow.operand(2), beta);
  Tensor y = empty(xa.size, xa.type);
  kernels::batch_norm(xa.type, xa.data(), binary32_data(ga), binary32_data(ba), y.data(), batch,
                      channels, spatial, kBinary32BatchNormEps, context_->stream);
  return cast(y, q.output);
}

CudaOps::BatchNormGradients CudaOps::batch_norm_backward(const Tensor& x, const Tensor& dy,
                                                         const Tensor& gamma, const Tensor& beta,
                                                         std::size_t batch, std::size_t channels,
                                                         std::size_t spatial) {
  const auto range = op_range("batch_norm_backward");
  const auto flow = autocast("batch_norm_backward", policy::Op::batch_norm,
                             std::initializer_list<Format>{x.format});
  const Tensor xa = convert(x, flow.operand(0));
  const Tensor dya = convert(dy, flow.operand(1));
  const Tensor ga = batch_norm_weight(flow.operand(2), gamma);
  Tensor dx = empty(xa.size, xa.type);
  Tensor dgamma = empty(channels, xa.type);
  Tensor dbeta = empty(channels, xa.type);
  kernels::batch_norm_backward(xa.type, xa.data(), dya.data(), binary32_data(ga), dx.data(),
                               dgamma.data(), dbeta.data(), batch, channels, spatial,
                               kBinary32BatchNormEps, context_->stream);
  BatchNormGradients g;
  g.dx = cast(dx, x.format);
  g.dgamma = cast(dgamma, gamma.format);
  g.dbeta = cast(dbeta, beta.format);
  return g;
}

CudaTensor CudaOps::relu(const Tensor& x) {
  const auto range = op_range("relu");
  return activation(policy::Op::relu, "relu", kernels::Activation::relu, x, 1, x.size);
}

CudaTensor CudaOps::relu_backward(const Tensor& x, const Tensor& dy) {
  const auto range = op_range("relu_backward");
  return activation_gradient(policy::Op::relu, "relu_backward", kernels::Activation::relu, x, dy);
}

CudaTensor CudaOps::mean_pool(const Tensor& x, std::size_t rows, std::size_t cols) {
  const auto range = op_range("mean_pool");
  const auto flow =
      autocast("mean_pool", policy::Op::mean, std::initializer_list<Format>{x.format});
  const auto& q = flow.precision();
  const Tensor xa = convert(x, flow.operand(0));
  Tensor y = empty(rows, xa.type);
  kernels::mean_rows(xa.type, xa.data(), y.data(), rows, cols, context_->stream);
  return cast(y, q.output);
}

CudaTensor CudaOps::mean_pool_backward(const Tensor& x, const Tensor& dy, std::size_t rows,
                                       std::size_t cols) {
  const auto range = op_range("mean_pool_backward");
  const auto flow =
      autocast("mean_pool_backward", policy::Op::mean, std::initializer_list<Format>{x.format});
  const Tensor dya = convert(dy, flow.operand(1));
  Tensor dx = empty(rows * cols, dya.type);
  kernels::mean_rows_backward(dya.type, dya.data(), dx.data(), rows, cols, context_->stream);
  return cast(dx, x.format);
}

}  // namespace ampbench::backends::cuda
