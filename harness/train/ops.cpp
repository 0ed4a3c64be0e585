#include "harness/train/ops.hpp"

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <utility>

#include "harness/numeric/rounding.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::train {
namespace {

namespace cpu = backends::cpu;
using numeric::Format;
using reference::Real;

cpu::Arithmetic arithmetic(const policy::OpPrecision& q) {
  return {q.compute, q.accumulate, q.output, q.mode};
}

template <class T>
std::vector<T> transposed(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  std::vector<T> t(x.size());
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  }
  return t;
}

template <class T>
std::vector<T> column_sums(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  std::vector<T> sums(cols, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) sums[c] += x[r * cols + c];
  }
  return sums;
}

}  // namespace

// ---- emulated ----------------------------------------------------------------------------------

EmulatedOps::EmulatedOps(policy::Policy policy) : policy_(std::move(policy)) {}

EmulatedTensor EmulatedOps::constant(std::span<const double> values) const {
  Tensor t{{values.begin(), values.end()}, numeric::formats::fp32};
  for (const double v : t.values) {
    const double r = numeric::round_to(t.format, numeric::Rounding::nearest_even, v).value;
    if (r != v && !std::isnan(v)) throw std::invalid_argument("training data must be binary32");
  }
  return t;
}

EmulatedTensor EmulatedOps::parameter(std::span<const Master> values) const {
  Tensor t;
  t.values.assign(values.begin(), values.end());
  return t;
}

std::vector<EmulatedOps::Master> EmulatedOps::master_gradient(const Tensor& gradient) const {
  if (!policy::contains(numeric::formats::fp32, gradient.format)) {
    throw std::logic_error("a parameter's gradient is not in binary32");
  }
  return {gradient.values.begin(), gradient.values.end()};
}

policy::OpPrecision EmulatedOps::resolved(policy::Op op,
                                          std::span<const numeric::Format> inputs) const {
  return policy::resolve(policy_.precision(op), inputs);
}

EmulatedTensor EmulatedOps::cast(const Tensor& t, const Format& to, numeric::Rounding mode) {
  if (policy::contains(to, t.format)) return Tensor{t.values, to};
  Tensor r{std::vector<double>(t.values.size()), to};
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    const numeric::Rounded rounded = numeric::round_to(to, mode, t.values[i]);
    r.values[i] = rounded.value;
    cast_events_.add(rounded.event);
  }
  return r;
}

EmulatedTensor EmulatedOps::linear(const Tensor& x, const Tensor& w, const Tensor& b,
                                   std::size_t rows, std::size_t in, std::size_t out) {
  const auto q = resolved(policy::Op::linear, std::initializer_list<Format>{x.format});
  const Tensor xa = cast(x, q.input, q.input_mode);
  const Tensor wa = cast(w, q.input, q.input_mode);
  const Tensor ba = cast(b, q.input, q.input_mode);
  return {cpu::gemm(arithmetic(q), cpu::Summation::sequential, rows, out, in, xa.values, wa.values,
                    {}, ba.values, events_),
          q.output};
}

EmulatedOps::LinearGradients EmulatedOps::linear_backward(const Tensor& x, const Tensor& w,
                                                          const Tensor& b, const Tensor& dy,
                                                          std::size_t rows, std::size_t in,
                                                          std::size_t out, bool need_dx) {
  const auto q = resolved(policy::Op::linear, std::initializer_list<Format>{x.format});
  const auto a = arithmetic(q);
  const Tensor xa = cast(x, q.input, q.input_mode);
  const Tensor dya = cast(dy, q.input, q.input_mode);
  LinearGradients g;
  if (need_dx) {
    const Tensor wa = cast(w, q.input, q.input_mode);
    g.dx = cast({cpu::gemm(a, cpu::Summation::sequential, rows, in, out, dya.values,
                           transposed(wa.values, in, out), {}, {}, events_),
                 q.output},
                x.format, q.mode);
  }
  g.dw = cast({cpu::gemm(a, cpu::Summation::sequential, in, out, rows,
                         transposed(xa.values, rows, in), dya.values, {}, {}, events_),
               q.output},
              w.format, q.mode);
  // The bias gradient, dy summed over the rows, as the same product with a row of ones.
  const std::vector<double> ones(rows, 1.0);
  g.db = cast(
      {cpu::gemm(a, cpu::Summation::sequential, 1, out, rows, ones, dya.values, {}, {}, events_),
       q.output},
      b.format, q.mode);
  return g;
}

