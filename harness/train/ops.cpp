#include "harness/train/ops.hpp"

#include <mpfr.h>

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <thread>
#include <utility>

#include "harness/numeric/rounding.hpp"
#include "harness/ops/catalog.hpp"
#include "reference/mp/attention_backward.hpp"
#include "reference/mp/ops.hpp"

namespace ampbench::train {
namespace {

namespace cpu = backends::cpu;
using numeric::Format;
using reference::Real;

cpu::Arithmetic arithmetic(const policy::OpPrecision& q) {
  return {q.compute, q.accumulate, q.output, q.mode};
}

// A matrix read through strides: element (i, p) is data[i * row + p * col], so that a transposed
// operand needs no copy (a copy of a Real allocates).
struct Strided {
  const Real* data;
  std::size_t row, col;
  const Real& operator()(std::size_t i, std::size_t p) const { return data[i * row + p * col]; }
};

// The reference's matrix product C = A B (+ bias per column), m x n from k terms, each product and
// sum rounded to the working precision as Real arithmetic rounds them, through one scratch value
// rather than a temporary per term (mpfr_fma is slower than the two). Large products split their
// rows with a second thread: the reference is the slowest run of a training step, and the policies
// beside it leave the second core idle once they are done.
std::vector<Real> product(std::size_t m, std::size_t n, std::size_t k, Strided a, Strided b,
                          const std::vector<Real>* bias = nullptr) {
  std::vector<Real> c(m * n);  // at this thread's working precision
  const int bits = reference::working_precision_bits();
  const auto rows = [&](std::size_t first, std::size_t end) {
    const reference::WorkingPrecision precision(bits);
    Real scratch;
    mpfr_ptr term = scratch.backend().data();
    for (std::size_t i = first; i < end; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        mpfr_ptr total = c[i * n + j].backend().data();
        mpfr_set_zero(total, 1);
        for (std::size_t p = 0; p < k; ++p) {
          mpfr_mul(term, a(i, p).backend().data(), b(p, j).backend().data(), MPFR_RNDN);
          mpfr_add(total, total, term, MPFR_RNDN);
        }
        if (bias != nullptr) mpfr_add(total, total, (*bias)[j].backend().data(), MPFR_RNDN);
      }
    }
  };
  if (m >= 2 && m * n * k >= (std::size_t{1} << 16)) {
    std::jthread other(rows, m / 2, m);
    rows(0, m / 2);
  } else {
    rows(0, m);
  }
  return c;
}

template <class T>
std::vector<T> column_sums(const std::vector<T>& x, std::size_t rows, std::size_t cols) {
  std::vector<T> sums(cols, T(0));
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) sums[c] += x[r * cols + c];
  }
  return sums;
}

// NCHW (batch x channels x spatial) to (batch * spatial) x channels, the layout of the CPU
// backend's batch norm, or back.
enum class Layout { channels_last, channels_first };
template <class T>
std::vector<T> relayout(const std::vector<T>& x, std::size_t batch, std::size_t channels,
                        std::size_t spatial, Layout to) {
  std::vector<T> t(x.size());
  for (std::size_t n = 0; n < batch; ++n) {
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t p = 0; p < spatial; ++p) {
        const std::size_t first = (n * channels + c) * spatial + p;
        const std::size_t last = (n * spatial + p) * channels + c;
        if (to == Layout::channels_last) {
          t[last] = x[first];
        } else {
          t[first] = x[last];
        }
      }
    }
  }
  return t;
}

// A convolution pass as its lowered gemms, each run by `product(part)`, placed in the output.
template <class T, class Product>
std::vector<T> run_lowered(ops::convolution::Pass pass, const ops::convolution::Geometry& g,
                           std::span<const T> first, std::span<const T> second, Product product) {
  std::vector<T> out(ops::element_count(ops::convolution::output_shape(pass, g)));
  for (const auto& part : ops::convolution::lower<T>(pass, g, first, second)) {
    const std::vector<T> c = product(part);
    for (std::size_t l = 0; l < c.size(); ++l) out[part.place[l]] = c[l];
  }
  return out;
}

}  // namespace

