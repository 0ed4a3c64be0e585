// The training ops of the CUDA backend: the ops interface of harness/train/ops.hpp (what the mlp,
// the cnn and the transformer run) on the device, under a precision policy, with autocast's dtype
// flow as train::EmulatedOps models it: each op casts its inputs to the policy's input type on the
// device, linear layers run through cuBLASLt with the compute type the policy's plan names, the
// other ops through kernels/op_kernels.hpp (binary32 arithmetic, one rounding to the output type),
// and a gradient comes back in the type of its input. In training, the master weights, their
// gradients and the optimizer stay on the device (train::cuda::DeviceMasters,
// harness/train/cuda/device_masters.hpp), and the trainer unscales, clips and steps them there;
// parameter() and master_gradient() copy between host and device for tests and single ops.
//
// All work of one CudaOps runs in order on a stream of its own; device memory comes from the
// stream-ordered pool (cudaMallocAsync), so that a step allocates without synchronizing, as a
// framework's caching allocator does. Needs the CUDA toolkit and, to run, a device.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "harness/backends/cuda/plan.hpp"
#include "harness/numeric/format.hpp"
#include "harness/ops/autocast.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/ops/training_ops.hpp"
#include "harness/policy/policy.hpp"
#include "harness/profile/host_timer.hpp"
#include "kernels/cuda_stream.hpp"
#include "kernels/op_kernels.hpp"

namespace ampbench::backends::cuda {

// The stream a CudaOps runs on, owned jointly by the ops and by every array allocated on it: an
// array freed after its CudaOps is gone still enqueues its free on a live stream.
using SharedStream = std::shared_ptr<const kernels::CudaStream>;

// Device memory from the stream-ordered pool, freed on its stream when the last tensor holding it
// goes.
class DeviceArray {
 public:
  DeviceArray(std::size_t bytes, SharedStream stream);
  ~DeviceArray();
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  cudaStream_t stream() const { return stream_->get(); }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  SharedStream stream_;
};

// Copies `bytes` of host memory to device memory on `stream` without waiting for it. The source
// may be pageable memory the caller frees at once: it is first copied into memory the upload owns,
// which a host function enqueued after the copy releases, so the copy never depends on the driver
// having staged the source before cudaMemcpyAsync returned.
void upload_async(void* device, const void* host, std::size_t bytes, cudaStream_t stream);

// A tensor on the device: `size` elements of `type`, whose values are values of `format` (fp32,
// fp16 or bf16: the format the type holds).
struct CudaTensor {
  std::shared_ptr<DeviceArray> storage;
  std::size_t size = 0;
  kernels::DType type = kernels::DType::f32;
  numeric::Format format = numeric::formats::fp32;

  const void* data() const { return storage ? storage->data() : nullptr; }
  void* data() { return storage ? storage->data() : nullptr; }
};

class CudaOps {
 public:
  using Tensor = CudaTensor;
  using Scalar = double;  // losses and the upstream gradient
  using Master = float;   // master weights and their gradients: binary32
  static constexpr const char* kBackend = "cuda";

  // Throws std::invalid_argument when the device cannot run the policy's linear layers or loss
  // (why_not_trainable), kernels::CudaError when the stream or cuBLASLt cannot be created.
  explicit CudaOps(policy::Policy policy);
  ~CudaOps();
  CudaOps(CudaOps&&) noexcept;
  CudaOps& operator=(CudaOps&&) noexcept;

  const policy::Policy& policy() const { return policy_; }
  cudaStream_t stream() const;
  const SharedStream& shared_stream() const;

  // Phases timed into `recorder` from now on (null: none); with NVTX hooks in the recorder they
  // are NVTX ranges too.
  void record_phases(profile::PhaseRecorder* recorder) { recorder_ = recorder; }
  bool recording() const { return recorder_ != nullptr; }
  std::optional<profile::ScopedPhase> phase(std::string name) {
    if (recorder_ == nullptr) return std::nullopt;
    return std::optional<profile::ScopedPhase>(std::in_place, *recorder_, std::move(name));
  }
  // A range named after an op of the ops interface around its work, while phases are recorded:
  // with NVTX hooks, Nsight Systems and the attribution see each op ("linear", "layer_norm", ...),
  // and the GEMM and convolution ranges nest inside.
  std::optional<profile::ScopedPhase> op_range(const char* name) {
    return recording() ? phase(name) : std::nullopt;
  }

