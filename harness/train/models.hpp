// The models ampbench trains, with hand-written backward passes through the ops of ops.hpp. Each is
// a template over the ops type, so that one text serves every policy and the multiprecision
// reference. A model declares its parameters (names, shapes, initialisation) and computes, for a
// batch, its logits, and its mean loss with the gradient of d_loss * loss for every parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ampbench::train {

struct ParameterSpec {
  enum class Init {
    uniform_fan_in,  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch.nn.Linear initialises both
                     // its weight and its bias (kaiming_uniform with a = sqrt(5) gives this bound)
    zeros,
    ones,
  };
  std::string name;
  std::vector<std::size_t> shape;
  Init init = Init::uniform_fan_in;
  std::size_t fan_in = 1;
};

std::size_t element_count(const ParameterSpec& p);

// Initial values of every parameter from a seeded generator that gives the same values on every
// platform (splitmix64), each a binary32 value: all runs start from these exact weights.
std::vector<std::vector<double>> initial_parameters(std::span<const ParameterSpec> specs,
                                                    std::uint64_t seed);

// A classifier: linear, gelu, layer_norm, linear, softmax cross-entropy.
struct MlpShape {
  std::size_t inputs = 32;
  std::size_t hidden = 256;
  std::size_t classes = 10;
};

class Mlp {
 public:
  explicit Mlp(MlpShape shape) : s_(shape) {}
  const MlpShape& shape() const { return s_; }
  std::size_t classes() const { return s_.classes; }

  // w1 (inputs x hidden), b1, gamma, beta (hidden), w2 (hidden x classes), b2.
  std::vector<ParameterSpec> parameters() const {
    return {{"w1", {s_.inputs, s_.hidden}, ParameterSpec::Init::uniform_fan_in, s_.inputs},
            {"b1", {s_.hidden}, ParameterSpec::Init::uniform_fan_in, s_.inputs},
            {"ln.gamma", {s_.hidden}, ParameterSpec::Init::ones, 1},
            {"ln.beta", {s_.hidden}, ParameterSpec::Init::zeros, 1},
            {"w2", {s_.hidden, s_.classes}, ParameterSpec::Init::uniform_fan_in, s_.hidden},
            {"b2", {s_.classes}, ParameterSpec::Init::uniform_fan_in, s_.hidden}};
  }

  template <class Ops>
  typename Ops::Tensor logits(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                              std::span<const double> inputs, std::size_t rows) const {
    return forward(ops, p, inputs, rows).logits;
  }

  // The mean cross-entropy of the batch; `grads` receives the gradient of d_loss * loss with
  // respect to each parameter, in parameters() order.
  template <class Ops>
  typename Ops::Scalar loss_and_gradients(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                                          std::span<const double> inputs,
                                          std::span<const std::int64_t> targets, std::size_t rows,
                                          const typename Ops::Scalar& d_loss,
                                          std::vector<typename Ops::Tensor>& grads) const {
    const Activations<Ops> a = forward(ops, p, inputs, rows);
    const auto loss = ops.cross_entropy(a.logits, targets, rows, s_.classes);
    const auto dlogits = ops.cross_entropy_backward(a.logits, targets, rows, s_.classes, d_loss);
    auto out = ops.linear_backward(a.n, p[4], p[5], dlogits, rows, s_.hidden, s_.classes, true);
    auto norm = ops.layer_norm_backward(a.g, out.dx, p[2], p[3], rows, s_.hidden);
    const auto dh = ops.gelu_backward(a.h, norm.dx);
    auto in = ops.linear_backward(a.x, p[0], p[1], dh, rows, s_.inputs, s_.hidden, false);
    grads.clear();
    grads.push_back(std::move(in.dw));
    grads.push_back(std::move(in.db));
    grads.push_back(std::move(norm.dgamma));
    grads.push_back(std::move(norm.dbeta));
    grads.push_back(std::move(out.dw));
    grads.push_back(std::move(out.db));
    return loss;
  }

 private:
  template <class Ops>
  struct Activations {
    typename Ops::Tensor x, h, g, n, logits;  // input, linear, gelu, layer_norm, linear
  };
  template <class Ops>
  Activations<Ops> forward(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                           std::span<const double> inputs, std::size_t rows) const {
    Activations<Ops> a;
    a.x = ops.constant(inputs);
    a.h = ops.linear(a.x, p[0], p[1], rows, s_.inputs, s_.hidden);
    a.g = ops.gelu(a.h, rows, s_.hidden);
    a.n = ops.layer_norm(a.g, p[2], p[3], rows, s_.hidden);
    a.logits = ops.linear(a.n, p[4], p[5], rows, s_.hidden, s_.classes);
    return a;
  }

  MlpShape s_;
};

}  // namespace ampbench::train
