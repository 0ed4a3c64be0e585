// What a training model calls on its ops, for every backend that trains: the gradients the
// backward ops give (templates over the backend's tensor) and the trainer's backend interface as
// a C++20 concept, statically dispatched, each backend with tensors of its own. The models
// (harness/train/models.hpp) and the training steps (harness/train/trainer_steps.hpp) are written
// against the concept; EmulatedOps (the CPU emulation under a policy) and ReferenceOps
// (multiprecision), harness/train/ops.hpp, and the CUDA backend's CudaOps
// (harness/backends/cuda/training_ops.hpp) model it, each saying so with a static_assert, so that
// a method that drifts from the others is a compile error naming the concept, not an error deep
// inside a model's template. It sits in the op layer so that a backend implements it without
// depending on the trainer.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "harness/ops/catalog.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::ops {

// One catalog op that a training model runs, with the policy op whose precision it runs under:
// a backward op runs under its forward op's (the linear layers' gemm_backward_a under linear's,
// attention's products under attention's), as autocast runs them. train::model_ops lists a
// model's, derived from its code.
struct ModelOp {
  const OpInfo* op = nullptr;
  policy::Op precision = policy::Op::gemm;
};

// What the backward of linear, layer_norm, the convolution and attention give, in every backend.
template <class Tensor>
struct LinearGradients {
  Tensor dx, dw, db;  // dx empty when not asked for
};
template <class Tensor>
struct LayerNormGradients {
  Tensor dx, dgamma, dbeta;
};
template <class Tensor>
struct ConvolutionGradients {
  Tensor dx, dw;  // dx empty when not asked for
};
template <class Tensor>
struct AttentionGradients {
  Tensor dq, dk, dv;
};

template <class O>
concept TrainingOps = requires(O& ops, const typename O::Tensor& t,
                               const typename O::Scalar& scalar, std::span<const double> values,
                               std::span<const typename O::Master> masters,
                               std::span<const std::int64_t> targets,
                               const ops::convolution::Geometry& g, std::size_t n, bool flag) {
  typename O::Tensor;
  typename O::Scalar;
  typename O::Master;
  // Data and parameters in, gradients and values out.
  { ops.constant(values) } -> std::same_as<typename O::Tensor>;
  { ops.parameter(masters) } -> std::same_as<typename O::Tensor>;
  { ops.master_gradient(t) } -> std::same_as<std::vector<typename O::Master>>;
  { O::to_doubles(t) } -> std::same_as<std::vector<double>>;
  { O::to_double(scalar) } -> std::convertible_to<double>;
  ops.phase("forward");  // a timed phase while its value lives (or nothing)
  // The mlp's ops.
  { ops.linear(t, t, t, n, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.linear_backward(t, t, t, t, n, n, n, flag) } -> std::same_as<typename O::LinearGradients>;
  { ops.gelu(t, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.gelu_backward(t, t) } -> std::same_as<typename O::Tensor>;
  { ops.layer_norm(t, t, t, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.layer_norm_backward(t, t, t, t, n, n) } -> std::same_as<typename O::LayerNormGradients>;
  { ops.cross_entropy(t, targets, n, n) } -> std::same_as<typename O::Scalar>;
  { ops.cross_entropy_backward(t, targets, n, n, scalar) } -> std::same_as<typename O::Tensor>;
  // The cnn's.
  { ops.conv2d(t, t, g) } -> std::same_as<typename O::Tensor>;
  { ops.conv2d_backward(t, t, t, g, flag) } -> std::same_as<typename O::ConvolutionGradients>;
  { ops.batch_norm(t, t, t, n, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.batch_norm_backward(t, t, t, t, n, n, n) } -> std::same_as<typename O::BatchNormGradients>;
  { ops.relu(t) } -> std::same_as<typename O::Tensor>;
  { ops.relu_backward(t, t) } -> std::same_as<typename O::Tensor>;
  { ops.mean_pool(t, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.mean_pool_backward(t, t, n, n) } -> std::same_as<typename O::Tensor>;
  // The transformer's.
  { ops.gradient_for(t, t) } -> std::same_as<typename O::Tensor>;
  { ops.add(t, t) } -> std::same_as<typename O::Tensor>;
  { ops.attention(t, t, t, n, n, n) } -> std::same_as<typename O::Tensor>;
  { ops.attention_backward(t, t, t, t, n, n, n) } -> std::same_as<typename O::AttentionGradients>;
};

}  // namespace ampbench::ops
