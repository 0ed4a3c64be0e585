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

CudaOps::Context::Context()
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

CudaOps::Context::~Context() {
  AMPBENCH_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream));
  cudnn.reset();
  // The stream itself goes with the last array allocated on it (SharedStream).
}

CudaOps::CudaOps(policy::Policy policy) : policy_(std::move(policy)) {
  // The ops do not know the model (train_on_device checks the whole model's before any work): the
  // policy must run the ops every model has, its linear layers and its loss, on the device.
  const ops::ModelOp every_model[] = {{ops::find_op("linear"), policy::Op::linear},
                                      {ops::find_op("cross_entropy"), policy::Op::cross_entropy}};
  if (auto why = why_not_trainable(policy_, every_model)) throw std::invalid_argument(*why);
  context_ = std::make_unique<Context>();
}

CudaOps::~CudaOps() = default;
CudaOps::CudaOps(CudaOps&&) noexcept = default;
CudaOps& CudaOps::operator=(CudaOps&&) noexcept = default;

cudaStream_t CudaOps::stream() const {
  return context_->stream;
}

const SharedStream& CudaOps::shared_stream() const {
  return context_->owned_stream;
}

policy::OpPrecision CudaOps::resolved(policy::Op op, std::span<const Format> inputs) const {
  return policy::resolve(policy_.precision(op), inputs);
}

CudaTensor CudaOps::empty(std::size_t size, kernels::DType type) const {
  return {std::make_shared<DeviceArray>(size * kernels::dtype_bytes(type), context_->owned_stream),
          size, type, kernels::dtype_format(type)};
}

CudaTensor CudaOps::cast(const Tensor& t, kernels::DType to) const {
  if (t.type == to) return t;
  Tensor r = empty(t.size, to);
  kernels::cast(t.type, to, t.data(), r.data(), t.size, context_->stream);
  return r;
}

CudaTensor CudaOps::cast(const Tensor& t, const Format& to) const {
  return cast(t, dtype_of(to));
}

ops::Autocast CudaOps::autocast(std::string_view catalog_op, policy::Op op,
                                std::span<const Format> inputs) const {
  return ops::Autocast(*ops::find_op(catalog_op), resolved(op, inputs));
}

CudaTensor CudaOps::convert(const Tensor& t, const ops::Conversion& c) const {
  if (c.kept) return t;
  if (c.mode != numeric::Rounding::nearest_even) {
    throw std::logic_error(fmt::format("the device's casts round to nearest even, not {}",
                                       numeric::rounding_name(c.mode)));
  }
  return cast(t, c.format);
}

CudaTensor CudaOps::constant(std::span<const double> values) const {
  std::vector<float> binary32(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    binary32[i] = static_cast<float>(values[i]);
    if (static_cast<double>(binary32[i]) != values[i] && !std::isnan(values[i])) {
      throw std::invalid_argument("training data must be binary32");
    }
  }
  return parameter(binary32);
}

CudaTensor CudaOps::parameter(std::span<const Master> values) const {
  Tensor t = empty(values.size(), kernels::DType::f32);
  upload_async(t.data(), values.data(), values.size_bytes(), context_->stream);
  return t;
}

std::vector<CudaOps::Master> CudaOps::master_gradient(const Tensor& gradient) const {
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

std::vector<double> CudaOps::to_doubles(const Tensor& t) {
  std::vector<double> out(t.size);
  if (t.size == 0) return out;
  const cudaStream_t stream = t.storage->stream();
  std::vector<std::byte> bytes(t.storage->bytes());
  AMPBENCH_CUDA_CHECK(
      cudaMemcpyAsync(bytes.data(), t.data(), bytes.size(), cudaMemcpyDeviceToHost, stream));
  AMPBENCH_CUDA_CHECK(cudaStreamSynchronize(stream));
  return from_device(bytes, device_type_of(t.type));
}

CudaTensor CudaOps::linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows,
                           std::size_t in, std::size_t out) {
  const auto range = op_range("linear");
  const GemmPlan plan = linear_plan(policy_, x.format);
  const auto flow = autocast("linear", policy::Op::linear, std::initializer_list<Format>{x.format});
  const Tensor xa = cast(x, dtype_of(plan.inputs));
  const Tensor wa = cast(w, dtype_of(plan.inputs));
  const Tensor ba = convert(b, flow.operand(2));  // in the output's type (addmm's epilogue)
  Tensor y = empty(rows * out, dtype_of(plan.output));
  // C = X W as the catalog's gemm of shape rows x out x in: operand 0 is X, operand 1 is W.
  const GemmCall call = gemm_call(op_info("gemm"), ops::Shape{{rows, out, in}});
  const void* operands[] = {xa.data(), wa.data()};
  matmul(plan, call, operands[call.a.operand], operands[call.b.operand], y.data(), ba.data());
  return y;
}

