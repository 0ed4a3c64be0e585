#include "harness/backends/cuda/training_ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/backends/cuda/kernel.hpp"
#include "harness/backends/cuda/training_ops_context.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/profile/classify.hpp"
#include "kernels/cuda_check.hpp"

namespace ampbench::backends::cuda {
namespace {

using numeric::Format;
namespace formats = numeric::formats;
using training_ops_detail::device_type_of;
using training_ops_detail::dtype_of;

const ops::OpInfo& op_info(std::string_view name) {
  return *ops::find_op(name);
}

}  // namespace

namespace training_ops_detail {

kernels::DType dtype_of(const Format& f) {
  const std::optional<DeviceType> t = output_type(f);
  if (!t) throw std::logic_error(fmt::format("no device type stores {}", f.name));
  return dtype_of(*t);
}

}  // namespace training_ops_detail

// ---- device memory ----------------------------------------------------------------------------

DeviceArray::DeviceArray(std::size_t bytes, SharedStream stream)
    : bytes_(bytes), stream_(std::move(stream)) {
  if (bytes != 0) AMPBENCH_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream_->get()));
}

DeviceArray::~DeviceArray() {
  if (data_ != nullptr) AMPBENCH_CUDA_CHECK_NOTHROW(cudaFreeAsync(data_, stream_->get()));
}

void upload_async(void* device, const void* host, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  auto staged = std::make_unique<std::vector<std::byte>>(bytes);
  std::memcpy(staged->data(), host, bytes);
  AMPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(device, staged->data(), bytes, cudaMemcpyHostToDevice, stream));
  const auto release = [](void* p) { delete static_cast<std::vector<std::byte>*>(p); };
  if (const cudaError_t e = cudaLaunchHostFunc(stream, release, staged.get()); e != cudaSuccess) {
    // The copy may still read the staged bytes: wait for it before they go. Should the wait fail
    // too, they are left allocated rather than freed under a copy.
    if (cudaStreamSynchronize(stream) != cudaSuccess) (void)staged.release();
    kernels::detail::throw_cuda_error(e, "cudaLaunchHostFunc(stream, release, staged)", __FILE__,
                                      __LINE__);
  }
  (void)staged.release();  // the host function deletes it
}

std::uint64_t peak_pool_bytes() {
  int device = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  AMPBENCH_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t high = 0;
  AMPBENCH_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  return high;
}

void reset_peak_pool_bytes() {
  int device = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  AMPBENCH_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t zero = 0;  // resets the high-water mark to the current use
  AMPBENCH_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
}

// ---- the ops ------------------------------------------------------------------------------------

CudaKernels::Context::Context()
    : owned_stream(std::make_shared<const kernels::CudaStream>()), stream(owned_stream->get()) {
  // Keep freed memory in the pool between steps instead of returning it to the driver at every
  // synchronization, as a caching allocator does.
  int device = 0;
  AMPBENCH_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool = nullptr;
  AMPBENCH_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
  AMPBENCH_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
}

CudaKernels::Context::~Context() {
  AMPBENCH_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream));
  cudnn.reset();
  // The stream itself goes with the last array allocated on it (SharedStream).
}

CudaKernels::CudaKernels(policy::Policy policy) : policy_(std::move(policy)) {
  // The ops do not know the model (train_on_device checks the whole model's before any work): the
  // policy must run the ops every model has, its linear layers and its loss, on the device.
  const ops::ModelOp every_model[] = {{ops::find_op("linear"), policy::Op::linear},
                                      {ops::find_op("cross_entropy"), policy::Op::cross_entropy}};
  if (auto why = why_not_trainable(policy_, every_model)) throw std::invalid_argument(*why);
  context_ = std::make_unique<Context>();
}

CudaKernels::~CudaKernels() = default;
CudaKernels::CudaKernels(CudaKernels&&) noexcept = default;
CudaKernels& CudaKernels::operator=(CudaKernels&&) noexcept = default;

cudaStream_t CudaKernels::stream() const {
  return context_->stream;
}

const SharedStream& CudaKernels::shared_stream() const {
  return context_->owned_stream;
}

CudaTensor CudaKernels::empty(std::size_t size, kernels::DType type) const {
  return {std::make_shared<DeviceArray>(size * kernels::dtype_bytes(type), context_->owned_stream),
          size, type, kernels::dtype_format(type)};
}

CudaTensor CudaKernels::retyped(const Tensor& t, kernels::DType to) const {
  if (t.type == to) return t;
  Tensor r = empty(t.size, to);
  kernels::cast(t.type, to, t.data(), r.data(), t.size, context_->stream);
  return r;
}

