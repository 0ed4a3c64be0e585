// The cnn's kernels of the CUDA backend: convolutions through cuDNN (CudaKernels::run's passes)
// and batch norm through kernels/cnn_kernels.hpp. Their operands
// come converted by autocast's type flow (ops/autocast_ops.hpp); their results are in the type
// their kernel writes.
#include <fmt/format.h>

#include <stdexcept>
#include <string_view>

#include "harness/backends/cuda/conv_plan.hpp"
#include "harness/backends/cuda/training_ops.hpp"
#include "harness/backends/cuda/training_ops_context.hpp"
#include "harness/ops/catalog.hpp"
#include "kernels/cnn_kernels.hpp"
#include "kernels/cudnn_convolution.hpp"

namespace ampbench::backends::cuda {
namespace {

using training_ops_detail::dtype_of;

// The binary32 eps the kernels take, as ATen's batch-norm kernels convert it (their accumulation
// type).
const float kBinary32BatchNormEps = static_cast<float>(ops::kBatchNormEps);

const float* binary32_data(const CudaTensor& t) {
  return static_cast<const float*>(t.data());
}

}  // namespace

CudaTensor CudaKernels::convolve(const ConvPlan& c, const ops::OpInfo& op, const ops::Shape& shape,
                                 const Tensor& first, const Tensor& second) {
  kernels::ConvolutionConfig config;
  config.pass = c.pass;
  config.shape = convolution_shape(ops::convolution::geometry(shape));
  config.data = dtype_of(c.data);
  config.compute = dtype_of(c.compute);
  config.math = c.math;
  const Tensor a = retyped(first, config.data);
  const Tensor b = retyped(second, config.data);
  Tensor out =
      empty(kernels::element_count(kernels::output_dims(c.pass, config.shape)), config.data);
  const auto range =
      recording() ? phase(fmt::format("{} {} {}", op.name, ops::convolution::to_string(shape),
                                      kernels::dtype_name(config.data)))
                  : std::nullopt;
  // Runs on the handle's stream, this CudaOps' own, and waits for it (run_convolution frees its
  // workspace on return).
  kernels::run_convolution(context_->cudnn_handle(), config, a.data(), b.data(), out.data());
  return out;
}

CudaTensor CudaKernels::batch_norm(const Precision&, const Tensor& x, const Tensor& gamma,
                                   const Tensor& beta, std::size_t batch, std::size_t channels,
                                   std::size_t spatial) {
  // The weights as the kernels take them: binary32 (a weight held in the input format widens
  // exactly).
  const Tensor g32 = retyped(gamma, kernels::DType::f32);
  const Tensor b32 = retyped(beta, kernels::DType::f32);
  Tensor y = empty(x.size, x.type);
  kernels::batch_norm(x.type, x.data(), binary32_data(g32), binary32_data(b32), y.data(), batch,
                      channels, spatial, kBinary32BatchNormEps, context_->stream);
  return y;
}

ops::LayerNormGradients<CudaTensor> CudaKernels::batch_norm_backward(
    const Precision&, const Tensor& x, const Tensor& dy, const Tensor& gamma, std::size_t batch,
    std::size_t channels, std::size_t spatial) {
  const Tensor g32 = retyped(gamma, kernels::DType::f32);
  ops::LayerNormGradients<Tensor> g{empty(x.size, x.type), empty(channels, x.type),
                                    empty(channels, x.type)};
  kernels::batch_norm_backward(x.type, x.data(), dy.data(), binary32_data(g32), g.dx.data(),
                               g.dgamma.data(), g.dbeta.data(), batch, channels, spatial,
                               kBinary32BatchNormEps, context_->stream);
  return g;
}

}  // namespace ampbench::backends::cuda