CudaOps::LinearGradients CudaOps::linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                                  const Tensor& dy, std::size_t rows,
                                                  std::size_t in, std::size_t out, bool need_dx) {
  const auto range = op_range("linear_backward");
  const GemmPlan plan = linear_plan(policy_, x.format);
  const kernels::DType inputs = dtype_of(plan.inputs);
  const Tensor xa = cast(x, inputs);
  const Tensor dya = cast(dy, inputs);
  const ops::Shape shape{{rows, out, in}};
  LinearGradients g;
  if (need_dx) {
    // dX = dY W^T: the catalog's gemm_backward_a, operands dY and W.
    const Tensor wa = cast(w, inputs);
    Tensor dx = empty(rows * in, dtype_of(plan.output));
    const GemmCall call = gemm_call(op_info("gemm_backward_a"), shape);
    const void* operands[] = {dya.data(), wa.data()};
    matmul(plan, call, operands[call.a.operand], operands[call.b.operand], dx.data(), nullptr);
    g.dx = cast(dx, x.format);
  }
  // dW = X^T dY: gemm_backward_b, operands X and dY.
  Tensor dw = empty(in * out, dtype_of(plan.output));
  const GemmCall call = gemm_call(op_info("gemm_backward_b"), shape);
  const void* operands[] = {xa.data(), dya.data()};
  matmul(plan, call, operands[call.a.operand], operands[call.b.operand], dw.data(), nullptr);
  g.dw = cast(dw, w.format);
  // The bias gradient: dY summed over the rows in the output's type (linear_backward_bias's dy),
  // as autograd's sum(0) of dY gives it.
  const auto db_flow =
      autocast("linear_backward_bias", policy::Op::linear, std::initializer_list<Format>{x.format});
  const Tensor dyb = convert(dy, db_flow.operand(0));
  Tensor db = empty(out, dyb.type);
  kernels::column_sums(dyb.type, dyb.data(), db.data(), rows, out, context_->stream);
  g.db = convert(db, db_flow.gradient(b.format));
  return g;
}

void CudaOps::matmul(const GemmPlan& plan, const GemmCall& call, const void* a, const void* b,
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

CudaTensor CudaOps::activation(policy::Op op, std::string_view catalog_op, kernels::Activation act,
                               const Tensor& x, std::size_t rows, std::size_t cols) {
  const auto flow = autocast(catalog_op, op, std::initializer_list<Format>{x.format});
  const auto& q = flow.precision();
  const Tensor xa = convert(x, flow.operand(0));
  Tensor y = empty(xa.size, xa.type);
  kernels::bias_activation(xa.type, act, xa.data(), nullptr, y.data(), rows, cols,
                           context_->stream);
  return cast(y, q.output);
}

CudaTensor CudaOps::activation_gradient(policy::Op op, std::string_view catalog_op,
                                        kernels::Activation act, const Tensor& x,
                                        const Tensor& dy) {
  const auto flow = autocast(catalog_op, op, std::initializer_list<Format>{x.format, dy.format});
  const Tensor xa = convert(x, flow.operand(0));
  const Tensor dya = convert(dy, flow.operand(1));
  Tensor dx = empty(xa.size, xa.type);
  kernels::activation_backward(xa.type, act, xa.data(), dya.data(), dx.data(), xa.size,
                               context_->stream);
  return cast(dx, x.format);
}

CudaTensor CudaOps::gelu(const Tensor& x, std::size_t rows, std::size_t cols) {
  const auto range = op_range("gelu");
  return activation(policy::Op::gelu, "gelu", kernels::Activation::gelu, x, rows, cols);
}

CudaTensor CudaOps::gelu_backward(const Tensor& x, const Tensor& dy) {
  const auto range = op_range("gelu_backward");
  return activation_gradient(policy::Op::gelu, "gelu_backward", kernels::Activation::gelu, x, dy);
}

CudaTensor CudaOps::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               std::size_t rows, std::size_t cols) {
  const auto range = op_range("layer_norm");
  const auto flow =
      autocast("layer_norm", policy::Op::layer_norm, std::initializer_list<Format>{x.format});
  const auto& q = flow.precision();
  const Tensor xa = convert(x, flow.operand(0));
  const Tensor ga = convert(gamma, flow.operand(1));
  const Tensor ba = convert(beta, flow.operand(2));
  Tensor y = empty(xa.size, xa.type);
  kernels::layer_norm(xa.type, xa.data(), ga.data(), ba.data(), y.data(), nullptr, nullptr, rows,
                      cols, static_cast<float>(ops::kLayerNormEps), context_->stream);
  return cast(y, q.output);
}

