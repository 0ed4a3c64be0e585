// The CPU emulation of ops under a precision policy: every intermediate result is rounded to the
// format the policy computes in, every running sum to the format it accumulates in, and every
// output to the output format, counting the rounding events of each.
//
// Values are held in binary64. That "wider container" is exact for what is emulated here: a sum,
// difference, product, quotient or square root of two values of a format with precision p, computed
// in binary64 and then rounded to the format, equals the operation rounded once to the format
// whenever 53 >= 2p + 2 (Figueroa, "When is double rounding innocuous?", SIGNUM 1995) — true for
// fp32, tf32, bf16, fp16 and fp8, and for fp64 the binary64 operation is the operation itself. A
// product of two values of a format with 2p <= 53 is exact in binary64 before any rounding.
// Formats with 26 <= p <= 52 (user formats) would double-round: `exact_emulation` says so and the
// ops refuse them. Elementary functions (exp, log, erf, tanh, sqrt) are binary64 libm results
// rounded to the compute format: a model of a good device library (faithful, almost always
// correctly rounded), not of any particular one.
//
// Inside the ops, fused multiply-adds are not modelled (a product is rounded to the compute format
// before it is added): a fused step is what the MMA models (harness/numeric/mma.hpp) are for. The
// fma op itself rounds once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/numeric/format.hpp"
#include "harness/numeric/mma.hpp"
#include "harness/numeric/options.hpp"
#include "harness/numeric/rounding.hpp"

namespace ampbench::backends::cpu {

// How an op's arithmetic rounds.
struct Arithmetic {
  numeric::Format compute;     // products, quotients, elementary functions, other intermediates
  numeric::Format accumulate;  // running sums
  numeric::Format output;      // what the op returns
  numeric::Rounding mode = numeric::Rounding::nearest_even;
};

// Whether binary64 containers emulate f exactly (see above).
bool exact_emulation(const numeric::Format& f);
// Why the CPU backend cannot emulate an arithmetic exactly (a mode other than nearest-even, or a
// format that would double-round), or nothing when it can: what the ops check before they run,
// and what the command line checks before any work starts.
std::optional<std::string> why_not_emulable(const Arithmetic& arithmetic);

// Rounding events, of intermediates and of outputs.
struct Events {
  numeric::EventCounts intermediate;
  numeric::EventCounts output;
  Events& operator+=(const Events& other);
};

// How a long sum is formed.
enum class Summation {
  sequential,  // s = s + x[i], left to right
  pairwise,    // halves summed recursively, each addition rounded
};

// A row-major matrix product C = A B (+ C_in) (+ bias per column): A m x k, B k x n, each output a
// sum of k products rounded to `compute`, accumulated in `accumulate` as `summation` says, then
// rounded to `output`. C_in and bias (empty when absent) are added last, in `accumulate`.
//
// When products and sums are both binary32 rounded to nearest (the fp32, tf32 and AMP policies),
// the sequential sum runs on the CPU's own binary32 arithmetic, rows of C at a time, and classifies
// each rounding exactly (from the exact product and the exact error of each addition; when a
// range check shows that no product or sum can be tiny, overflow or be NaN, by cheaper exact
// tests): the same values and the same event counts as the general path, which `path` can force.
enum class GemmPath { automatic, general };
std::vector<double> gemm(const Arithmetic& arithmetic, Summation summation, std::size_t m,
                         std::size_t n, std::size_t k, std::span<const double> a,
                         std::span<const double> b, std::span<const double> c_in,
                         std::span<const double> bias, Events& events,
                         GemmPath path = GemmPath::automatic);

// The same product on a Tensor Core model (harness/numeric/mma.hpp): each output is mma_dot of its
// row and column with the accumulator input c = C_in (0 when C_in is empty; it must hold values of
// the model's accumulator format), in the model's own arithmetic, then rounded to `output` in
// `mode`. Inputs are first quantized as the model's hardware does (tf32: truncated). Only the
// output rounding's events are counted: the model has no others to report.
std::vector<double> gemm_mma(const numeric::MmaModel& model, const numeric::Format& output,
                             numeric::Rounding mode, std::size_t m, std::size_t n, std::size_t k,
                             std::span<const double> a, std::span<const double> b,
                             std::span<const double> c_in, Events& events);

// Sum, mean and Euclidean norm of a vector.
double sum(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
           Events& events);
double mean(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
            Events& events);
double l2_norm(const Arithmetic& arithmetic, Summation summation, std::span<const double> x,
               Events& events);

// Row-wise softmax family over `cols` columns, as GPU kernels compute them: m = max(row);
// e_i = exp(x_i - m); s = sum e_i; softmax y_i = e_i / s; log_softmax y_i = (x_i - m) - log s;
// logsumexp m + log s, or m itself when m is infinite (as torch.logsumexp). The maximum propagates
// NaN: a row holding NaN is NaN throughout, as in PyTorch.
std::vector<double> softmax(const Arithmetic& arithmetic, std::span<const double> x,
                            std::size_t rows, std::size_t cols, Events& events);
std::vector<double> log_softmax(const Arithmetic& arithmetic, std::span<const double> x,
                                std::size_t rows, std::size_t cols, Events& events);
std::vector<double> logsumexp(const Arithmetic& arithmetic, std::span<const double> x,
                              std::size_t rows, std::size_t cols, Events& events);

// Row-wise layer norm (biased variance, two passes: mean, then mean of squared deviations) and
// RMS norm; gamma and beta per column, empty when absent.
std::vector<double> layer_norm(const Arithmetic& arithmetic, std::span<const double> x,
                               std::size_t rows, std::size_t cols, double eps,
                               std::span<const double> gamma, std::span<const double> beta,
                               Events& events);
std::vector<double> rms_norm(const Arithmetic& arithmetic, std::span<const double> x,
                             std::size_t rows, std::size_t cols, double eps,
                             std::span<const double> gamma, Events& events);

// Training-mode batch norm of x (rows = batch, cols = channels): each column normalised with its
// batch mean and biased variance (two passes), then gamma and beta per column (empty when absent).
std::vector<double> batch_norm(const Arithmetic& arithmetic, std::span<const double> x,
                               std::size_t rows, std::size_t cols, double eps,
                               std::span<const double> gamma, std::span<const double> beta,
                               Events& events);

// The backward of training-mode batch_norm (x rows = batch, cols = channels; gamma empty for 1):
// the statistics recomputed as the forward pass forms them, then ATen's formulation
// (batch_norm_backward_reduce and _elemt): dbeta = sum dy, dgamma = sum dy (x - mean) * rstd,
// dx = (dy - (x - mean) * (sum dy (x - mean) / n * rstd^2) - mean dy) * rstd * gamma.
// `events` receives every rounding; the output events of each gradient are also counted apart.
struct BatchNormGradients {
  std::vector<double> dx;
  std::vector<double> dgamma;
  std::vector<double> dbeta;
  numeric::EventCounts dx_output, dgamma_output, dbeta_output;
};
BatchNormGradients batch_norm_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                       std::span<const double> dy, std::size_t rows,
                                       std::size_t cols, double eps, std::span<const double> gamma,
                                       Events& events);

