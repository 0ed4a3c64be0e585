// The ops a training model runs, with one interface and two implementations. Model code is written
// once, as a template over the ops type:
//   EmulatedOps   the CPU backend under a precision policy: values in binary64 containers, each op
//                 casting its inputs and rounding its arithmetic as the policy says, each tensor
//                 carrying the format its values are in; autocast's type flow over the
//                 emulation's kernels (ops::AutocastOps, as the CUDA backend's CudaOps is);
//   ReferenceOps  the same functions in multiprecision (reference/mp), at the working precision of
//                 the calling thread.
//
// Autocast's dtype flow is modelled as PyTorch runs it: an op casts its inputs to its input format
// (resolving "promote" entries against the formats of its data inputs), and the gradient with
// respect to an input comes back in that input's own format, as autograd returns a gradient in
// the dtype of the tensor it belongs to (the backward of an autocast cast is the cast back).
// A backward op runs under its forward op's precision. Parameters (master weights) are binary32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/numeric/format.hpp"
#include "harness/ops/autocast_ops.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/ops/training_ops.hpp"
#include "harness/policy/policy.hpp"
#include "harness/profile/host_timer.hpp"
#include "reference/mp/multiprecision.hpp"

namespace ampbench::train {

// The norms' epsilons are the catalog's (harness/ops/catalog.hpp).
using ops::kBatchNormEps;
using ops::kLayerNormEps;

// The gradients the backward ops give (harness/ops/training_ops.hpp).
using ops::AttentionGradients;
using ops::ConvolutionGradients;
using ops::LayerNormGradients;
using ops::LinearGradients;

// A tensor of the emulated backend: every value is a value of `format`.
struct EmulatedTensor {
  std::vector<double> values;
  numeric::Format format = numeric::formats::fp32;
};

// The CPU emulation's kernels under a precision policy (ops/autocast_ops.hpp says what a backend's
// kernels are): each takes the op's resolved precision and operands already converted by the
// type flow, computes as backends/cpu/emulate.hpp rounds, and gives its result in the precision's
// output format.
class EmulatedKernels {
 public:
  using Tensor = EmulatedTensor;
  using Scalar = double;  // losses and the upstream gradient
  using Master = float;   // master weights and their gradients: binary32
  static constexpr const char* kBackend = "cpu";

  explicit EmulatedKernels(policy::Policy policy);
  const policy::Policy& policy() const { return policy_; }

  // Phases (forward, backward, ...) timed into `recorder` from now on, each op of the models a
  // range of its own inside them (named as the op: "linear", "attention_backward"); null: none.
  void record_phases(profile::PhaseRecorder* recorder) { recorder_ = recorder; }
  // A phase of the step, timed while the returned value lives (nothing without a recorder).
  std::optional<profile::ScopedPhase> phase(const char* name) {
    if (recorder_ == nullptr) return std::nullopt;
    return std::optional<profile::ScopedPhase>(std::in_place, *recorder_, name);
  }

  // Data and master weights, binary32 values.
  Tensor constant(std::span<const double> values) const;
  Tensor parameter(std::span<const Master> values) const;
  // A gradient with respect to a parameter, as the binary32 master gradient.
  std::vector<Master> master_gradient(const Tensor& gradient) const;
  static std::vector<double> to_doubles(const Tensor& t) { return t.values; }
  static double to_double(Scalar s) { return s; }
  static std::size_t elements(const Tensor& t) { return t.values.size(); }

 protected:
  using Precision = policy::OpPrecision;
  std::optional<profile::ScopedPhase> op_range(const char* name) { return phase(name); }
  // t's values rounded to `to` in `mode`; t itself, said to be of `to`, when `to` holds them.
  Tensor cast(const Tensor& t, const numeric::Format& to, numeric::Rounding mode) const;

  // The catalog op as the audit's CPU backend runs it (ops::run_cpu), summing in order.
  Tensor run(const Precision& q, const ops::OpInfo& op, const ops::Shape& shape,
             std::vector<Tensor> operands, std::span<const std::int64_t> indices);
  ops::LayerNormGradients<Tensor> layer_norm_backward(const Precision& q, const Tensor& x,
                                                      const Tensor& dy, const Tensor& gamma,
                                                      std::size_t rows, std::size_t cols);
  // d_loss is rounded to the compute format first.
  Tensor cross_entropy_backward(const Precision& q, const Tensor& logits,
                                std::span<const std::int64_t> targets, std::size_t rows,
                                std::size_t classes, Scalar d_loss);
  Tensor batch_norm(const Precision& q, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    std::size_t batch, std::size_t channels, std::size_t spatial);
  ops::LayerNormGradients<Tensor> batch_norm_backward(const Precision& q, const Tensor& x,
                                                      const Tensor& dy, const Tensor& gamma,
                                                      std::size_t batch, std::size_t channels,
                                                      std::size_t spatial);
  Tensor attention(const Precision& q, const Tensor& queries, const Tensor& keys,
                   const Tensor& values, std::size_t batch, std::size_t length, std::size_t d);
  ops::AttentionGradients<Tensor> attention_backward(const Precision& q, const Tensor& queries,
                                                     const Tensor& keys, const Tensor& values,
                                                     const Tensor& d_out, std::size_t batch,
                                                     std::size_t length, std::size_t d);