// ---- emulated ----------------------------------------------------------------------------------

EmulatedKernels::EmulatedKernels(policy::Policy policy) : policy_(std::move(policy)) {}

EmulatedTensor EmulatedKernels::constant(std::span<const double> values) const {
  Tensor t{{values.begin(), values.end()}, numeric::formats::fp32};
  for (const double v : t.values) {
    const double r = numeric::round_to(t.format, numeric::Rounding::nearest_even, v).value;
    if (r != v && !std::isnan(v)) throw std::invalid_argument("training data must be binary32");
  }
  return t;
}

EmulatedTensor EmulatedKernels::parameter(std::span<const Master> values) const {
  Tensor t;
  t.values.assign(values.begin(), values.end());
  return t;
}

std::vector<EmulatedKernels::Master> EmulatedKernels::master_gradient(
    const Tensor& gradient) const {
  if (!policy::contains(numeric::formats::fp32, gradient.format)) {
    throw std::logic_error("a parameter's gradient is not in binary32");
  }
  return {gradient.values.begin(), gradient.values.end()};
}

EmulatedTensor EmulatedKernels::cast(const Tensor& t, const Format& to,
                                     numeric::Rounding mode) const {
  if (policy::contains(to, t.format)) return Tensor{t.values, to};
  Tensor r{std::vector<double>(t.values.size()), to};
  for (std::size_t i = 0; i < t.values.size(); ++i) {
    r.values[i] = numeric::round_to(to, mode, t.values[i]).value;
  }
  return r;
}

EmulatedTensor EmulatedKernels::run(const Precision& q, const ops::OpInfo& op,
                                    const ops::Shape& shape, std::vector<Tensor> operands,
                                    std::span<const std::int64_t> indices) {
  const std::vector<ops::Operand> roles = ops::operand_roles(op);
  ops::Inputs in;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    in.values.push_back(std::move(operands[i].values));
    in.indices.emplace_back();
    if (roles.at(i).is_index) in.indices.back().assign(indices.begin(), indices.end());
  }
  return {ops::run_cpu(op, shape, arithmetic(q), cpu::Summation::sequential, in).output, q.output};
}

ops::LayerNormGradients<EmulatedTensor> EmulatedKernels::layer_norm_backward(
    const Precision& q, const Tensor& x, const Tensor& dy, const Tensor& gamma, std::size_t rows,
    std::size_t cols) {
  const auto a = arithmetic(q);
  Tensor dx{cpu::layer_norm_backward(a, x.values, dy.values, rows, cols, kLayerNormEps,
                                     gamma.values, events_),
            q.output};
  auto p = cpu::layer_norm_parameter_backward(a, x.values, dy.values, rows, cols, kLayerNormEps,
                                              events_);
  return {std::move(dx), {std::move(p.dgamma), q.output}, {std::move(p.dbeta), q.output}};
}

EmulatedTensor EmulatedKernels::cross_entropy_backward(const Precision& q, const Tensor& logits,
                                                       std::span<const std::int64_t> targets,
                                                       std::size_t rows, std::size_t classes,
                                                       double d_loss) {
  const double upstream = numeric::round_to(q.compute, q.mode, d_loss).value;
  return {cpu::cross_entropy_backward(arithmetic(q), logits.values, targets, rows, classes, events_,
                                      upstream),
          q.output};
}

EmulatedTensor EmulatedKernels::batch_norm(const Precision& q, const Tensor& x, const Tensor& gamma,
                                           const Tensor& beta, std::size_t batch,
                                           std::size_t channels, std::size_t spatial) {
  const auto y = cpu::batch_norm(
      arithmetic(q), relayout(x.values, batch, channels, spatial, Layout::channels_last),
      batch * spatial, channels, kBatchNormEps, gamma.values, beta.values, events_);
  return {relayout(y, batch, channels, spatial, Layout::channels_first), q.output};
}

