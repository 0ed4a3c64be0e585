// The trainer's ops (the TrainingOps concept, training_ops.hpp) with autocast's type flow written
// once, over a backend's kernels. A model calls AutocastOps<Kernels>::linear(x, w, b, ...); it
// finds the catalog op's flow under the backend's policy (ops::Autocast: the precision resolved
// for the data inputs' formats, each operand's conversion), converts each operand as the flow
// says (in the catalog's operand order), hands the converted operands and the precision to the
// backend's kernel, and takes the kernel's result to the op's output format, or a gradient on to
// the format of the input it is the gradient of (as autograd stores it, rounded in the op's
// mode). The CPU emulation (train::EmulatedOps) and the CUDA backend (backends::cuda::CudaOps)
// are this class over their kernels, so the flow the CPU tests check is the flow the GPU runs,
// and a recording backend in the tests (ops/test/autocast_ops_test.cpp) shows which conversions
// each op receives.
//
// What `Kernels` provides (members a derived class may call; the kernels themselves are best kept
// protected, so that a model sees only the interface below):
//   Tensor, Scalar, Master              a tensor (with a member `format`), losses, master weights
//   policy()                            the precision policy
//   cast(t, format, mode)               t's values as values of `format`, rounded in `mode`; t
//                                       itself (retagged) when `format` holds its values
//   elements(t)                         t's element count
//   op_range(name)                      a profiling range around one op while it lives
//   ran_as(op, precision)               optional: told each catalog op a method runs as, with the
//                                       policy op it runs under, in the order the method runs
//                                       them (train::model_ops records a model's ops so)
//   constant, parameter, master_gradient, to_doubles, to_double, phase
//                                       as TrainingOps says
//   run(q, op, shape, operands, indices)
//                                       the catalog op `op` of `shape` under the resolved precision
//                                       q, on operands in the catalog's order already converted
//                                       (an absent optional operand, and an index operand, an
//                                       empty tensor; `indices` are the index operand's), its
//                                       result in q's output format or in a type that holds it: the
//                                       backend's one entry to the ops it runs as the audit runs
//                                       them (the CPU emulation: ops::run_cpu; CUDA: the audit's
//                                       op-kernel launch). A trainer method whose step is one
//                                       catalog op on the catalog's operands needs no kernel of
//                                       its own in any backend.
//   the kernels of the steps that are not (the loss's gradient times an upstream gradient, the
//   fused backward ops that give several gradients, batch norm on channels x spatial, attention
//   on a batch), each taking q first and operands already converted, giving results as run does:
//   layer_norm_backward (dx, dgamma, dbeta), cross_entropy_backward, batch_norm,
//   batch_norm_backward, attention, attention_backward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/ops/autocast.hpp"
#include "harness/ops/catalog.hpp"
#include "harness/ops/convolution.hpp"
#include "harness/ops/training_ops.hpp"
#include "harness/policy/policy.hpp"

namespace ampbench::ops {

template <class Kernels>
class AutocastOps : public Kernels {
 public:
  using Tensor = typename Kernels::Tensor;
  using Scalar = typename Kernels::Scalar;
  using Master = typename Kernels::Master;
  using LinearGradients = ops::LinearGradients<Tensor>;
  using LayerNormGradients = ops::LayerNormGradients<Tensor>;
  using BatchNormGradients = ops::LayerNormGradients<Tensor>;
  using ConvolutionGradients = ops::ConvolutionGradients<Tensor>;
  using AttentionGradients = ops::AttentionGradients<Tensor>;

  using Kernels::Kernels;

  // y = x w + b: x rows x in, w in x out, b out (linear / addmm, the catalog's linear of shape
  // rows x out x in). The bias is converted to the output's type, as addmm's cuBLASLt epilogue
  // adds it (under tf32 it is not rounded to tf32).
  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, std::size_t rows, std::size_t in,
                std::size_t out) {
    const auto range = Kernels::op_range("linear");
    const Autocast f = flow("linear", policy::Op::linear, {x.format});
    const Tensor xa = operand(f, 0, x), wa = operand(f, 1, w), ba = operand(f, 2, b);
    return result(f, run(f, {rows, out, in}, xa, wa, ba));
  }
  // dx = dy w^T (gemm_backward_a, only when need_dx), dw = x^T dy (gemm_backward_b), db = dy's
  // column sums from dy in the output's type (linear_backward_bias: autograd's sum(0) of dy, which
  // under tf32 is not rounded to tf32).
  LinearGradients linear_backward(const Tensor& x, const Tensor& w, const Tensor& b,
                                  const Tensor& dy, std::size_t rows, std::size_t in,
                                  std::size_t out, bool need_dx) {
    const auto range = Kernels::op_range("linear_backward");
    const std::initializer_list<numeric::Format> inputs{x.format};
    const std::optional<Autocast> dx_flow =
        need_dx ? std::optional(flow("gemm_backward_a", policy::Op::linear, inputs)) : std::nullopt;
    const Autocast dw_flow = flow("gemm_backward_b", policy::Op::linear, inputs);
    const Autocast db_flow = flow("linear_backward_bias", policy::Op::linear, inputs);
    const Tensor xa = operand(dw_flow, 0, x);
    const Tensor dya = operand(dw_flow, 1, dy);
    LinearGradients g;
    if (dx_flow) {
      g.dx = gradient(*dx_flow, x, run(*dx_flow, {rows, out, in}, dya, operand(*dx_flow, 1, w)));
    }
    g.dw = gradient(dw_flow, w, run(dw_flow, {rows, out, in}, xa, dya));
    g.db = gradient(db_flow, b, run(db_flow, {rows, out}, operand(db_flow, 0, dy)));
    return g;
  }

