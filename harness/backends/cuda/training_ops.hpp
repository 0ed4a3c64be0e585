// The training ops of the CUDA backend: the ops interface of harness/ops/training_ops.hpp (what
// the mlp, the cnn and the transformer run) on the device, under a precision policy, with
// autocast's type flow as the CPU emulation runs it (ops::AutocastOps over each backend's
// kernels): each op's operands converted to the policy's formats on the device, linear layers run
// through cuBLASLt with the compute type the policy's plan names, the other ops through
// kernels/op_kernels.hpp (binary32 arithmetic, one rounding to the output type), and a gradient
// brought back to the type of its input. In training, the master weights, their gradients and the
// optimizer stay on the device (train::cuda::DeviceMasters, harness/train/cuda/device_masters.hpp),
// and the trainer unscales, clips and steps them there; parameter() and master_gradient() copy
// between host and device for tests and single ops.
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
#include <utility>
#include <vector>

#include "harness/backends/cuda/plan.hpp"
#include "harness/numeric/format.hpp"
#include "harness/ops/autocast_ops.hpp"
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

// The CUDA backend's kernels under a precision policy (ops/autocast_ops.hpp says what a backend's
// kernels are): each takes the op's resolved precision and operands already converted by the
// type flow, on the device, and gives its result in the type its device kernel writes (the
// operands' type, or the GEMM plan's output type), which the type flow then takes to the op's
// output format.
class CudaKernels {
 public:
  using Tensor = CudaTensor;
  using Scalar = double;  // losses and the upstream gradient
  using Master = float;   // master weights and their gradients: binary32
  static constexpr const char* kBackend = "cuda";

  // Throws std::invalid_argument when the device cannot run the policy's linear layers or loss
  // (why_not_trainable), kernels::CudaError when the stream or cuBLASLt cannot be created.
  explicit CudaKernels(policy::Policy policy);
  ~CudaKernels();
  CudaKernels(CudaKernels&&) noexcept;
  CudaKernels& operator=(CudaKernels&&) noexcept;

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

  Tensor constant(std::span<const double> values) const;  // binary32 values
  Tensor parameter(std::span<const Master> values) const;
  std::vector<Master> master_gradient(const Tensor& gradient) const;  // waits for the stream
  static std::vector<double> to_doubles(const Tensor& t);             // waits for the stream
  static double to_double(Scalar s) { return s; }
  static std::size_t elements(const Tensor& t) { return t.size; }

 protected:
  using Precision = policy::OpPrecision;
  // A range named after an op of the ops interface around its work, while phases are recorded:
  // with NVTX hooks, Nsight Systems and the attribution see each op ("linear", "layer_norm", ...),
  // and the GEMM and convolution ranges nest inside.
  std::optional<profile::ScopedPhase> op_range(const char* name) {
    return recording() ? phase(name) : std::nullopt;
  }
  // t's values as values of `to`, in the device type that holds `to` (fp32 and tf32: binary32):
  // a cast between types, and for tf32 kernels::round_to_tf32 after it. t itself, said to be of
  // `to`, when its type holds `to` and `to` holds its values. The device rounds to nearest even
  // only: std::logic_error for another mode (why_not_trainable refuses such policies first).
  Tensor cast(const Tensor& t, const numeric::Format& to, numeric::Rounding mode) const;

  // The catalog op as the audit's CUDA backend plans it under q (plan.hpp), on this stream: a
  // product (linear, gemm_backward_a, gemm_backward_b) through cuBLASLt with the plan's compute
  // type, A and B in its input type, linear's bias in its output type through the epilogue; a
  // convolution pass through cuDNN (convolve); an op
  // kernel through the audit's launch (kernel.hpp's launch_op_kernel) in the plan's element type,
  // each operand widened to it (an operand it cannot hold is a std::logic_error). The kernels and
  // the arithmetic the audit's CUDA backend judges.
  Tensor run(const Precision& q, const ops::OpInfo& op, const ops::Shape& shape,
             std::vector<Tensor> operands, std::span<const std::int64_t> indices);
  // Recomputes the rows' mean and reciprocal standard deviation (one more layer-norm kernel): the
  // ops interface hands the backward the forward's input, not its saved statistics.
  ops::LayerNormGradients<Tensor> layer_norm_backward(const Precision& q, const Tensor& x,
                                                      const Tensor& dy, const Tensor& gamma,
                                                      std::size_t rows, std::size_t cols);
  Tensor cross_entropy_backward(const Precision& q, const Tensor& logits,
                                std::span<const std::int64_t> targets, std::size_t rows,
                                std::size_t classes, Scalar d_loss);

  // The cnn's kernels (training_ops_cnn.cpp): batch norm through kernels/cnn_kernels.hpp (its
  // backward recomputes the channels' statistics).
  Tensor batch_norm(const Precision& q, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    std::size_t batch, std::size_t channels, std::size_t spatial);
  ops::LayerNormGradients<Tensor> batch_norm_backward(const Precision& q, const Tensor& x,
                                                      const Tensor& dy, const Tensor& gamma,
                                                      std::size_t batch, std::size_t channels,
                                                      std::size_t spatial);