// The mean of each row of rows x cols (global average pooling of N*C rows of H*W): the sum in the
// accumulation format, divided in the compute format. Its backward spreads dy / cols over the row.
std::vector<double> mean_rows(const Arithmetic& arithmetic, std::span<const double> x,
                              std::size_t rows, std::size_t cols, Events& events);
std::vector<double> mean_rows_backward(const Arithmetic& arithmetic, std::span<const double> dy,
                                       std::size_t cols, Events& events);

// One head of scaled-dot-product attention as a fused kernel computes it in its compute format:
// scores s_ij = (q_i . k_j) * (1/sqrt d), row softmax as softmax() does, then o_i = sum_j p_ij v_j;
// products rounded to compute, the two dot products accumulated in accumulate. q is L x d, k and
// v are S x d; the result is L x d.
std::vector<double> attention(const Arithmetic& arithmetic, std::span<const double> q,
                              std::span<const double> k, std::span<const double> v,
                              std::size_t queries, std::size_t keys, std::size_t d, Events& events);

// The backward of attention() for the upstream gradient d_out (L x d), as FlashAttention-2's
// backward computes it (attention_backward.cpp gives the order of every rounding): P recomputed
// as the forward does, D_i = rowsum(dO_i * O_i) from the forward output O,
// dS = P * (dO V^T - D), dQ = dS K / sqrt d, dK = dS^T Q / sqrt d, dV = P^T dO. `events` receives
// every rounding; the output events of each gradient are also counted apart.
struct AttentionGradients {
  std::vector<double> dq;  // L x d
  std::vector<double> dk;  // S x d
  std::vector<double> dv;  // S x d
  numeric::EventCounts dq_output, dk_output, dv_output;
};
AttentionGradients attention_backward(const Arithmetic& arithmetic, std::span<const double> q,
                                      std::span<const double> k, std::span<const double> v,
                                      std::span<const double> d_out, std::size_t queries,
                                      std::size_t keys, std::size_t d, Events& events);

