// The CUDA backend's own kernels for the ops that are not GEMMs: what a GPU framework runs for
// them, so that the audit and the training steps judge what the device computes. Each launcher
// enqueues on `stream` and returns; every pointer is device memory. Arithmetic is binary32 for
// every element type (PyTorch's opmath_type for half and bfloat16), and each result is rounded once
// to its element type, to nearest even. The per-element math lives in __host__ __device__ headers
// shared with the host (docs/cuda-backend.md).
//
// Unless a launcher says otherwise, all tensor inputs and outputs of one call have the element
// type `type`: the caller casts operands to the op's input type first (cast below), as autocast
// does. Statistics (mean, reciprocal standard deviation) and losses are binary32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernels/dtype.hpp"

namespace ampbench::kernels {

std::size_t dtype_bytes(DType type);
std::string_view dtype_name(DType type);  // "fp32", "fp16", "bf16"

enum class Activation { none, relu, gelu, gelu_tanh, silu };

// y[i] = x[i] converted from `from` to `to` (round to nearest even; exact when widening).
void cast(DType from, DType to, const void* x, void* y, std::size_t n, cudaStream_t stream);

// y = a + b, element by element, n elements.
void add(DType type, const void* a, const void* b, void* y, std::size_t n, cudaStream_t stream);

// y = act(x + bias) for rows x cols row-major x; bias (cols) may be null.
void bias_activation(DType type, Activation act, const void* x, const void* bias, void* y,
                     std::size_t rows, std::size_t cols, cudaStream_t stream);
// dx = dy * act'(x), n elements (act != none).
void activation_backward(DType type, Activation act, const void* x, const void* dy, void* dx,
                         std::size_t n, cudaStream_t stream);

// out[j] = sum over i of x[i][j], for rows x cols x: the bias gradient of a linear layer.
void column_sums(DType type, const void* x, void* out, std::size_t rows, std::size_t cols,
                 cudaStream_t stream);

// Layer norm over the last dimension of rows x cols x: y = (x - mean) * rstd * gamma + beta, with
// rstd = 1 / sqrt(var + eps) (biased variance). mean and rstd (rows, binary32) are kept for the
// backward; either may be null when not needed.
void layer_norm(DType type, const void* x, const void* gamma, const void* beta, void* y,
                float* mean, float* rstd, std::size_t rows, std::size_t cols, float eps,
                cudaStream_t stream);
// dx (rows x cols), dgamma and dbeta (cols) from the forward's x, gamma, mean and rstd. Any of the
// three outputs may be null.
void layer_norm_backward(DType type, const void* x, const void* dy, const void* gamma,
                         const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta,
                         std::size_t rows, std::size_t cols, cudaStream_t stream);

// Mean cross-entropy of rows x classes logits against targets (rows, each in [0, classes)),
// written to *loss (one binary32 on the device).
void cross_entropy(DType type, const void* logits, const std::int64_t* targets, float* loss,
                   std::size_t rows, std::size_t classes, cudaStream_t stream);
// dlogits = (softmax(logits) - onehot(target)) * d_loss / rows.
void cross_entropy_backward(DType type, const void* logits, const std::int64_t* targets,
                            float d_loss, void* dlogits, std::size_t rows, std::size_t classes,
                            cudaStream_t stream);

}  // namespace ampbench::kernels

// ---- The audit's other ops (harness/backends/cuda runs them; docs/cuda-backend.md) -----------
namespace ampbench::kernels {

// What a row of softmax gives: softmax and log_softmax a rows x cols y, logsumexp one value per
// row (y has rows elements).
enum class RowSoftmax { softmax, log_softmax, logsumexp };
void softmax(DType type, RowSoftmax what, const void* x, void* y, std::size_t rows,
             std::size_t cols, cudaStream_t stream);
// From the forward's input x (the softmax is computed again) and dy, rows x cols:
// dx = y (dy - sum dy y) with y = softmax(x); for log_softmax dx = dy - softmax(x) sum dy.
void softmax_backward(DType type, const void* x, const void* dy, void* dx, std::size_t rows,
                      std::size_t cols, cudaStream_t stream);
void log_softmax_backward(DType type, const void* x, const void* dy, void* dx, std::size_t rows,
                          std::size_t cols, cudaStream_t stream);

// y = x / sqrt(mean(x^2) + eps) * gamma per row of rows x cols x; gamma (cols) may be null.
void rms_norm(DType type, const void* x, const void* gamma, void* y, std::size_t rows,
              std::size_t cols, float eps, cudaStream_t stream);

// One value of `type` in *out from the n elements of x: their sum, their sum / n, or the square
// root of the sum of their squares.
enum class Reduction { sum, mean, l2_norm };
void reduce(DType type, Reduction what, const void* x, void* out, std::size_t n,
            cudaStream_t stream);

// y = a * b and out = fma(x, y, z) (one binary32 rounding, then one to `type`), n elements.
void mul(DType type, const void* a, const void* b, void* y, std::size_t n, cudaStream_t stream);
void fma(DType type, const void* x, const void* y, const void* z, void* out, std::size_t n,
         cudaStream_t stream);

// y = x * factor, n elements: one binary32 product, rounded once to `type` (attention's
// 1/sqrt(d) applied to binary32 scores and gradients).
void scale(DType type, const void* x, float factor, void* y, std::size_t n, cudaStream_t stream);

// The gradient of attention's scores as FlashAttention-2's backward forms it (the CPU backend's
// attention_backward): ds = p (dp - D) for rows x cols probabilities p and their gradient dp, with
// D = sum_t d_out[t] o[t] per row from the output o and its gradient d_out (rows x d), the
// products added in order; binary32 arithmetic (kernels/op_math.hpp), ds rounded once to `type`.
void attention_softmax_backward(DType type, const void* p, const void* dp, const void* o,
                                const void* d_out, void* ds, std::size_t rows, std::size_t cols,
                                std::size_t d, cudaStream_t stream);

// y = x rounded to tf32 (binary32 values with 10 fraction bits), to nearest even, n binary32
// elements: the rounding an autocast-free TF32 policy applies to attention's inputs, as the CPU
// backend's numeric::round_to does it (its code, run on the device).
void round_to_tf32(const float* x, float* y, std::size_t n, cudaStream_t stream);

}  // namespace ampbench::kernels