  // The transformer's kernels (training_ops_transformer.cpp). Attention
  // is the emulation's fused kernel (harness/backends/cpu/emulate.hpp) as separate steps in the
  // compute format of q (fp32 under fp32, tf32 and autocast, fp16 under pure fp16): the scores
  // Q K^T and dP = dO V^T through strided-batched cuBLASLt products of the inputs as the type flow
  // converted them, written in the compute format, the scale 1/sqrt(d) rounded to that format
  // applied to the sums, softmax and the score gradients dS = P (dP - rowsum(dO * O))
  // (FlashAttention-2's) in kernels/op_kernels.hpp, and the products of the probabilities and
  // score gradients (P V, dS K, dS^T Q, P^T dO) as GEMMs in the compute format on the other
  // operand widened exactly. The backward recomputes the scores, the probabilities and the output
  // O (rounded to the output format, as the forward stored it), as FlashAttention's recomputes P.
  Tensor attention(const Precision& q, const Tensor& queries, const Tensor& keys,
                   const Tensor& values, std::size_t batch, std::size_t length, std::size_t d);
  ops::AttentionGradients<Tensor> attention_backward(const Precision& q, const Tensor& queries,
                                                     const Tensor& keys, const Tensor& values,
                                                     const Tensor& d_out, std::size_t batch,
                                                     std::size_t length, std::size_t d);

 private:
  struct Context;
  // One pass of a convolution (`op` at `shape`, conv2d or a gradient) through cuDNN with the data,
  // compute and math types of the audit's plan `c` (conv_plan.hpp), on a cuDNN handle bound to
  // this stream, inside a range that names it (when phases are recorded); first and second in the
  // pass's operand order, cast to its data type (training_ops_cnn.cpp).
  Tensor convolve(const ConvPlan& c, const ops::OpInfo& op, const ops::Shape& shape,
                  const Tensor& first, const Tensor& second);
  Tensor empty(std::size_t size, kernels::DType type) const;
  // t in element type `to` (the values converted by the device, rounding to nearest even).
  Tensor retyped(const Tensor& t, kernels::DType to) const;
  Tensor upload_targets(std::span<const std::int64_t> targets) const;
  // Enqueues one product of a linear layer inside a range "gemm m=.. n=.. k=.. dtype=.." (when
  // phases are recorded), so that profiles can tell the shape's Tensor Core eligibility.
  void matmul(const GemmPlan& plan, const GemmCall& call, const void* a, const void* b, void* d,
              const void* bias);

  // x * factor element by element, in x's type (kernels::scale).
  Tensor scaled(const Tensor& x, float factor);
  // t widened exactly to the compute format f (a format that holds t's values), said to be f.
  Tensor widened(const Tensor& t, const numeric::Format& f) const;
  // The scaled scores of attention under its precision q, batch x length x length values of its
  // compute format s_ij = (q_i . k_j) * (1/sqrt d), from q and k already in q's input type; and
  // the probabilities, the softmax of each row of `length` scores in their type.
  Tensor attention_scores(const Precision& q, const Tensor& queries, const Tensor& keys,
                          std::size_t batch, std::size_t length, std::size_t d);
  Tensor attention_probabilities(const Tensor& scores, std::size_t length);
  // One strided-batched product of attention, batch x (M x N x K) as `shape` gives it: `op` is the
  // catalog's gemm, gemm_backward_a or gemm_backward_b, first and second its operands in the
  // catalog's order, both of one format (q's input or compute format), each sample's matrices one
  // after another. The result is in q's compute format (attention_product_plan).
  Tensor attention_product(const Precision& q, std::string_view op, const ops::Shape& shape,
                           std::size_t batch, const Tensor& first, const Tensor& second);

  policy::Policy policy_;
  std::unique_ptr<Context> context_;
  profile::PhaseRecorder* recorder_ = nullptr;
};

}  // namespace ampbench::backends::cuda

// The type flow over these kernels is compiled once, in training_ops.cpp.
extern template class ampbench::ops::AutocastOps<ampbench::backends::cuda::CudaKernels>;

namespace ampbench::backends::cuda {

// The training ops on the device: autocast's type flow (ops::AutocastOps, the CPU emulation's
// too) over the kernels above.
class CudaOps : public ops::AutocastOps<CudaKernels> {
 public:
  explicit CudaOps(policy::Policy policy) : AutocastOps(std::move(policy)) {}
};

static_assert(ops::TrainingOps<CudaOps>);

// Peak bytes in use in the device's default memory pool since the last reset, and the reset.
std::uint64_t peak_pool_bytes();
void reset_peak_pool_bytes();

}  // namespace ampbench::backends::cuda