CudaOps::LayerNormGradients CudaOps::layer_norm_backward(const Tensor& x, const Tensor& dy,
                                                         const Tensor& gamma, const Tensor& beta,
                                                         std::size_t rows, std::size_t cols) {
  const auto range = op_range("layer_norm_backward");
  // The forward's statistics again (layer_norm's operands), then dx (layer_norm_backward's).
  const std::initializer_list<Format> inputs{x.format};
  const auto forward = autocast("layer_norm", policy::Op::layer_norm, inputs);
  const auto flow = autocast("layer_norm_backward", policy::Op::layer_norm, inputs);
  const Tensor xa = convert(x, flow.operand(0));
  const Tensor dya = convert(dy, flow.operand(1));
  const Tensor ga = convert(gamma, flow.operand(2));
  const Tensor ba = convert(beta, forward.operand(2));
  Tensor mean = empty(rows, kernels::DType::f32);
  Tensor rstd = empty(rows, kernels::DType::f32);
  Tensor scratch = empty(xa.size, xa.type);  // the forward's output, not needed
  kernels::layer_norm(xa.type, xa.data(), ga.data(), ba.data(), scratch.data(),
                      static_cast<float*>(mean.data()), static_cast<float*>(rstd.data()), rows,
                      cols, static_cast<float>(ops::kLayerNormEps), context_->stream);
  Tensor dx = empty(xa.size, xa.type);
  Tensor dgamma = empty(cols, xa.type);
  Tensor dbeta = empty(cols, xa.type);
  kernels::layer_norm_backward(xa.type, xa.data(), dya.data(), ga.data(),
                               static_cast<const float*>(mean.data()),
                               static_cast<const float*>(rstd.data()), dx.data(), dgamma.data(),
                               dbeta.data(), rows, cols, context_->stream);
  LayerNormGradients g;
  g.dx = cast(dx, x.format);
  g.dgamma = cast(dgamma, gamma.format);
  g.dbeta = cast(dbeta, beta.format);
  return g;
}

CudaTensor CudaOps::upload_targets(std::span<const std::int64_t> targets) const {
  // Stored as an fp32-typed array of the right byte size: only the kernels read it.
  Tensor t{std::make_shared<DeviceArray>(targets.size_bytes(), context_->owned_stream),
           targets.size(), kernels::DType::f32, formats::fp32};
  upload_async(t.data(), targets.data(), targets.size_bytes(), context_->stream);
  return t;
}

double CudaOps::cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                              std::size_t rows, std::size_t classes) {
  const auto range = op_range("cross_entropy");
  const auto flow = autocast("cross_entropy", policy::Op::cross_entropy,
                             std::initializer_list<Format>{logits.format});
  const Tensor la = convert(logits, flow.operand(0));
  const Tensor t = upload_targets(targets);
  Tensor loss = empty(1, kernels::DType::f32);
  kernels::cross_entropy(la.type, la.data(), static_cast<const std::int64_t*>(t.data()),
                         static_cast<float*>(loss.data()), rows, classes, context_->stream);
  return to_doubles(loss).front();
}

CudaTensor CudaOps::cross_entropy_backward(const Tensor& logits,
                                           std::span<const std::int64_t> targets, std::size_t rows,
                                           std::size_t classes, double d_loss) {
  const auto range = op_range("cross_entropy_backward");
  const auto flow = autocast("cross_entropy_backward", policy::Op::cross_entropy,
                             std::initializer_list<Format>{logits.format});
  const Tensor la = convert(logits, flow.operand(0));
  const Tensor t = upload_targets(targets);
  Tensor dlogits = empty(la.size, la.type);
  // d_loss is the loss scale over the micro-batches, a binary32 value.
  kernels::cross_entropy_backward(la.type, la.data(), static_cast<const std::int64_t*>(t.data()),
                                  static_cast<float>(d_loss), dlogits.data(), rows, classes,
                                  context_->stream);
  return cast(dlogits, logits.format);
}

numeric::Format CudaOps::gradient_format() const {
  return policy::resolve(policy_.precision(policy::Op::linear),
                         std::initializer_list<Format>{formats::fp32})
      .output;
}

}  // namespace ampbench::backends::cuda