  Tensor gelu(const Tensor& x, std::size_t rows, std::size_t cols) {
    const auto range = Kernels::op_range("gelu");
    const Autocast f = flow("gelu", policy::Op::gelu, {x.format});
    return result(f, run(f, {rows, cols}, operand(f, 0, x), Tensor{}));  // no bias
  }
  Tensor gelu_backward(const Tensor& x, const Tensor& dy) {
    const auto range = Kernels::op_range("gelu_backward");
    const Autocast f = flow("gelu_backward", policy::Op::gelu, {x.format, dy.format});
    const Tensor xa = operand(f, 0, x), dya = operand(f, 1, dy);
    return gradient(f, x, run(f, {1, size(x)}, xa, dya));
  }
  Tensor relu(const Tensor& x) {
    const auto range = Kernels::op_range("relu");
    const Autocast f = flow("relu", policy::Op::relu, {x.format});
    return result(f, run(f, {1, size(x)}, operand(f, 0, x), Tensor{}));  // no bias
  }
  Tensor relu_backward(const Tensor& x, const Tensor& dy) {
    const auto range = Kernels::op_range("relu_backward");
    const Autocast f = flow("relu_backward", policy::Op::relu, {x.format, dy.format});
    const Tensor xa = operand(f, 0, x), dya = operand(f, 1, dy);
    return gradient(f, x, run(f, {1, size(x)}, xa, dya));
  }

  Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t rows,
                    std::size_t cols) {
    const auto range = Kernels::op_range("layer_norm");
    const Autocast f = flow("layer_norm", policy::Op::layer_norm, {x.format});
    const Tensor xa = operand(f, 0, x), ga = operand(f, 1, gamma), ba = operand(f, 2, beta);
    return result(f, run(f, {rows, cols}, xa, ga, ba));
  }
  LayerNormGradients layer_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t rows, std::size_t cols) {
    const auto range = Kernels::op_range("layer_norm_backward");
    // One kernel for the three gradients, each taken on as its own catalog op's flow says.
    const Autocast f = flow("layer_norm_backward", policy::Op::layer_norm, {x.format});
    const Autocast fg = flow("layer_norm_backward_gamma", policy::Op::layer_norm, {x.format});
    const Autocast fb = flow("layer_norm_backward_beta", policy::Op::layer_norm, {x.format});
    const Tensor xa = operand(f, 0, x), dya = operand(f, 1, dy), ga = operand(f, 2, gamma);
    auto g = Kernels::layer_norm_backward(f.precision(), xa, dya, ga, rows, cols);
    return {gradient(f, x, g.dx), gradient(fg, gamma, g.dgamma), gradient(fb, beta, g.dbeta)};
  }

  // Mean cross-entropy of rows x classes logits, and its gradient times the upstream gradient
  // d_loss (the loss scale over the accumulated micro-batches), in the logits' format.
  Scalar cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                       std::size_t rows, std::size_t classes) {
    const auto range = Kernels::op_range("cross_entropy");
    const Autocast f = flow("cross_entropy", policy::Op::cross_entropy, {logits.format});
    const Tensor loss =
        result(f, run_indexed(f, Shape{{rows, classes}}, targets, operand(f, 0, logits), Tensor{}));
    return Kernels::to_doubles(loss).front();
  }
  Tensor cross_entropy_backward(const Tensor& logits, std::span<const std::int64_t> targets,
                                std::size_t rows, std::size_t classes, const Scalar& d_loss) {
    const auto range = Kernels::op_range("cross_entropy_backward");
    const Autocast f = flow("cross_entropy_backward", policy::Op::cross_entropy, {logits.format});
    return gradient(f, logits,
                    Kernels::cross_entropy_backward(f.precision(), operand(f, 0, logits), targets,
                                                    rows, classes, d_loss));
  }

  // conv2d: x N x C x H x W, w O x C/groups x R x S; the backward's dx from dy and w
  // (conv2d_backward_data), dw from x and dy (conv2d_backward_filter).
  Tensor conv2d(const Tensor& x, const Tensor& w, const convolution::Geometry& g) {
    const auto range = Kernels::op_range("conv2d");
    const Autocast f = flow("conv2d", policy::Op::conv, {x.format});
    const Tensor xa = operand(f, 0, x), wa = operand(f, 1, w);
    return result(f, run(f, convolution::to_shape(g), xa, wa));
  }
  ConvolutionGradients conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                       const convolution::Geometry& g, bool need_dx) {
    const auto range = Kernels::op_range("conv2d_backward");
    const std::initializer_list<numeric::Format> inputs{x.format};
    const std::optional<Autocast> dx_flow =
        need_dx ? std::optional(flow("conv2d_backward_data", policy::Op::conv, inputs))
                : std::nullopt;
    const Autocast dw_flow = flow("conv2d_backward_filter", policy::Op::conv, inputs);
    const Shape shape = convolution::to_shape(g);
    const Tensor dya = operand(dw_flow, 1, dy);
    ConvolutionGradients grads;
    if (dx_flow) {
      grads.dx = gradient(*dx_flow, x, run(*dx_flow, shape, dya, operand(*dx_flow, 1, w)));
    }
    grads.dw = gradient(dw_flow, w, run(dw_flow, shape, operand(dw_flow, 0, x), dya));
    return grads;
  }

  // Training-mode batch norm of batch x channels x spatial values, per channel. Under autocast it
  // keeps its fp32 weight (a promote entry); a policy that fixes its formats (model.half()) holds
  // the weight in its input format.
  Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, std::size_t batch,
                    std::size_t channels, std::size_t spatial) {
    const auto range = Kernels::op_range("batch_norm");
    const Autocast f = flow("batch_norm", policy::Op::batch_norm, {x.format});
    const Tensor xa = operand(f, 0, x), ga = operand(f, 1, gamma), ba = operand(f, 2, beta);
    return result(f, Kernels::batch_norm(f.precision(), xa, ga, ba, batch, channels, spatial));
  }
  BatchNormGradients batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& beta, std::size_t batch,
                                         std::size_t channels, std::size_t spatial) {
    const auto range = Kernels::op_range("batch_norm_backward");
    const Autocast f = flow("batch_norm_backward", policy::Op::batch_norm, {x.format});
    const Autocast fg = flow("batch_norm_backward_gamma", policy::Op::batch_norm, {x.format});
    const Autocast fb = flow("batch_norm_backward_beta", policy::Op::batch_norm, {x.format});
    const Tensor xa = operand(f, 0, x), dya = operand(f, 1, dy), ga = operand(f, 2, gamma);
    auto g = Kernels::batch_norm_backward(f.precision(), xa, dya, ga, batch, channels, spatial);
    return {gradient(f, x, g.dx), gradient(fg, gamma, g.dgamma), gradient(fb, beta, g.dbeta)};
  }

  // Global average pooling: the mean of each row of rows x cols, and its backward.
  Tensor mean_pool(const Tensor& x, std::size_t rows, std::size_t cols) {
    const auto range = Kernels::op_range("mean_pool");
    const Autocast f = flow("mean_pool", policy::Op::mean, {x.format});
    return result(f, run(f, {rows, cols}, operand(f, 0, x)));
  }
  Tensor mean_pool_backward(const Tensor& x, const Tensor& dy, std::size_t rows, std::size_t cols) {
    const auto range = Kernels::op_range("mean_pool_backward");
    const Autocast f = flow("mean_pool_backward", policy::Op::mean, {x.format});
    // x gives the op its shape only: it is passed as it is, not converted.
    return gradient(f, x, run(f, {rows, cols}, x, operand(f, 1, dy)));
  }

  // The gradient with respect to `input` as autograd stores it: in the input's format.
  Tensor gradient_for(const Tensor& input, const Tensor& gradient) {
    return Kernels::cast(gradient, input.format, numeric::Rounding::nearest_even);
  }
  // a + b element by element (a residual connection, and the sum of the gradients a tensor
  // receives from its several uses, as autograd accumulates them).
  Tensor add(const Tensor& a, const Tensor& b) {
    const auto range = Kernels::op_range("add");
    const Autocast f = flow("add", policy::Op::add, {a.format, b.format});
    if (size(a) != size(b)) {
      throw std::invalid_argument("add: a has " + std::to_string(size(a)) + " elements and b " +
                                  std::to_string(size(b)));
    }
    const Tensor aa = operand(f, 0, a), ba = operand(f, 1, b);
    return result(f, run(f, {1, size(a)}, aa, ba));
  }
  // One head of attention per sample: q, k, v batch x length x d.
  Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t batch,
                   std::size_t length, std::size_t d) {
    const auto range = Kernels::op_range("attention");
    const Autocast f = flow("attention", policy::Op::attention, {q.format, k.format, v.format});
    const Tensor qa = operand(f, 0, q), ka = operand(f, 1, k), va = operand(f, 2, v);
    return result(f, Kernels::attention(f.precision(), qa, ka, va, batch, length, d));
  }
  AttentionGradients attention_backward(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& d_out, std::size_t batch, std::size_t length,
                                        std::size_t d) {
    const auto range = Kernels::op_range("attention_backward");
    const std::initializer_list<numeric::Format> inputs{q.format, k.format, v.format};
    const Autocast f = flow("attention_backward_q", policy::Op::attention, inputs);
    const Autocast fk = flow("attention_backward_k", policy::Op::attention, inputs);
    const Autocast fv = flow("attention_backward_v", policy::Op::attention, inputs);
    const Tensor qa = operand(f, 0, q), ka = operand(f, 1, k), va = operand(f, 2, v);
    const Tensor da = operand(f, 3, d_out);
    auto g = Kernels::attention_backward(f.precision(), qa, ka, va, da, batch, length, d);
    return {gradient(f, q, g.dq), gradient(fk, k, g.dk), gradient(fv, v, g.dv)};
  }

  // The format the weight gradients of matmuls come out in (fp16 under amp-fp16): where small
  // gradients underflow.
  numeric::Format gradient_format() const {
    return policy::resolve(this->policy().precision(policy::Op::linear),
                           std::initializer_list<numeric::Format>{numeric::formats::fp32})
        .output;
  }

 protected:
  // The catalog op of the flow f, of the shape `sizes`, on the backend's one entry (Kernels::run),
  // its operands already converted and in the catalog's order.
  template <class... Operands>
  Tensor run(const Autocast& f, std::initializer_list<std::size_t> sizes,
             const Operands&... operands) {
    return run_indexed(f, Shape{sizes}, {}, operands...);
  }
  template <class... Operands>
  Tensor run(const Autocast& f, const Shape& shape, const Operands&... operands) {
    return run_indexed(f, shape, {}, operands...);
  }
  // The same for an op with an index operand (an empty tensor in its place): `indices`.
  template <class... Operands>
  Tensor run_indexed(const Autocast& f, const Shape& shape, std::span<const std::int64_t> indices,
                     const Operands&... operands) {
    std::vector<Tensor> in;
    in.reserve(sizeof...(operands));
    (in.push_back(operands), ...);
    return Kernels::run(f.precision(), f.op(), shape, std::move(in), indices);
  }
  static std::size_t size(const Tensor& t) { return Kernels::elements(t); }

  // The type flow of the catalog op `catalog_op` under the policy's precision for `op` resolved
  // for the formats of the op's data inputs; the kernels told, when they ask (ran_as).
  Autocast flow(std::string_view catalog_op, policy::Op op,
                std::initializer_list<numeric::Format> inputs) {
    const OpInfo* found = find_op(catalog_op);
    if (found == nullptr) {
      throw std::logic_error(std::string("AutocastOps: ") + std::string(catalog_op) +
                             " is not a catalog op");
    }
    const OpInfo& info = *found;
    if constexpr (requires(Kernels & k) { k.ran_as(info, op); }) Kernels::ran_as(info, op);
    return Autocast(
        info, policy::resolve(this->policy().precision(op),
                              std::span<const numeric::Format>(inputs.begin(), inputs.size())));
  }
  // Operand k of the flow's op, converted as the flow says (kept: as it is).
  Tensor operand(const Autocast& f, std::size_t k, const Tensor& t) {
    const Conversion& c = f.operand(k);
    return c.kept ? t : Kernels::cast(t, c.format, c.mode);
  }
  // A kernel's result in the op's output format.
  Tensor result(const Autocast& f, const Tensor& t) {
    return Kernels::cast(t, f.result(), f.precision().mode);
  }
  // A kernel's gradient with respect to `input`: in the op's output format, then in the input's.
  Tensor gradient(const Autocast& f, const Tensor& input, const Tensor& t) {
    const Conversion back = f.gradient(input.format);
    return Kernels::cast(result(f, t), back.format, back.mode);
  }
};

}  // namespace ampbench::ops
