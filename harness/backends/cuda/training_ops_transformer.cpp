// The transformer's kernels of the CUDA backend (training_ops.hpp): add, attention and its
// backward, with the roundings of the CPU emulation's (harness/backends/cpu/emulate.cpp and
// attention_backward.cpp); their operands come converted by autocast's type flow
// (ops/autocast_ops.hpp).
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

CudaTensor CudaKernels::attention_product(const Precision& q, std::string_view op,
                                          const ops::Shape& shape, std::size_t batch,
                                          const Tensor& first, const Tensor& second) {
  if (!numeric::same_values(first.format, second.format)) {
    throw std::logic_error("attention: the operands of a product differ in format");
  }
  const GemmPlan plan = attention_product_plan(q, first.format);
  const Tensor a = retyped(first, dtype_of(plan.inputs));
  const Tensor b = retyped(second, dtype_of(plan.inputs));
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

CudaTensor CudaKernels::widened(const Tensor& t, const Format& f) const {
  Tensor w = retyped(t, dtype_of(f));
  w.format = f;
  return w;
}

CudaTensor CudaKernels::scaled(const Tensor& x, float factor) {
  Tensor y = empty(x.size, x.type);
  kernels::scale(x.type, x.data(), factor, y.data(), x.size, context_->stream);
  return y;
}

CudaTensor CudaKernels::attention_scores(const Precision& q, const Tensor& queries,
                                         const Tensor& keys, std::size_t batch, std::size_t length,
                                         std::size_t d) {
  // S = Q K^T per sample, in the compute format: the catalog's gemm_backward_a (dA = dY B^T) of
  // shape L x d x L, with Q as dY and K as B. Then s_ij = c(sum * scale), one product of two values
  // of the compute format rounded to it, as the emulation rounds it.
  const Tensor sums = attention_product(q, "gemm_backward_a", ops::Shape{{length, d, length}},
                                        batch, queries, keys);
  return scaled(sums, softmax_scale(d, q.compute));
}

CudaTensor CudaKernels::attention_probabilities(const Tensor& scores, std::size_t length) {
  Tensor p = empty(scores.size, scores.type);
  kernels::softmax(scores.type, kernels::RowSoftmax::softmax, scores.data(), p.data(),
                   scores.size / length, length, context_->stream);
  return p;
}

CudaTensor CudaKernels::attention(const Precision& p, const Tensor& queries, const Tensor& keys,
                                  const Tensor& values, std::size_t batch, std::size_t length,
                                  std::size_t d) {
  const Tensor probabilities =
      attention_probabilities(attention_scores(p, queries, keys, batch, length, d), length);
  // O = P V (gemm L x d x L) with P in the compute format: V widened to it exactly; the type flow
  // then rounds the sums once, to the output format.
  return attention_product(p, "gemm", ops::Shape{{length, d, length}}, batch, probabilities,
                           widened(values, p.compute));
}

ops::AttentionGradients<CudaTensor> CudaKernels::attention_backward(
    const Precision& p, const Tensor& queries, const Tensor& keys, const Tensor& values,
    const Tensor& d_out, std::size_t batch, std::size_t length, std::size_t d) {
  const ops::Shape shape{{length, d, length}};
  // The probabilities again, from the scores, and the output O as the forward stored it (rounded to
  // the output format), in the compute format.
  const Tensor probabilities =
      attention_probabilities(attention_scores(p, queries, keys, batch, length, d), length);
  const Tensor vw = widened(values, p.compute);
  const Tensor o =
      widened(cast(attention_product(p, "gemm", shape, batch, probabilities, vw), p.output, p.mode),
              p.compute);
  // dP = dO V^T (gemm_backward_a, dO as dY and V as B); dS = P (dP - D) with FlashAttention-2's
  // D = rowsum(dO * O), as the emulation forms it.
  const Tensor dp = attention_product(p, "gemm_backward_a", shape, batch, d_out, values);
  const Tensor dow = widened(d_out, p.compute);
  Tensor ds = empty(dp.size, dp.type);
  kernels::attention_softmax_backward(dp.type, probabilities.data(), dp.data(), o.data(),
                                      dow.data(), ds.data(), batch * length, length, d,
                                      context_->stream);
  // dQ = (dS K) * scale and dK = (dS^T Q) * scale, the scale last, on the sums; dV = P^T dO.
  // Products of dS and P in the compute format with the inputs widened to it exactly. The type
  // flow rounds each to the output format, then to its input's format (autograd's cast back).
  const float scale = softmax_scale(d, p.compute);
  return {
      scaled(attention_product(p, "gemm", shape, batch, ds, widened(keys, p.compute)), scale),
      scaled(attention_product(p, "gemm_backward_b", shape, batch, ds, widened(queries, p.compute)),
             scale),
      attention_product(p, "gemm_backward_b", shape, batch, probabilities, dow)};
}

}  // namespace ampbench::backends::cuda
