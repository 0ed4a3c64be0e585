// The ops a training model runs, with one interface and two implementations. Model code is written
// once, as a template over the ops type:
//   EmulatedOps   the CPU backend under a precision policy: values in binary64 containers, each op
//                 casting its inputs and rounding its arithmetic as the policy says, each tensor
//                 carrying the format its values are in;
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
#include <string_view>
#include <vector>

#include "harness/backends/cpu/emulate.hpp"
#include "harness/numeric/format.hpp"
#include "harness/ops/autocast.hpp"
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

class EmulatedOps {
 public:
  using Tensor = EmulatedTensor;
  using Scalar = double;  // losses and the upstream gradient
  using Master = float;   // master weights and their gradients: binary32
  static constexpr const char* kBackend = "cpu";

  explicit EmulatedOps(policy::Policy policy);
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

  // y = x w + b: x rows x in, w in x out, b out (linear / addmm).
  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out);
  using LinearGradients = train::LinearGradients<Tensor>;
  // dx = dy w^T (only when need_dx), dw = x^T dy, db = column sums of dy.
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
  // Mean cross-entropy of rows x classes logits.
  Scalar cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                       std::size_t rows, std::size_t classes);
  // Its gradient times the upstream gradient d_loss (the loss scale, divided by the number of
  // accumulated micro-batches), in the logits' format.
  Tensor cross_entropy_backward(const Tensor& logits, std::span<const std::int64_t> targets,
                                std::size_t rows, std::size_t classes, Scalar d_loss);

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

  // The format the weight gradients of matmuls come out in (fp16 under amp-fp16): where small
  // gradients underflow.
  numeric::Format gradient_format() const;
  // Rounding events of the arithmetic (intermediate and output roundings of every op) and of the
  // casts of op inputs.
  const backends::cpu::Events& events() const { return events_; }
  const numeric::EventCounts& cast_events() const { return cast_events_; }

 private:
  policy::OpPrecision resolved(policy::Op op, std::span<const numeric::Format> inputs) const;
  // The type flow of the catalog op `catalog_op` (ops/autocast.hpp) under the policy's precision
  // for `op` resolved for the data inputs' formats; a tensor converted as it says.
  ops::Autocast autocast(std::string_view catalog_op, policy::Op op,
                         std::span<const numeric::Format> inputs) const;
  Tensor convert(const Tensor& t, const ops::Conversion& c);
  Tensor cast(const Tensor& t, const numeric::Format& to, numeric::Rounding mode);
  std::vector<double> lowered_gemms(const policy::OpPrecision& q, ops::convolution::Pass pass,
                                    const ops::convolution::Geometry& g, const Tensor& first,
                                    const Tensor& second);

  policy::Policy policy_;
  backends::cpu::Events events_;
  numeric::EventCounts cast_events_;
  profile::PhaseRecorder* recorder_ = nullptr;
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