  Tensor constant(std::span<const double> values) const;  // binary32 values
  Tensor parameter(std::span<const Master> values) const;
  std::vector<Master> master_gradient(const Tensor& gradient) const;  // waits for the stream
  static std::vector<double> to_doubles(const Tensor& t);             // waits for the stream
  static double to_double(Scalar s) { return s; }

  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out);
  using LinearGradients = ops::LinearGradients<Tensor>;
  LinearGradients linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                  const Tensor& dy, std::size_t rows, std::size_t in,
                                  std::size_t out, bool need_dx);
  Tensor gelu(const Tensor& x, std::size_t rows, std::size_t cols);
  Tensor gelu_backward(const Tensor& x, const Tensor& dy);
  Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t rows,
                    std::size_t cols);
  using LayerNormGradients = ops::LayerNormGradients<Tensor>;
  // Recomputes the rows' mean and reciprocal standard deviation (one more layer-norm kernel): the
  // ops interface hands the backward the forward's input, not its saved statistics.
  LayerNormGradients layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t rows, std::size_t cols);
  Scalar cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                       std::size_t rows, std::size_t classes);  // waits for the stream
  Tensor cross_entropy_backward(const Tensor& logits, std::span<const std::int64_t> targets,
                                std::size_t rows, std::size_t classes, Scalar d_loss);

  // The cnn's ops (training_ops_cnn.cpp). Convolutions run through cuDNN with the data, compute
  // and math types of the audit's plan for the policy's conv precision (conv_plan.hpp), on a
  // cuDNN handle bound to this stream; batch norm and pooling through kernels/cnn_kernels.hpp,
  // relu through kernels/op_kernels.hpp.
  Tensor conv2d(const Tensor& x, const Tensor& w, const ops::convolution::Geometry& g);
  using ConvolutionGradients = ops::ConvolutionGradients<Tensor>;
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                       const ops::convolution::Geometry& g, bool need_dx);
  // Training-mode batch norm of batch x channels x spatial values, per channel. The backward
  // recomputes the channels' statistics, as layer_norm_backward does.
  Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t batch,
                    std::size_t channels, std::size_t spatial);
  using BatchNormGradients = ops::LayerNormGradients<Tensor>;
  BatchNormGradients batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t batch,
                                         std::size_t channels, std::size_t spatial);
  Tensor relu(const Tensor& x);
  Tensor relu_backward(const Tensor& x, const Tensor& dy);
  // Global average pooling: the mean of each row of rows x cols, and its backward.
  Tensor mean_pool(const Tensor& x, std::size_t rows, std::size_t cols);
  Tensor mean_pool_backward(const Tensor& x, const Tensor& dy, std::size_t rows, std::size_t cols);

  // The transformer's ops (training_ops_transformer.cpp). add runs kernels::add under the policy's
  // add precision; gradient_for casts a gradient to its input's format, as autograd stores it.
  // Attention is the emulation's fused kernel (harness/backends/cpu/emulate.hpp) as separate
  // steps in the compute format of the policy's attention (fp32 under fp32, tf32 and autocast, fp16
  // under pure fp16): the scores Q K^T and dP = dO V^T through strided-batched cuBLASLt products of
  // the inputs as the policy casts them (tf32: rounded on the device) written in the compute
  // format, the scale 1/sqrt(d) rounded to that format applied to the sums, softmax and the score
  // gradients dS = P (dP - rowsum(dO * O)) (FlashAttention-2's) in kernels/op_kernels.hpp, and the
  // products of the probabilities and score gradients (P V, dS K, dS^T Q, P^T dO) as GEMMs in the
  // compute format on the other operand widened exactly; one rounding to the output format at the
  // end. The backward recomputes the scores, the probabilities and the output O, as
  // FlashAttention's recomputes P (it keeps O).
  Tensor gradient_for(const Tensor& input, const Tensor& gradient);
  Tensor add(const Tensor& a, const Tensor& b);
  // One head of attention per sample: q, k, v batch x length x d.
  Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t batch,
                   std::size_t length, std::size_t d);
  using AttentionGradients = ops::AttentionGradients<Tensor>;
  AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& d_out, std::size_t batch, std::size_t length,
                                        std::size_t d);

  // The format the weight gradients of matmuls come out in (fp16 under amp-fp16).
  numeric::Format gradient_format() const;

 private:
  struct Context;
  Tensor empty(std::size_t size, kernels::DType type) const;
  Tensor cast(const Tensor& t, kernels::DType to) const;
  Tensor cast(const Tensor& t, const numeric::Format& to) const;
  Tensor upload_targets(std::span<const std::int64_t> targets) const;
  // An activation of rows x cols values under `op`'s precision, and its backward: gelu and relu.
  Tensor activation(policy::Op op, std::string_view catalog_op, kernels::Activation act,
                    const Tensor& x, std::size_t rows, std::size_t cols);
  Tensor activation_gradient(policy::Op op, std::string_view catalog_op, kernels::Activation act,
                             const Tensor& x, const Tensor& dy);
  // Enqueues one product of a linear layer inside a range "gemm m=.. n=.. k=.. dtype=.." (when
  // phases are recorded), so that profiles can tell the shape's Tensor Core eligibility.
  void matmul(const GemmPlan& plan, const GemmCall& call, const void* a, const void* b, void* d,
              const void* bias);
  policy::OpPrecision resolved(policy::Op op, std::span<const numeric::Format> inputs) const;
  // The type flow of the catalog op `catalog_op` (ops/autocast.hpp, the emulation's too) under the
  // policy's precision for `op` resolved for the data inputs' formats; a tensor converted as it
  // says, to the type that holds the conversion's format (the device casts round to nearest even,
  // the only mode why_not_trainable lets through).
  ops::Autocast autocast(std::string_view catalog_op, policy::Op op,
                         std::span<const numeric::Format> inputs) const;
  Tensor convert(const Tensor& t, const ops::Conversion& c) const;
  // Batch norm's gamma or beta as the kernels take it, binary32 holding the values of the weight
  // the op uses (kept under a promote entry: the fp32 parameter itself; otherwise rounded to its
  // input format).
  Tensor batch_norm_weight(const ops::Conversion& c, const Tensor& weight) const;
  // One cuDNN pass of a convolution, the catalog's op `pass` (conv2d, conv2d_backward_data or
  // conv2d_backward_filter) under the conv precision `q`, inside a range that names it (when
  // phases are recorded); first and second in the pass's operand order, cast to its data type.
  // The output is in that type.
  Tensor convolution(const policy::OpPrecision& q, std::string_view pass,
                     const ops::convolution::Geometry& g, const Tensor& first,
                     const Tensor& second);

  // x * factor element by element, in x's type (kernels::scale).
  Tensor scaled(const Tensor& x, float factor);
  // t's values rounded to attention's input format f (autocast's cast), in the type that holds f:
  // a cast, and for tf32 (held by binary32) kernels::round_to_tf32 after it.
  Tensor in_format(const Tensor& t, const numeric::Format& f);
  // t widened exactly to the compute format f (a format that holds t's values), said to be f.
  Tensor widened(const Tensor& t, const numeric::Format& f) const;
  // The scaled scores of attention under its precision q, batch x length x length values of its
  // compute format s_ij = (q_i . k_j) * (1/sqrt d), from q and k already in q's input type; and
  // the probabilities, the softmax of each row of `length` scores in their type.
  Tensor attention_scores(const policy::OpPrecision& q, const Tensor& queries, const Tensor& keys,
                          std::size_t batch, std::size_t length, std::size_t d);
  Tensor attention_probabilities(const Tensor& scores, std::size_t length);
  // One strided-batched product of attention, batch x (M x N x K) as `shape` gives it: `op` is the
  // catalog's gemm, gemm_backward_a or gemm_backward_b, first and second its operands in the
  // catalog's order, both of one format (q's input or compute format), each sample's matrices one
  // after another. The result is in q's compute format (attention_product_plan).
  Tensor attention_product(const policy::OpPrecision& q, std::string_view op,
                           const ops::Shape& shape, std::size_t batch, const Tensor& first,
                           const Tensor& second);

  policy::Policy policy_;
  std::unique_ptr<Context> context_;
  profile::PhaseRecorder* recorder_ = nullptr;
};

static_assert(ops::TrainingOps<CudaOps>);

// Peak bytes in use in the device's default memory pool since the last reset, and the reset.
std::uint64_t peak_pool_bytes();
void reset_peak_pool_bytes();

}  // namespace ampbench::backends::cuda