ops::LayerNormGradients<EmulatedTensor> EmulatedKernels::batch_norm_backward(
    const Precision& q, const Tensor& x, const Tensor& dy, const Tensor& gamma, std::size_t batch,
    std::size_t channels, std::size_t spatial) {
  auto g = cpu::batch_norm_backward(
      arithmetic(q), relayout(x.values, batch, channels, spatial, Layout::channels_last),
      relayout(dy.values, batch, channels, spatial, Layout::channels_last), batch * spatial,
      channels, kBatchNormEps, gamma.values, events_);
  return {{relayout(g.dx, batch, channels, spatial, Layout::channels_first), q.output},
          {std::move(g.dgamma), q.output},
          {std::move(g.dbeta), q.output}};
}

EmulatedTensor EmulatedKernels::attention(const Precision& q, const Tensor& queries,
                                          const Tensor& keys, const Tensor& values,
                                          std::size_t batch, std::size_t length, std::size_t d) {
  const std::size_t per = length * d;
  Tensor out{std::vector<double>(), q.output};
  out.values.reserve(batch * per);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto o =
        cpu::attention(arithmetic(q), std::span(queries.values).subspan(b * per, per),
                       std::span(keys.values).subspan(b * per, per),
                       std::span(values.values).subspan(b * per, per), length, length, d, events_);
    out.values.insert(out.values.end(), o.begin(), o.end());
  }
  return out;
}

ops::AttentionGradients<EmulatedTensor> EmulatedKernels::attention_backward(
    const Precision& q, const Tensor& queries, const Tensor& keys, const Tensor& values,
    const Tensor& d_out, std::size_t batch, std::size_t length, std::size_t d) {
  const std::size_t per = length * d;
  ops::AttentionGradients<Tensor> g{{{}, q.output}, {{}, q.output}, {{}, q.output}};
  for (std::size_t b = 0; b < batch; ++b) {
    const auto part = cpu::attention_backward(
        arithmetic(q), std::span(queries.values).subspan(b * per, per),
        std::span(keys.values).subspan(b * per, per),
        std::span(values.values).subspan(b * per, per),
        std::span(d_out.values).subspan(b * per, per), length, length, d, events_);
    g.dq.values.insert(g.dq.values.end(), part.dq.begin(), part.dq.end());
    g.dk.values.insert(g.dk.values.end(), part.dk.begin(), part.dk.end());
    g.dv.values.insert(g.dv.values.end(), part.dv.begin(), part.dv.end());
  }
  return g;
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
  return product(rows, out, in, {x.data(), in, 1}, {w.data(), out, 1}, &b);
}

