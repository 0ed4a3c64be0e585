// The models ampbench trains, with hand-written backward passes through the ops of ops.hpp. Each is
// a template over the ops type, so that one text serves every policy and the multiprecision
// reference. A model declares its parameters (names, shapes, initialisation) and computes, for a
// batch, its logits, and its mean loss with the gradient of d_loss * loss for every parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "harness/ops/convolution.hpp"
#include "harness/ops/training_ops.hpp"

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

// The gradients `parts` point to, moved into `grads` in parameters() order.
template <class Tensor>
void collect(std::vector<Tensor>& grads, std::initializer_list<Tensor*> parts) {
  grads.clear();
  for (Tensor* t : parts) grads.push_back(std::move(*t));
}

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

  template <ops::TrainingOps Ops>
  typename Ops::Tensor logits(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                              std::span<const double> inputs, std::size_t rows) const {
    return forward(ops, p, inputs, rows).logits;
  }

  // The mean cross-entropy of the batch; `grads` receives the gradient of d_loss * loss with
  // respect to each parameter, in parameters() order.
  template <ops::TrainingOps Ops>
  typename Ops::Scalar loss_and_gradients(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                                          std::span<const double> inputs,
                                          std::span<const std::int64_t> targets, std::size_t rows,
                                          const typename Ops::Scalar& d_loss,
                                          std::vector<typename Ops::Tensor>& grads) const {
    Activations<Ops> a;
    typename Ops::Scalar loss;
    {
      const auto phase = ops.phase("forward");
      a = forward(ops, p, inputs, rows);
    }
    {
      const auto phase = ops.phase("loss");
      loss = ops.cross_entropy(a.logits, targets, rows, s_.classes);
    }
    const auto phase = ops.phase("backward");
    const auto dlogits = ops.cross_entropy_backward(a.logits, targets, rows, s_.classes, d_loss);
    auto out = ops.linear_backward(a.n, p[4], p[5], dlogits, rows, s_.hidden, s_.classes, true);
    auto norm = ops.layer_norm_backward(a.g, out.dx, p[2], p[3], rows, s_.hidden);
    const auto dh = ops.gelu_backward(a.h, norm.dx);
    auto in = ops.linear_backward(a.x, p[0], p[1], dh, rows, s_.inputs, s_.hidden, false);
    collect(grads, {&in.dw, &in.db, &norm.dgamma, &norm.dbeta, &out.dw, &out.db});
    return loss;
  }

 private:
  template <ops::TrainingOps Ops>
  struct Activations {
    typename Ops::Tensor x, h, g, n, logits;  // input, linear, gelu, layer_norm, linear
  };
  template <ops::TrainingOps Ops>
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

// A small CNN on NCHW images: conv 3x3 (pad 1), batch norm, relu, conv 3x3 (stride 2, pad 1), batch
// norm, relu, global average pooling, linear, softmax cross-entropy. The convolutions have no bias
// (batch norm's beta takes its place).
struct CnnShape {
  std::size_t channels = 1;
  std::size_t size = 12;  // images size x size
  std::size_t classes = 4;
  std::size_t filters1 = 6;
  std::size_t filters2 = 8;
};

class Cnn {
 public:
  explicit Cnn(CnnShape shape) : s_(shape) {}
  const CnnShape& shape() const { return s_; }
  std::size_t classes() const { return s_.classes; }

  std::vector<ParameterSpec> parameters() const {
    using Init = ParameterSpec::Init;
    return {{"conv1.w", {s_.filters1, s_.channels, 3, 3}, Init::uniform_fan_in, s_.channels * 9},
            {"bn1.gamma", {s_.filters1}, Init::ones, 1},
            {"bn1.beta", {s_.filters1}, Init::zeros, 1},
            {"conv2.w", {s_.filters2, s_.filters1, 3, 3}, Init::uniform_fan_in, s_.filters1 * 9},
            {"bn2.gamma", {s_.filters2}, Init::ones, 1},
            {"bn2.beta", {s_.filters2}, Init::zeros, 1},
            {"fc.w", {s_.filters2, s_.classes}, Init::uniform_fan_in, s_.filters2},
            {"fc.b", {s_.classes}, Init::uniform_fan_in, s_.filters2}};
  }