CudaTensor CudaKernels::cast(const Tensor& t, const Format& to, numeric::Rounding mode) const {
  const std::optional<DeviceType> held = holding_type(to);
  if (!held) throw std::logic_error(fmt::format("no device type holds {}", to.name));
  const kernels::DType type = dtype_of(*held);
  if (policy::contains(to, t.format)) {  // exact: a change of type at most
    Tensor r = retyped(t, type);
    r.format = to;
    return r;
  }
  if (mode != numeric::Rounding::nearest_even) {
    throw std::logic_error(fmt::format("the device's casts round to nearest even, not {}",
                                       numeric::rounding_name(mode)));
  }
  Tensor r = retyped(t, type);
  if (numeric::same_values(r.format, to)) return r;
  if (!numeric::same_values(to, formats::tf32) || r.type != kernels::DType::f32) {
    throw std::logic_error(
        fmt::format("the device does not round {} values to {}", r.format.name, to.name));
  }
  Tensor rounded = empty(r.size, kernels::DType::f32);
  kernels::round_to_tf32(static_cast<const float*>(r.data()), static_cast<float*>(rounded.data()),
                         r.size, context_->stream);
  rounded.format = to;
  return rounded;
}

CudaTensor CudaKernels::constant(std::span<const double> values) const {
  std::vector<float> binary32(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    binary32[i] = static_cast<float>(values[i]);
    if (static_cast<double>(binary32[i]) != values[i] && !std::isnan(values[i])) {
      throw std::invalid_argument("training data must be binary32");
    }
  }
  return parameter(binary32);
}

CudaTensor CudaKernels::parameter(std::span<const Master> values) const {
  Tensor t = empty(values.size(), kernels::DType::f32);
  upload_async(t.data(), values.data(), values.size_bytes(), context_->stream);
  return t;
}

std::vector<CudaKernels::Master> CudaKernels::master_gradient(const Tensor& gradient) const {
  if (gradient.type != kernels::DType::f32) {
    throw std::logic_error("a parameter's gradient is not in binary32");
  }
  std::vector<Master> host(gradient.size);
  if (!host.empty()) {
    AMPBENCH_CUDA_CHECK(cudaMemcpyAsync(host.data(), gradient.data(), gradient.size * sizeof(float),
                                        cudaMemcpyDeviceToHost, context_->stream));
  }
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(context_->stream));
  return host;
}

std::vector<double> CudaKernels::to_doubles(const Tensor& t) {
  std::vector<double> out(t.size);
  if (t.size == 0) return out;
  const cudaStream_t stream = t.storage->stream();
  std::vector<std::byte> bytes(t.storage->bytes());
  AMPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(bytes.data(), t.data(), bytes.size(), cudaMemcpyDeviceToHost, stream));
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return from_device(bytes, device_type_of(t.type));
}

void CudaKernels::matmul(const GemmPlan& plan, const GemmCall& call, const void* a, const void* b,
                         void* d, const void* bias) {
  // The shape as the kernel sees it (m x n from k terms, for each of the batch) and the type its
  // inputs reach the Tensor Cores in: tf32 under 32F_FAST_TF32.
  profile::GemmShape shape{call.m, call.n, call.k, profile::GemmDtype::fp32,
                           static_cast<std::uint64_t>(call.batch)};
  if (plan.compute == GemmCompute::f32_fast_tf32) {
    shape.dtype = profile::GemmDtype::tf32;
  } else if (plan.inputs == DeviceType::f16) {
    shape.dtype = profile::GemmDtype::fp16;
  } else if (plan.inputs == DeviceType::bf16) {
    shape.dtype = profile::GemmDtype::bf16;
  }
  // The name is formatted only when phases are recorded: a training step runs many products.
  const auto range = recording() ? phase(profile::gemm_range_name(shape)) : std::nullopt;
  context_->matmul.run(plan, call, a, b, d, bias, context_->stream);
}