EmulatedTensor EmulatedOps::gelu(const Tensor& x, std::size_t rows, std::size_t cols) {
  const auto q = resolved(policy::Op::gelu, std::initializer_list<Format>{x.format});
  const Tensor xa = cast(x, q.input, q.input_mode);
  return {cpu::bias_activation(arithmetic(q), cpu::Activation::gelu, xa.values, rows, cols, {},
                               events_),
          q.output};
}

EmulatedTensor EmulatedOps::gelu_backward(const Tensor& x, const Tensor& dy) {
  const auto q = resolved(policy::Op::gelu, std::initializer_list<Format>{x.format, dy.format});
  const Tensor xa = cast(x, q.input, q.input_mode);
  const Tensor dya = cast(dy, q.input, q.input_mode);
  return cast({cpu::activation_backward(arithmetic(q), cpu::Activation::gelu, xa.values, dya.values,
                                        events_),
               q.output},
              x.format, q.mode);
}

EmulatedTensor EmulatedOps::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       std::size_t rows, std::size_t cols) {
  const auto q = resolved(policy::Op::layer_norm, std::initializer_list<Format>{x.format});
  const Tensor xa = cast(x, q.input, q.input_mode);
  const Tensor ga = cast(gamma, q.input, q.input_mode);
  const Tensor ba = cast(beta, q.input, q.input_mode);
  return {cpu::layer_norm(arithmetic(q), xa.values, rows, cols, kLayerNormEps, ga.values, ba.values,
                          events_),
          q.output};
}

EmulatedOps::LayerNormGradients EmulatedOps::layer_norm_backward(const Tensor& x, const Tensor& dy,
                                                                 const Tensor& gamma,
                                                                 const Tensor& beta,
                                                                 std::size_t rows,
                                                                 std::size_t cols) {
  const auto q = resolved(policy::Op::layer_norm, std::initializer_list<Format>{x.format});
  const auto a = arithmetic(q);
  const Tensor xa = cast(x, q.input, q.input_mode);
  const Tensor dya = cast(dy, q.input, q.input_mode);
  const Tensor ga = cast(gamma, q.input, q.input_mode);
  LayerNormGradients g;
  g.dx = cast({cpu::layer_norm_backward(a, xa.values, dya.values, rows, cols, kLayerNormEps,
                                        ga.values, events_),
               q.output},
              x.format, q.mode);
  auto p = cpu::layer_norm_parameter_backward(a, xa.values, dya.values, rows, cols, kLayerNormEps,
                                              events_);
  g.dgamma = cast({std::move(p.dgamma), q.output}, gamma.format, q.mode);
  g.dbeta = cast({std::move(p.dbeta), q.output}, beta.format, q.mode);
  return g;
}

double EmulatedOps::cross_entropy(const Tensor& logits, std::span<const std::int64_t> targets,
                                  std::size_t rows, std::size_t classes) {
  const auto q = resolved(policy::Op::cross_entropy, std::initializer_list<Format>{logits.format});
  const Tensor la = cast(logits, q.input, q.input_mode);
  return cpu::cross_entropy(arithmetic(q), la.values, targets, rows, classes, 0.0, events_);
}