  template <ops::TrainingOps Ops>
  typename Ops::Tensor logits(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                              std::span<const double> inputs, std::size_t rows) const {
    return forward(ops, p, inputs, rows).logits;
  }

  template <ops::TrainingOps Ops>
  typename Ops::Scalar loss_and_gradients(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                                          std::span<const double> inputs,
                                          std::span<const std::int64_t> targets, std::size_t rows,
                                          const typename Ops::Scalar& d_loss,
                                          std::vector<typename Ops::Tensor>& grads) const {
    Activations<Ops> a;
    typename Ops::Scalar loss;
    {
      const auto phase = ops.phase("forward");
      a = forward(ops, p, inputs, rows);
    }
    {
      const auto phase = ops.phase("loss");
      loss = ops.cross_entropy(a.logits, targets, rows, s_.classes);
    }
    const auto phase = ops.phase("backward");
    const auto g1 = first(rows);
    const auto g2 = second(rows);
    const std::size_t spatial1 = g1.out_h() * g1.out_w(), spatial2 = g2.out_h() * g2.out_w();
    const auto dlogits = ops.cross_entropy_backward(a.logits, targets, rows, s_.classes, d_loss);
    auto fc =
        ops.linear_backward(a.pooled, p[6], p[7], dlogits, rows, s_.filters2, s_.classes, true);
    const auto dr2 = ops.mean_pool_backward(a.r2, fc.dx, rows * s_.filters2, spatial2);
    const auto dn2 = ops.relu_backward(a.n2, dr2);
    auto bn2 = ops.batch_norm_backward(a.c2, dn2, p[4], p[5], rows, s_.filters2, spatial2);
    auto conv2 = ops.conv2d_backward(a.r1, p[3], bn2.dx, g2, true);
    const auto dn1 = ops.relu_backward(a.n1, conv2.dx);
    auto bn1 = ops.batch_norm_backward(a.c1, dn1, p[1], p[2], rows, s_.filters1, spatial1);
    auto conv1 = ops.conv2d_backward(a.x, p[0], bn1.dx, g1, false);
    collect(grads, {&conv1.dw, &bn1.dgamma, &bn1.dbeta, &conv2.dw, &bn2.dgamma, &bn2.dbeta, &fc.dw,
                    &fc.db});
    return loss;
  }

 private:
  template <ops::TrainingOps Ops>
  struct Activations {
    // input, conv, batch norm, relu (twice), pooled, logits
    typename Ops::Tensor x, c1, n1, r1, c2, n2, r2, pooled, logits;
  };

  ops::convolution::Geometry first(std::size_t rows) const {
    ops::convolution::Geometry g;
    g.batch = rows;
    g.channels = s_.channels;
    g.height = g.width = s_.size;
    g.filters = s_.filters1;
    g.kernel_h = g.kernel_w = 3;
    g.pad_h = g.pad_w = 1;
    return g;
  }
  ops::convolution::Geometry second(std::size_t rows) const {
    ops::convolution::Geometry g = first(rows);
    g.channels = s_.filters1;
    g.filters = s_.filters2;
    g.stride_h = g.stride_w = 2;
    return g;
  }