 private:
  policy::Policy policy_;
  // Where the emulation's kernels count their rounding events; the trainer reads none.
  backends::cpu::Events events_;
  profile::PhaseRecorder* recorder_ = nullptr;
};

}  // namespace ampbench::train

// The type flow over these kernels is compiled once, in ops.cpp.
extern template class ampbench::ops::AutocastOps<ampbench::train::EmulatedKernels>;

namespace ampbench::train {

// The CPU backend under a precision policy: values in binary64 containers, each op casting its
// inputs and rounding its arithmetic as the policy says, each tensor carrying the format its
// values are in.
class EmulatedOps : public ops::AutocastOps<EmulatedKernels> {
 public:
  explicit EmulatedOps(policy::Policy policy) : AutocastOps(std::move(policy)) {}
};

// The reference: every op in multiprecision (reference/mp/ops.hpp) at the calling thread's working
// precision. Formats play no part.
class ReferenceOps {
 public:
  using Tensor = std::vector<reference::Real>;
  using Scalar = reference::Real;
  using Master = reference::Real;

  // The reference is not profiled. (A user-provided destructor, so that a NoPhase held only for
  // its scope is not an unused variable.)
  struct NoPhase {
    ~NoPhase() {}
  };
  NoPhase phase(const char*) const { return {}; }

  Tensor constant(std::span<const double> values) const;
  Tensor parameter(std::span<const Master> values) const { return {values.begin(), values.end()}; }
  std::vector<Master> master_gradient(const Tensor& gradient) const { return gradient; }
  static std::vector<double> to_doubles(const Tensor& t);
  static double to_double(const Scalar& s) { return reference::to_double(s); }

  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out);
  using LinearGradients = train::LinearGradients<Tensor>;
  LinearGradients linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                  const Tensor& dy, std::size_t rows, std::size_t in,
                                  std::size_t out, bool need_dx);
  Tensor gelu(const Tensor& x, std::size_t rows, std::size_t cols);
  Tensor gelu_backward(const Tensor& x, const Tensor& dy);
  Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t rows,
                    std::size_t cols);
  using LayerNormGradients = train::LayerNormGradients<Tensor>;
  LayerNormGradients layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t rows, std::size_t cols);
  Scalar cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                       std::size_t rows, std::size_t classes);
  Tensor cross_entropy_backward(const Tensor& logits, std::span<const std::int64_t> targets,
                                std::size_t rows, std::size_t classes, const Scalar& d_loss);

  // The CNN's ops. conv2d: x N x C x H x W, w O x C/groups x R x S, the geometry's batch N.
  Tensor conv2d(const Tensor& x, const Tensor& w, const ops::convolution::Geometry& g);
  using ConvolutionGradients = train::ConvolutionGradients<Tensor>;
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                       const ops::convolution::Geometry& g, bool need_dx);
  // Training-mode batch norm of batch x channels x spatial values, per channel.
  Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t batch,
                    std::size_t channels, std::size_t spatial);
  using BatchNormGradients = train::LayerNormGradients<Tensor>;
  BatchNormGradients batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t batch,
                                         std::size_t channels, std::size_t spatial);
  Tensor relu(const Tensor& x);
  Tensor relu_backward(const Tensor& x, const Tensor& dy);
  // Global average pooling: the mean of each row of rows x cols, and its backward.
  Tensor mean_pool(const Tensor& x, std::size_t rows, std::size_t cols);
  Tensor mean_pool_backward(const Tensor& x, const Tensor& dy, std::size_t rows, std::size_t cols);

  // The gradient with respect to `input` as autograd stores it: in the input's format.
  Tensor gradient_for(const Tensor& input, const Tensor& gradient);
  // The transformer's ops. a + b element by element (a residual connection, and the sum of the
  // gradients a tensor receives from its several uses, as autograd accumulates them).
  Tensor add(const Tensor& a, const Tensor& b);
  // One head of attention per sample: q, k, v batch x length x d.
  Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t batch,
                   std::size_t length, std::size_t d);
  using AttentionGradients = train::AttentionGradients<Tensor>;
  AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& d_out, std::size_t batch, std::size_t length,
                                        std::size_t d);

 private:
  Tensor lowered_gemms(ops::convolution::Pass pass, const ops::convolution::Geometry& g,
                       const Tensor& first, const Tensor& second);
};

static_assert(ops::TrainingOps<EmulatedOps>);
static_assert(ops::TrainingOps<ReferenceOps>);

}  // namespace ampbench::train