enum class Binary { add, mul };
// x + y or x * y, element by element, rounded to compute, then to output.
std::vector<double> elementwise(const Arithmetic& arithmetic, Binary op, std::span<const double> x,
                                std::span<const double> y, Events& events);

// x * y + z element by element, rounded once to compute (a fused multiply-add), then to output:
// ATen's addcmul and CUDA's fmaf in opmath, then the store.
std::vector<double> fma(const Arithmetic& arithmetic, std::span<const double> x,
                        std::span<const double> y, std::span<const double> z, Events& events);
// x rounded to the output format (a dtype conversion, as autocast's casts and .to() do); the
// compute and accumulation formats play no part. Its events are the conversion's.
std::vector<double> cast(const Arithmetic& arithmetic, std::span<const double> x, Events& events);

// Backward of the softmax family over rows of `cols`, recomputing y = softmax(x) as the forward
// does: softmax dx = y (dy - sum_j dy_j y_j); log_softmax dx = dy - softmax(x) sum_j dy_j.
std::vector<double> softmax_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                     std::span<const double> dy, std::size_t rows, std::size_t cols,
                                     Events& events);
std::vector<double> log_softmax_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                         std::span<const double> dy, std::size_t rows,
                                         std::size_t cols, Events& events);
// Backward of layer_norm for dx (gamma per column, empty for 1), as kernels compute it from the
// saved statistics: xhat = (x - mean) rstd, g = dy gamma,
// dx = rstd (g - mean(g) - xhat mean(g xhat)), the means over the row.
std::vector<double> layer_norm_backward(const Arithmetic& arithmetic, std::span<const double> x,
                                        std::span<const double> dy, std::size_t rows,
                                        std::size_t cols, double eps, std::span<const double> gamma,
                                        Events& events);
// d loss / d logits of the mean cross-entropy (no smoothing): (softmax(x) - onehot(target)) / rows,
// times the upstream gradient d_loss (the loss scale in a scaled backward pass), which multiplies
// before the division by rows as in PyTorch's nll_loss backward, so that scaling can lift entries
// that the division alone would make underflow.
std::vector<double> cross_entropy_backward(const Arithmetic& arithmetic,
                                           std::span<const double> logits,
                                           std::span<const std::int64_t> targets, std::size_t rows,
                                           std::size_t cols, Events& events, double d_loss = 1.0);
// The gradients of layer_norm's gamma and beta: column sums over the rows of dy * xhat and of dy,
// xhat formed as the forward pass forms it, the sums accumulated row by row.
struct LayerNormParameterGradients {
  std::vector<double> dgamma;
  std::vector<double> dbeta;
};
LayerNormParameterGradients layer_norm_parameter_backward(const Arithmetic& arithmetic,
                                                          std::span<const double> x,
                                                          std::span<const double> dy,
                                                          std::size_t rows, std::size_t cols,
                                                          double eps, Events& events);

enum class Activation { relu, gelu, gelu_tanh, silu };
// dx = dy * f'(x), f' as kernels write it: relu 1 or 0; gelu Phi(x) + x phi(x) with
// Phi = (1 + erf(x / sqrt 2)) / 2 and phi the normal density; silu s (1 + x (1 - s)), s the
// logistic function; gelu_tanh (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2) with
// t = tanh(sqrt(2/pi) (x + 0.044715 x^3)).
std::vector<double> activation_backward(const Arithmetic& arithmetic, Activation activation,
                                        std::span<const double> x, std::span<const double> dy,
                                        Events& events);
// y = activation(x + bias[column]) over rows x cols (bias empty when absent).
std::vector<double> bias_activation(const Arithmetic& arithmetic, Activation activation,
                                    std::span<const double> x, std::size_t rows, std::size_t cols,
                                    std::span<const double> bias, Events& events);

// Mean over the batch of -log softmax(logits)[target], with label smoothing s as PyTorch defines
// it: (1 - s) * nll + s * mean over classes of -log softmax.
double cross_entropy(const Arithmetic& arithmetic, std::span<const double> logits,
                     std::span<const std::int64_t> targets, std::size_t rows, std::size_t cols,
                     double label_smoothing, Events& events);

}  // namespace ampbench::backends::cpu