  template <ops::TrainingOps Ops>
  Activations<Ops> forward(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                           std::span<const double> inputs, std::size_t rows) const {
    const auto g1 = first(rows);
    const auto g2 = second(rows);
    const std::size_t spatial1 = g1.out_h() * g1.out_w(), spatial2 = g2.out_h() * g2.out_w();
    Activations<Ops> a;
    a.x = ops.constant(inputs);
    a.c1 = ops.conv2d(a.x, p[0], g1);
    a.n1 = ops.batch_norm(a.c1, p[1], p[2], rows, s_.filters1, spatial1);
    a.r1 = ops.relu(a.n1);
    a.c2 = ops.conv2d(a.r1, p[3], g2);
    a.n2 = ops.batch_norm(a.c2, p[4], p[5], rows, s_.filters2, spatial2);
    a.r2 = ops.relu(a.n2);
    a.pooled = ops.mean_pool(a.r2, rows * s_.filters2, spatial2);
    a.logits = ops.linear(a.pooled, p[6], p[7], rows, s_.filters2, s_.classes);
    return a;
  }

  CnnShape s_;
};

// A pre-norm transformer block on token sequences, with per-token classification: an input
// projection, then h1 = h0 + W_o attention(LN1(h0)) (one head), h2 = h1 + W_2 gelu(W_1 LN2(h1)),
// then a linear head and the cross-entropy over every token.
struct TransformerShape {
  std::size_t length = 16;    // tokens per sequence
  std::size_t features = 16;  // input features per token (one-hot token + positional encoding)
  std::size_t width = 16;     // the model dimension, also the attention head's
  std::size_t hidden = 32;    // the MLP's hidden width
  std::size_t classes = 8;
};

class Transformer {
 public:
  explicit Transformer(TransformerShape shape) : s_(shape) {}
  const TransformerShape& shape() const { return s_; }
  std::size_t classes() const { return s_.classes; }

