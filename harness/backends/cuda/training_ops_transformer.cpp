// The transformer's ops of CudaOps (training_ops.hpp): add, gradient_for, attention and its
// backward, with the dtype flow and the roundings of train::EmulatedOps (harness/train/ops.cpp,
// harness/backends/cpu/emulate.cpp and attention_backward.cpp).
#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "harness/backends/cuda/training_ops.hpp"
#include "harness/backends/cuda/training_ops_context.hpp"
#include "harness/backends/cuda/training_plan.hpp"
#include "harness/numeric/rounding.hpp"
#include "harness/ops/catalog.hpp"

namespace ampbench::backends::cuda {
namespace {

using numeric::Format;
using training_ops_detail::dtype_of;

// 1/sqrt(d) as the emulation rounds it in the compute format `compute` (FlashAttention's
// softmax_scale): the square root rounded to it, then the quotient. A binary32 value (compute is
// fp32, fp16 or bf16: why_not_trainable).
float softmax_scale(std::size_t d, const Format& compute) {
  const auto round = [&](double x) {
    return numeric::round_to(compute, numeric::Rounding::nearest_even, x).value;
  };
  return static_cast<float>(round(1.0 / round(std::sqrt(static_cast<double>(d)))));
}

}  // namespace

CudaTensor CudaOps::gradient_for(const Tensor& input, const Tensor& gradient) {
  return cast(gradient, input.format);
}

CudaTensor CudaOps::add(const Tensor& a, const Tensor& b) {
  const auto range = op_range("add");
  if (a.size != b.size) {
    throw std::invalid_argument(fmt::format("add: a has {} elements and b {}", a.size, b.size));
  }
  const auto flow =
      autocast("add", policy::Op::add, std::initializer_list<Format>{a.format, b.format});
  const auto& q = flow.precision();
  const Tensor aa = convert(a, flow.operand(0));
  const Tensor ba = convert(b, flow.operand(1));
  Tensor y = empty(aa.size, aa.type);
  kernels::add(aa.type, aa.data(), ba.data(), y.data(), aa.size, context_->stream);
  return cast(y, q.output);
}

CudaTensor CudaOps::attention_product(const policy::OpPrecision& q, std::string_view op,
                                      const ops::Shape& shape, std::size_t batch,
                                      const Tensor& first, const Tensor& second) {
  if (!numeric::same_values(first.format, second.format)) {
    throw std::logic_error("attention: the operands of a product differ in format");
  }
  const GemmPlan plan = attention_product_plan(q, first.format);
  const Tensor a = cast(first, dtype_of(plan.inputs));
  const Tensor b = cast(second, dtype_of(plan.inputs));
  const GemmCall call = attention_call(op, shape, batch);
  const Tensor* operands[] = {&a, &b};
  if (operands[call.a.operand]->size != batch * static_cast<std::size_t>(call.stride_a) ||
      operands[call.b.operand]->size != batch * static_cast<std::size_t>(call.stride_b)) {
    throw std::logic_error(fmt::format("attention: {}'s operands are not {} samples of {}", op,
                                       batch, ops::to_string(shape)));
  }
  Tensor d = empty(batch * call.m * call.n, dtype_of(plan.output));
  matmul(plan, call, operands[call.a.operand]->data(), operands[call.b.operand]->data(), d.data(),
         nullptr);
  return d;
}

CudaTensor CudaOps::in_format(const Tensor& t, const Format& f) {
  if (numeric::same_values(t.format, f)) return t;
  const std::optional<DeviceType> held = holding_type(f);
  if (!held) throw std::logic_error(fmt::format("no device type holds {}", f.name));
  const Tensor r = cast(t, dtype_of(*held));
  if (numeric::same_values(r.format, f)) return r;
  if (!numeric::same_values(f, numeric::formats::tf32)) {
    throw std::logic_error(fmt::format("the device does not round binary32 values to {}", f.name));
  }
  Tensor rounded = empty(r.size, kernels::DType::f32);
  kernels::round_to_tf32(static_cast<const float*>(r.data()), static_cast<float*>(rounded.data()),
                         r.size, context_->stream);
  rounded.format = f;
  return rounded;
}

CudaTensor CudaOps::widened(const Tensor& t, const Format& f) const {
  Tensor w = cast(t, f);
  w.format = f;
  return w;
}

CudaTensor CudaOps::scaled(const Tensor& x, float factor) {
  Tensor y = empty(x.size, x.type);
  kernels::scale(x.type, x.data(), factor, y.data(), x.size, context_->stream);
  return y;
}

CudaTensor CudaOps::attention_scores(const policy::OpPrecision& q, const Tensor& queries,
                                     const Tensor& keys, std::size_t batch, std::size_t length,
                                     std::size_t d) {
  // S = Q K^T per sample, in the compute format: the catalog's gemm_backward_a (dA = dY B^T) of
  // shape L x d x L, with Q as dY and K as B. Then s_ij = c(sum * scale), one product of two values
  // of the compute format rounded to it, as the emulation rounds it.
  const Tensor sums = attention_product(q, "gemm_backward_a", ops::Shape{{length, d, length}},
                                        batch, queries, keys);
  return scaled(sums, softmax_scale(d, q.compute));
}

CudaTensor CudaOps::attention_probabilities(const Tensor& scores, std::size_t length) {
  Tensor p = empty(scores.size, scores.type);
  kernels::softmax(scores.type, kernels::RowSoftmax::softmax, scores.data(), p.data(),
                   scores.size / length, length, context_->stream);
  return p;
}

CudaTensor CudaOps::attention(const Tensor& q, const Tensor& k, const Tensor& v, std::size_t batch,
                              std::size_t length, std::size_t d) {
  const auto range = op_range("attention");
  const auto p =
      resolved(policy::Op::attention, std::initializer_list<Format>{q.format, k.format, v.format});
  const Tensor qa = in_format(q, p.input);
  const Tensor ka = in_format(k, p.input);
  const Tensor va = in_format(v, p.input);
  const Tensor probabilities =
      attention_probabilities(attention_scores(p, qa, ka, batch, length, d), length);
  // O = P V (gemm L x d x L) with P in the compute format: V widened to it exactly, then one
  // rounding of the sums to the output format.
  const Tensor out = attention_product(p, "gemm", ops::Shape{{length, d, length}}, batch,
                                       probabilities, widened(va, p.compute));
  return cast(out, p.output);
}

CudaOps::AttentionGradients CudaOps::attention_backward(const Tensor& q, const Tensor& k,
                                                        const Tensor& v, const Tensor& d_out,
                                                        std::size_t batch, std::size_t length,
                                                        std::size_t d) {
  const auto range = op_range("attention_backward");
  const auto p =
      resolved(policy::Op::attention, std::initializer_list<Format>{q.format, k.format, v.format});
  const Tensor qa = in_format(q, p.input);
  const Tensor ka = in_format(k, p.input);
  const Tensor va = in_format(v, p.input);
  const Tensor da = in_format(d_out, p.input);
  const ops::Shape shape{{length, d, length}};
  // The probabilities again, from the scores, and the output O as the forward stored it (rounded to
  // the output format), in the compute format.
  const Tensor probabilities =
      attention_probabilities(attention_scores(p, qa, ka, batch, length, d), length);
  const Tensor vw = widened(va, p.compute);
  const Tensor o = cast(
      cast(attention_product(p, "gemm", shape, batch, probabilities, vw), p.output), p.compute);
  // dP = dO V^T (gemm_backward_a, dO as dY and V as B); dS = P (dP - D) with FlashAttention-2's
  // D = rowsum(dO * O), as the emulation forms it.
  const Tensor dp = attention_product(p, "gemm_backward_a", shape, batch, da, va);
  const Tensor dow = widened(da, p.compute);
  Tensor ds = empty(dp.size, dp.type);
  kernels::attention_softmax_backward(dp.type, probabilities.data(), dp.data(), o.data(),
                                      dow.data(), ds.data(), batch * length, length, d,
                                      context_->stream);
  // dQ = (dS K) * scale and dK = (dS^T Q) * scale, the scale last, on the sums; dV = P^T dO.
  // Products of dS and P in the compute format with the inputs widened to it exactly.
  const float scale = softmax_scale(d, p.compute);
  const Tensor dq =
      scaled(attention_product(p, "gemm", shape, batch, ds, widened(ka, p.compute)), scale);
  const Tensor dk = scaled(
      attention_product(p, "gemm_backward_b", shape, batch, ds, widened(qa, p.compute)), scale);
  const Tensor dv = attention_product(p, "gemm_backward_b", shape, batch, probabilities, dow);
  // Each gradient rounded to the output format, then to its input's format (autograd's cast back).
  AttentionGradients g;
  g.dq = cast(cast(dq, p.output), q.format);
  g.dk = cast(cast(dk, p.output), k.format);
  g.dv = cast(cast(dv, p.output), v.format);
  return g;
}

}  // namespace ampbench::backends::cuda