EmulatedTensor EmulatedOps::cross_entropy_backward(const Tensor& logits,
                                                   std::span<const std::int64_t> targets,
                                                   std::size_t rows, std::size_t classes,
                                                   double d_loss) {
  const auto q = resolved(policy::Op::cross_entropy, std::initializer_list<Format>{logits.format});
  const Tensor la = cast(logits, q.input, q.input_mode);
  const double upstream = numeric::round_to(q.compute, q.mode, d_loss).value;
  return cast({cpu::cross_entropy_backward(arithmetic(q), la.values, targets, rows, classes,
                                           events_, upstream),
               q.output},
              logits.format, q.mode);
}

numeric::Format EmulatedOps::gradient_format() const {
  return policy::resolve(policy_.precision(policy::Op::linear),
                         std::initializer_list<Format>{numeric::formats::fp32})
      .output;
}

// ---- reference ---------------------------------------------------------------------------------

ReferenceOps::Tensor ReferenceOps::constant(std::span<const double> values) const {
  Tensor t;
  t.reserve(values.size());
  for (const double v : values) t.push_back(reference::to_real(v));
  return t;
}

std::vector<double> ReferenceOps::to_doubles(const Tensor& t) {
  std::vector<double> d;
  d.reserve(t.size());
  for (const auto& v : t) d.push_back(reference::to_double(v));
  return d;
}

ReferenceOps::Tensor ReferenceOps::linear(const Tensor& x, const Tensor& w, const Tensor& b,
                                          std::size_t rows, std::size_t in, std::size_t out) {
  return reference::ops::gemm<Real>(rows, out, in, x, w, {}, b);
}

ReferenceOps::LinearGradients ReferenceOps::linear_backward(const Tensor& x, const Tensor& w,
                                                            const Tensor&, const Tensor& dy,
                                                            std::size_t rows, std::size_t in,
                                                            std::size_t out, bool need_dx) {
  LinearGradients g;
  if (need_dx) g.dx = reference::ops::gemm<Real>(rows, in, out, dy, transposed(w, in, out));
  g.dw = reference::ops::gemm<Real>(in, out, rows, transposed(x, rows, in), dy);
  g.db = column_sums(dy, rows, out);
  return g;
}

ReferenceOps::Tensor ReferenceOps::gelu(const Tensor& x, std::size_t, std::size_t) {
  return reference::ops::elementwise<Real>(reference::ops::Activation::gelu, x);
}

ReferenceOps::Tensor ReferenceOps::gelu_backward(const Tensor& x, const Tensor& dy) {
  return reference::ops::elementwise_backward<Real>(reference::ops::Activation::gelu, x, dy);
}

ReferenceOps::Tensor ReferenceOps::layer_norm(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, std::size_t rows,
                                              std::size_t cols) {
  return reference::ops::layer_norm<Real>(x, rows, cols, reference::to_real(kLayerNormEps), gamma,
                                          beta);
}

ReferenceOps::LayerNormGradients ReferenceOps::layer_norm_backward(const Tensor& x,
                                                                   const Tensor& dy,
                                                                   const Tensor& gamma,
                                                                   const Tensor&, std::size_t rows,
                                                                   std::size_t cols) {
  auto g = reference::ops::layer_norm_backward<Real>(x, dy, rows, cols,
                                                     reference::to_real(kLayerNormEps), gamma);
  return {std::move(g.dx), std::move(g.dgamma), std::move(g.dbeta)};
}

ReferenceOps::Scalar ReferenceOps::cross_entropy(const Tensor& logits,
                                                 std::span<const std::int64_t> targets,
                                                 std::size_t rows, std::size_t classes) {
  return reference::ops::cross_entropy<Real>(logits, rows, classes, targets);
}

ReferenceOps::Tensor ReferenceOps::cross_entropy_backward(const Tensor& logits,
                                                          std::span<const std::int64_t> targets,
                                                          std::size_t rows, std::size_t classes,
                                                          const Scalar& d_loss) {
  return reference::ops::cross_entropy_backward<Real>(logits, rows, classes, targets, Real(0),
                                                      d_loss);
}

}  // namespace ampbench::train