  std::vector<ParameterSpec> parameters() const {
    using Init = ParameterSpec::Init;
    const std::size_t f = s_.features, d = s_.width, h = s_.hidden, c = s_.classes;
    const auto linear = [](std::string name, std::size_t in, std::size_t out) {
      return std::vector<ParameterSpec>{{name + ".w", {in, out}, Init::uniform_fan_in, in},
                                        {name + ".b", {out}, Init::uniform_fan_in, in}};
    };
    const auto norm = [d](std::string name) {
      return std::vector<ParameterSpec>{{name + ".gamma", {d}, Init::ones, 1},
                                        {name + ".beta", {d}, Init::zeros, 1}};
    };
    std::vector<ParameterSpec> all;
    for (auto&& group : {linear("embed", f, d), norm("ln1"), linear("q", d, d), linear("k", d, d),
                         linear("v", d, d), linear("out", d, d), norm("ln2"), linear("mlp1", d, h),
                         linear("mlp2", h, d), linear("head", d, c)}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }

  template <ops::TrainingOps Ops>
  typename Ops::Tensor logits(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                              std::span<const double> inputs, std::size_t rows) const {
    return forward(ops, p, inputs, rows).logits;
  }

  // `rows` sequences; the loss is the mean over their rows * length tokens.
  template <ops::TrainingOps Ops>
  typename Ops::Scalar loss_and_gradients(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                                          std::span<const double> inputs,
                                          std::span<const std::int64_t> targets, std::size_t rows,
                                          const typename Ops::Scalar& d_loss,
                                          std::vector<typename Ops::Tensor>& grads) const {
    const std::size_t tokens = rows * s_.length;
    const std::size_t f = s_.features, d = s_.width, h = s_.hidden, c = s_.classes;
    Activations<Ops> a;
    typename Ops::Scalar loss;
    {
      const auto phase = ops.phase("forward");
      a = forward(ops, p, inputs, rows);
    }
    {
      const auto phase = ops.phase("loss");
      loss = ops.cross_entropy(a.logits, targets, tokens, c);
    }
    const auto phase = ops.phase("backward");
    const auto dlogits = ops.cross_entropy_backward(a.logits, targets, tokens, c, d_loss);
    auto head = ops.linear_backward(a.h2, p[18], p[19], dlogits, tokens, d, c, true);
    // h2 = h1 + f: the gradient reaches both.
    auto mlp2 =
        ops.linear_backward(a.g, p[16], p[17], ops.gradient_for(a.f, head.dx), tokens, h, d, true);
    const auto du = ops.gelu_backward(a.u, mlp2.dx);
    auto mlp1 = ops.linear_backward(a.m, p[14], p[15], du, tokens, d, h, true);
    auto ln2 = ops.layer_norm_backward(a.h1, mlp1.dx, p[12], p[13], tokens, d);
    const auto dh1 = ops.add(ops.gradient_for(a.h1, head.dx), ln2.dx);
    // h1 = h0 + out(attention(q, k, v)).
    auto out =
        ops.linear_backward(a.o, p[10], p[11], ops.gradient_for(a.proj, dh1), tokens, d, d, true);
    auto att = ops.attention_backward(a.q, a.k, a.v, out.dx, rows, s_.length, d);
    auto lq = ops.linear_backward(a.n, p[4], p[5], att.dq, tokens, d, d, true);
    auto lk = ops.linear_backward(a.n, p[6], p[7], att.dk, tokens, d, d, true);
    auto lv = ops.linear_backward(a.n, p[8], p[9], att.dv, tokens, d, d, true);
    const auto dn = ops.add(ops.add(lq.dx, lk.dx), lv.dx);
    auto ln1 = ops.layer_norm_backward(a.h0, dn, p[2], p[3], tokens, d);
    const auto dh0 = ops.add(ops.gradient_for(a.h0, dh1), ln1.dx);
    auto embed = ops.linear_backward(a.x, p[0], p[1], dh0, tokens, f, d, false);
    collect(grads,
            {&embed.dw, &embed.db, &ln1.dgamma, &ln1.dbeta, &lq.dw,   &lq.db,      &lk.dw,
             &lk.db,    &lv.dw,    &lv.db,      &out.dw,    &out.db,  &ln2.dgamma, &ln2.dbeta,
             &mlp1.dw,  &mlp1.db,  &mlp2.dw,    &mlp2.db,   &head.dw, &head.db});
    return loss;
  }

 private:
  template <ops::TrainingOps Ops>
  struct Activations {
    typename Ops::Tensor x, h0, n, q, k, v, o, proj, h1, m, u, g, f, h2, logits;
  };

  template <ops::TrainingOps Ops>
  Activations<Ops> forward(Ops& ops, const std::vector<typename Ops::Tensor>& p,
                           std::span<const double> inputs, std::size_t rows) const {
    const std::size_t tokens = rows * s_.length;
    const std::size_t f = s_.features, d = s_.width, h = s_.hidden, c = s_.classes;
    Activations<Ops> a;
    a.x = ops.constant(inputs);
    a.h0 = ops.linear(a.x, p[0], p[1], tokens, f, d);
    a.n = ops.layer_norm(a.h0, p[2], p[3], tokens, d);
    a.q = ops.linear(a.n, p[4], p[5], tokens, d, d);
    a.k = ops.linear(a.n, p[6], p[7], tokens, d, d);
    a.v = ops.linear(a.n, p[8], p[9], tokens, d, d);
    a.o = ops.attention(a.q, a.k, a.v, rows, s_.length, d);
    a.proj = ops.linear(a.o, p[10], p[11], tokens, d, d);
    a.h1 = ops.add(a.h0, a.proj);
    a.m = ops.layer_norm(a.h1, p[12], p[13], tokens, d);
    a.u = ops.linear(a.m, p[14], p[15], tokens, d, h);
    a.g = ops.gelu(a.u, tokens, h);
    a.f = ops.linear(a.g, p[16], p[17], tokens, h, d);
    a.h2 = ops.add(a.h1, a.f);
    a.logits = ops.linear(a.h2, p[18], p[19], tokens, d, c);
    return a;
  }

  TransformerShape s_;
};

}  // namespace ampbench::train