CudaTensor CudaKernels::run(const Precision& q, const ops::OpInfo& op, const ops::Shape& shape,
                            std::vector<Tensor> operands, std::span<const std::int64_t> indices) {
  const Planning planned = plan(op, q);
  if (!planned.plan) throw std::invalid_argument(planned.reason);
  const Plan& p = *planned.plan;
  const std::size_t size = ops::element_count(ops::output_shape(op, shape));
  if (p.kind == Plan::Kind::gemm) {
    // A and B in the plan's input type; linear's bias (operand 2, held in the output's type, as
    // addmm's epilogue adds it) in its output type.
    for (std::size_t i = 0; i < operands.size(); ++i) {
      operands[i] = retyped(operands[i], dtype_of(i == 2 ? p.gemm.output : p.gemm.inputs));
    }
    Tensor d = empty(size, dtype_of(p.gemm.output));
    const GemmCall call = gemm_call(op, shape);
    matmul(p.gemm, call, operands.at(call.a.operand).data(), operands.at(call.b.operand).data(),
           d.data(), op.op == ops::Op::linear ? operands.at(2).data() : nullptr);
    return d;
  }
  if (p.kind == Plan::Kind::convolution)
    return convolve(p.convolution, op, shape, operands.at(0), operands.at(1));
  if (p.kind != Plan::Kind::op_kernel) {
    throw std::logic_error(fmt::format("{} is not run through CudaKernels::run", op.name));
  }
  const std::vector<DeviceType> types = op_kernel_operand_types(op, shape, p.op_kernel.type);
  const std::vector<ops::Operand> roles = ops::operand_roles(op);
  OpKernelOperands d;
  std::vector<Tensor> targets;  // the index operands' uploads, alive until the launch is enqueued
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const bool index = roles.at(i).is_index;
    if (index) targets.push_back(upload_targets(indices));
    d.index.push_back(index ? static_cast<const std::int64_t*>(targets.back().data()) : nullptr);
    Tensor& t = operands[i];
    if (t.data() != nullptr) {
      if (!policy::contains(device_type_format(types.at(i)), t.format)) {
        throw std::logic_error(
            fmt::format("{}: operand {} of {} values does not fit the kernel's {}", op.name, i,
                        t.format.name, device_type_name(types.at(i))));
      }
      t = retyped(t, dtype_of(types.at(i)));
    }
    d.value.push_back(t.data());
  }
  Tensor y = empty(size, dtype_of(p.op_kernel.type));
  launch_op_kernel(op.op, shape, y.type, d, y.data(), context_->stream);
  return y;
}

ops::LayerNormGradients<CudaTensor> CudaKernels::layer_norm_backward(
    const Precision&, const Tensor& x, const Tensor& dy, const Tensor& gamma, std::size_t rows,
    std::size_t cols) {
  // The forward's statistics again, then the gradients. The forward's output is scratch and beta
  // does not enter the statistics: gamma (of beta's type, both weights of one role) stands in.
  Tensor mean = empty(rows, kernels::DType::f32);
  Tensor rstd = empty(rows, kernels::DType::f32);
  Tensor scratch = empty(x.size, x.type);
  kernels::layer_norm(x.type, x.data(), gamma.data(), gamma.data(), scratch.data(),
                      static_cast<float*>(mean.data()), static_cast<float*>(rstd.data()), rows,
                      cols, static_cast<float>(ops::kLayerNormEps), context_->stream);
  ops::LayerNormGradients<Tensor> g{empty(x.size, x.type), empty(cols, x.type),
                                    empty(cols, x.type)};
  kernels::layer_norm_backward(x.type, x.data(), dy.data(), gamma.data(),
                               static_cast<const float*>(mean.data()),
                               static_cast<const float*>(rstd.data()), g.dx.data(), g.dgamma.data(),
                               g.dbeta.data(), rows, cols, context_->stream);
  return g;
}

CudaTensor CudaKernels::upload_targets(std::span<const std::int64_t> targets) const {
  // Stored as an fp32-typed array of the right byte size: only the kernels read it.
  Tensor t{std::make_shared<DeviceArray>(targets.size_bytes(), context_->owned_stream),
           targets.size(), kernels::DType::f32, formats::fp32};
  upload_async(t.data(), targets.data(), targets.size_bytes(), context_->stream);
  return t;
}

CudaTensor CudaKernels::cross_entropy_backward(const Precision&, const Tensor& logits,
                                               std::span<const std::int64_t> targets,
                                               std::size_t rows, std::size_t classes,
                                               double d_loss) {
  const Tensor t = upload_targets(targets);
  Tensor dlogits = empty(logits.size, logits.type);
  // d_loss is the loss scale over the micro-batches, a binary32 value.
  kernels::cross_entropy_backward(
      logits.type, logits.data(), static_cast<const std::int64_t*>(t.data()),
      static_cast<float>(d_loss), dlogits.data(), rows, classes, context_->stream);
  return dlogits;
}

}  // namespace ampbench::backends::cuda

template class ampbench::ops::AutocastOps<ampbench::backends::cuda::CudaKernels>;