ReferenceOps::LinearGradients ReferenceOps::linear_backward(const Tensor& x, const Tensor& w,
                                                            const Tensor&, const Tensor& dy,
                                                            std::size_t rows, std::size_t in,
                                                            std::size_t out, bool need_dx) {
  LinearGradients g;
  // dx = dy w^T (rows x in), dw = x^T dy (in x out), reading w and x transposed.
  if (need_dx) g.dx = product(rows, in, out, {dy.data(), out, 1}, {w.data(), 1, out});
  g.dw = product(in, out, rows, {x.data(), 1, in}, {dy.data(), out, 1});
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

ReferenceOps::Tensor ReferenceOps::gradient_for(const Tensor&, const Tensor& gradient) {
  return gradient;
}

ReferenceOps::Tensor ReferenceOps::add(const Tensor& a, const Tensor& b) {
  Tensor c(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) c[i] = a[i] + b[i];
  return c;
}

ReferenceOps::Tensor ReferenceOps::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             std::size_t batch, std::size_t length, std::size_t d) {
  const std::size_t per = length * d;
  Tensor out;
  out.reserve(batch * per);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto o = reference::ops::attention<Real>(std::span<const Real>(q).subspan(b * per, per),
                                                   std::span<const Real>(k).subspan(b * per, per),
                                                   std::span<const Real>(v).subspan(b * per, per),
                                                   length, length, d, d);
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

ReferenceOps::AttentionGradients ReferenceOps::attention_backward(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& d_out, std::size_t batch,
    std::size_t length, std::size_t d) {
  const std::size_t per = length * d;
  AttentionGradients g;
  for (std::size_t b = 0; b < batch; ++b) {
    const auto part = reference::ops::attention_backward<Real>(
        std::span<const Real>(q).subspan(b * per, per),
        std::span<const Real>(k).subspan(b * per, per),
        std::span<const Real>(v).subspan(b * per, per),
        std::span<const Real>(d_out).subspan(b * per, per), length, length, d, d);
    g.dq.insert(g.dq.end(), part.dq.begin(), part.dq.end());
    g.dk.insert(g.dk.end(), part.dk.begin(), part.dk.end());
    g.dv.insert(g.dv.end(), part.dv.begin(), part.dv.end());
  }
  return g;
}

ReferenceOps::Tensor ReferenceOps::conv2d(const Tensor& x, const Tensor& w,
                                          const ops::convolution::Geometry& g) {
  return lowered_gemms(ops::convolution::Pass::forward, g, x, w);
}

ReferenceOps::ConvolutionGradients ReferenceOps::conv2d_backward(
    const Tensor& x, const Tensor& w, const Tensor& dy, const ops::convolution::Geometry& g,
    bool need_dx) {
  ConvolutionGradients grads;
  if (need_dx) grads.dx = lowered_gemms(ops::convolution::Pass::backward_data, g, dy, w);
  grads.dw = lowered_gemms(ops::convolution::Pass::backward_filter, g, x, dy);
  return grads;
}

ReferenceOps::Tensor ReferenceOps::lowered_gemms(ops::convolution::Pass pass,
                                                 const ops::convolution::Geometry& g,
                                                 const Tensor& first, const Tensor& second) {
  return run_lowered<Real>(pass, g, first, second, [](const auto& part) {
    const auto& s = part.shape.sizes;
    return product(s[0], s[1], s[2], {part.a.data(), s[2], 1}, {part.b.data(), s[1], 1});
  });
}

ReferenceOps::Tensor ReferenceOps::batch_norm(const Tensor& x, const Tensor& gamma,
                                              const Tensor& beta, std::size_t batch,
                                              std::size_t channels, std::size_t spatial) {
  return reference::ops::batch_norm_training<Real>(x, batch, channels, spatial,
                                                   reference::to_real(kBatchNormEps), gamma, beta)
      .y;
}

ReferenceOps::BatchNormGradients ReferenceOps::batch_norm_backward(
    const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor&, std::size_t batch,
    std::size_t channels, std::size_t spatial) {
  auto g = reference::ops::batch_norm_backward<Real>(x, dy, batch, channels, spatial,
                                                     reference::to_real(kBatchNormEps), gamma);
  return {std::move(g.dx), std::move(g.dgamma), std::move(g.dbeta)};
}

ReferenceOps::Tensor ReferenceOps::relu(const Tensor& x) {
  return reference::ops::elementwise<Real>(reference::ops::Activation::relu, x);
}

ReferenceOps::Tensor ReferenceOps::relu_backward(const Tensor& x, const Tensor& dy) {
  return reference::ops::elementwise_backward<Real>(reference::ops::Activation::relu, x, dy);
}

ReferenceOps::Tensor ReferenceOps::mean_pool(const Tensor& x, std::size_t rows, std::size_t cols) {
  Tensor y;
  for (std::size_t r = 0; r < rows; ++r) {
    y.push_back(reference::ops::mean<Real>(std::span<const Real>(x).subspan(r * cols, cols)));
  }
  return y;
}

ReferenceOps::Tensor ReferenceOps::mean_pool_backward(const Tensor&, const Tensor& dy,
                                                      std::size_t rows, std::size_t cols) {
  Tensor dx;
  for (std::size_t r = 0; r < rows; ++r) {
    const Real v = dy[r] / static_cast<double>(cols);
    for (std::size_t c = 0; c < cols; ++c) dx.push_back(v);
  }
  return dx;
}

}  // namespace ampbench::train

template class ampbench::ops::AutocastOps<ampbench::train::EmulatedKernels>;
