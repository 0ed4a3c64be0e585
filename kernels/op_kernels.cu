// The op kernels of kernels/op_kernels.hpp. Every element is read as binary32 (exact for fp16 and
// bf16), every operation is binary32 (this file is compiled with -fmad=false: no contraction into
// FMA, each product and sum rounded as written), and each result is rounded once to its element
// type, to nearest even.
//
// Reductions (docs/cuda-backend.md, "Reduction order"): a row is reduced by one block of kThreads
// threads. Thread t sums the elements t, t + kThreads, t + 2 kThreads, ... of the row in that
// order, starting from 0 (-inf for a maximum, which propagates NaN as PyTorch's does); then each
// warp combines its 32 partial results by
// __shfl_down_sync at offsets 16, 8, 4, 2, 1 (lane l takes lane l + offset); then the first warp
// combines the kWarps warps' results in the same way, at offsets 4, 2, 1. Column sums are one
// thread per column, adding the rows in order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "harness/numeric/rounding.hpp"
#include "kernels/cuda_check.hpp"
#include "kernels/op_kernels.hpp"
#include "kernels/op_math.hpp"

namespace ampbench::kernels {
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 256;  // per block, a power of two
constexpr int kWarps = kThreads / kWarpSize;
constexpr std::size_t kMaxBlocks = 65536;  // grid-stride loops cover the rest

// ---- element types ------------------------------------------------------------------------------

__device__ float load(const float* p, std::size_t i) {
  return p[i];
}
__device__ float load(const __half* p, std::size_t i) {
  return __half2float(p[i]);
}
__device__ float load(const __nv_bfloat16* p, std::size_t i) {
  return __bfloat162float(p[i]);
}
__device__ void store(float* p, std::size_t i, float v) {
  p[i] = v;
}
__device__ void store(__half* p, std::size_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ void store(__nv_bfloat16* p, std::size_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

template <typename T>
struct Tag {
  using type = T;
};

// Calls body(Tag<T>{}) with the C++ type of `type`.
template <typename Body>
void with_type(DType type, Body&& body) {
  switch (type) {
    case DType::f32: body(Tag<float>{}); return;
    case DType::f16: body(Tag<__half>{}); return;
    case DType::bf16: body(Tag<__nv_bfloat16>{}); return;
  }
  throw std::invalid_argument("op kernels: unknown element type");
}

// ---- launch geometry ----------------------------------------------------------------------------

unsigned blocks_for(std::size_t items, std::size_t per_block) {
  return static_cast<unsigned>(std::min((items + per_block - 1) / per_block, kMaxBlocks));
}
unsigned elementwise_blocks(std::size_t n) {
  return blocks_for(n, kThreads);
}
unsigned row_blocks(std::size_t rows) {
  return blocks_for(rows, 1);
}
void check_launch() {
  AMPBENCH_CUDA_CHECK(cudaGetLastError());
}

__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ std::size_t grid_stride() {
  return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

// ---- block reductions ---------------------------------------------------------------------------

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return op_math::max_propagating_nan(a, b); }
};

// Combines the value of every thread of the block in the order the file's header describes and
// gives the result to every thread. Every thread of the block must call it; `shared` holds kWarps
// floats.
template <typename Combine>
__device__ float block_reduce(float v, Combine combine, float* shared) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = combine(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
  }
  __syncthreads();  // the previous call's readers of shared[0] are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? shared[lane] : 0.0F;  // lanes >= kWarps never reach lane 0's result
    for (int offset = kWarps / 2; offset > 0; offset /= 2) {
      v = combine(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

// The sum over a row of f(c), c = 0 .. cols - 1, in the documented order.
template <typename Term>
__device__ float row_sum(std::size_t cols, Term term, float* shared) {
  float partial = 0.0F;
  for (std::size_t c = threadIdx.x; c < cols; c += kThreads) partial = partial + term(c);
  return block_reduce(partial, Sum{}, shared);
}

template <typename T>
__device__ float row_max(const T* row, std::size_t cols, float* shared) {
  float partial = -CUDART_INF_F;
  for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
    partial = op_math::max_propagating_nan(partial, load(row, c));
  }
  return block_reduce(partial, Max{}, shared);
}

// A row's maximum m and sum s of exp(x - m): what softmax, its relatives and cross-entropy share.
struct ExpSum {
  float max;
  float sum;
};
template <typename T>
__device__ ExpSum row_exp_sum(const T* row, std::size_t cols, float* shared) {
  const float m = row_max(row, cols, shared);
  const float s = row_sum(
      cols, [&](std::size_t c) { return expf(load(row, c) - m); }, shared);
  return {m, s};
}

// ---- element-wise kernels -----------------------------------------------------------------------

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) store(y, i, load(x, i));
}

enum class Binary { add, mul };

template <typename T>
__global__ void pointwise_binary_kernel(Binary op, const T* a, const T* b, T* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float u = load(a, i), v = load(b, i);
    store(y, i, op == Binary::add ? u + v : u * v);
  }
}

// y = x rounded to tf32 (passed by value: a host constant) to nearest even: the host's
// numeric::round_to, run on the device.
__global__ void cast_to_tf32_kernel(numeric::Format tf32, const float* x, float* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    y[i] = static_cast<float>(numeric::round_to(tf32, numeric::Rounding::nearest_even, x[i]).value);
  }
}

// y = x * factor: one binary32 product, rounded once to T.
template <typename T>
__global__ void pointwise_scale_kernel(const T* x, float factor, T* y, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) store(y, i, load(x, i) * factor);
}

template <typename T>
__global__ void pointwise_fma_kernel(const T* x, const T* y, const T* z, T* out, std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    store(out, i, fmaf(load(x, i), load(y, i), load(z, i)));
  }
}

__device__ float activate(Activation act, float v) {
  switch (act) {
    case Activation::none: return v;
    case Activation::relu: return op_math::relu(v);
    case Activation::gelu: return op_math::gelu(v);
    case Activation::gelu_tanh: return op_math::gelu_tanh(v);
    case Activation::silu: return op_math::silu(v);
  }
  return v;
}

// dx from dy = g at x = v: dy times the derivative, except relu's select (threshold_backward).
__device__ float gradient(Activation act, float v, float g) {
  switch (act) {
    case Activation::none: return g;
    case Activation::relu: return op_math::relu_backward(v, g);
    case Activation::gelu: return g * op_math::gelu_derivative(v);
    case Activation::gelu_tanh: return g * op_math::gelu_tanh_derivative(v);
    case Activation::silu: return g * op_math::silu_derivative(v);
  }
  return g;
}

template <typename T>
__global__ void bias_activation_kernel(Activation act, const T* x, const T* bias, T* y,
                                       std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    const float v = bias == nullptr ? load(x, i) : load(x, i) + load(bias, i % cols);
    store(y, i, activate(act, v));
  }
}

template <typename T>
__global__ void pointwise_activation_backward_kernel(Activation act, const T* x, const T* dy, T* dx,
                                                     std::size_t n) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) {
    store(dx, i, gradient(act, load(x, i), load(dy, i)));
  }
}

// ---- column sums: one thread per column, the rows in order --------------------------------------

template <typename T>
__global__ void reduce_columns_kernel(const T* x, T* out, std::size_t rows, std::size_t cols) {
  for (std::size_t j = first_index(); j < cols; j += grid_stride()) {
    float s = 0.0F;
    for (std::size_t i = 0; i < rows; ++i) s = s + load(x, i * cols + j);
    store(out, j, s);
  }
}

// ---- row kernels: one block per row -------------------------------------------------------------

template <typename T>
__global__ void softmax_kernel(RowSoftmax what, const T* x, T* y, std::size_t rows,
                               std::size_t cols) {
  __shared__ float shared[kWarps];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const ExpSum e = row_exp_sum(row, cols, shared);
    if (what == RowSoftmax::logsumexp) {
      // As torch.logsumexp: an infinite maximum is the result (a row of -inf gives -inf, a row
      // holding +inf gives +inf) rather than the NaN of inf - inf.
      if (threadIdx.x == 0) store(y, r, isinf(e.max) ? e.max : e.max + logf(e.sum));
      continue;
    }
    const float log_sum = logf(e.sum);
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
      const float shifted = load(row, c) - e.max;
      store(y, r * cols + c,
            what == RowSoftmax::softmax ? expf(shifted) / e.sum : shifted - log_sum);
    }
  }
}

template <typename T>
__global__ void softmax_backward_kernel(bool log_softmax, const T* x, const T* dy, T* dx,
                                        std::size_t rows, std::size_t cols) {
  __shared__ float shared[kWarps];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const T* d = dy + r * cols;
    const ExpSum e = row_exp_sum(row, cols, shared);
    const auto p = [&](std::size_t c) { return expf(load(row, c) - e.max) / e.sum; };
    if (log_softmax) {
      const float dy_sum = row_sum(
          cols, [&](std::size_t c) { return load(d, c); }, shared);
      for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
        store(dx, r * cols + c, load(d, c) - p(c) * dy_sum);
      }
    } else {
      const float inner = row_sum(
          cols, [&](std::size_t c) { return load(d, c) * p(c); }, shared);
      for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
        store(dx, r * cols + c, p(c) * (load(d, c) - inner));
      }
    }
  }
}

// Attention's score gradients from P and dP (rows x cols) and the output O and its gradient dO
// (rows x d): per row, one thread forms D = sum_t dO_t O_t in order (op_math::ordered_sum: the
// emulation's order; d is a head's width, tens of terms), then every thread its columns'
// P (dP - D).
template <typename T>
__global__ void attention_softmax_backward_kernel(const T* p, const T* dp, const T* o,
                                                  const T* d_out, T* ds, std::size_t rows,
                                                  std::size_t cols, std::size_t d) {
  __shared__ float row_sum;
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    if (threadIdx.x == 0) {
      row_sum = op_math::ordered_sum(
          d, [&](std::size_t t) { return load(d_out, r * d + t) * load(o, r * d + t); });
    }
    __syncthreads();
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
      const std::size_t i = r * cols + c;
      store(ds, i, op_math::score_gradient(load(p, i), load(dp, i), row_sum));
    }
    __syncthreads();  // every thread has read row_sum before thread 0 writes the next row's
  }
}

// A row's mean and 1 / sqrt(var + eps), two passes (the mean, then the squared deviations from
// it), as the CPU backend's normalize_row.
struct Moments {
  float mean;
  float rstd;
};
template <typename T>
__device__ Moments row_moments(const T* row, std::size_t cols, float eps, float* shared) {
  const auto n = static_cast<float>(cols);
  const float mean = row_sum(
                         cols, [&](std::size_t c) { return load(row, c); }, shared) /
                     n;
  const float variance = row_sum(
                             cols,
                             [&](std::size_t c) {
                               const float deviation = load(row, c) - mean;
                               return deviation * deviation;
                             },
                             shared) /
                         n;
  return {mean, 1.0F / sqrtf(variance + eps)};
}

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, T* y, float* mean,
                                  float* rstd, std::size_t rows, std::size_t cols, float eps) {
  __shared__ float shared[kWarps];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const Moments m = row_moments(row, cols, eps, shared);
    if (threadIdx.x == 0) {
      if (mean != nullptr) mean[r] = m.mean;
      if (rstd != nullptr) rstd[r] = m.rstd;
    }
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
      float v = (load(row, c) - m.mean) * m.rstd;
      if (gamma != nullptr) v = v * load(gamma, c);
      if (beta != nullptr) v = v + load(beta, c);
      store(y, r * cols + c, v);
    }
  }
}

// dx = rstd ((g - mean g) - xhat mean(g xhat)), g = dy gamma, per row.
template <typename T>
__global__ void layer_norm_dx_kernel(const T* x, const T* dy, const T* gamma, const float* mean,
                                     const float* rstd, T* dx, std::size_t rows, std::size_t cols) {
  __shared__ float shared[kWarps];
  const auto n = static_cast<float>(cols);
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const T* d = dy + r * cols;
    const float mu = mean[r], s = rstd[r];
    const auto xhat = [&](std::size_t c) { return (load(row, c) - mu) * s; };
    const auto g = [&](std::size_t c) {
      return gamma == nullptr ? load(d, c) : load(d, c) * load(gamma, c);
    };
    const float g_mean = row_sum(cols, g, shared) / n;
    const float gx_mean = row_sum(
                              cols, [&](std::size_t c) { return g(c) * xhat(c); }, shared) /
                          n;
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
      store(dx, r * cols + c, s * ((g(c) - g_mean) - xhat(c) * gx_mean));
    }
  }
}

// dgamma = sum over the rows of dy xhat, dbeta = sum over the rows of dy: one thread per column.
template <typename T>
__global__ void layer_norm_parameters_kernel(const T* x, const T* dy, const float* mean,
                                             const float* rstd, T* dgamma, T* dbeta,
                                             std::size_t rows, std::size_t cols) {
  for (std::size_t j = first_index(); j < cols; j += grid_stride()) {
    float dg = 0.0F, db = 0.0F;
    for (std::size_t i = 0; i < rows; ++i) {
      const float d = load(dy, i * cols + j);
      dg = dg + d * ((load(x, i * cols + j) - mean[i]) * rstd[i]);
      db = db + d;
    }
    if (dgamma != nullptr) store(dgamma, j, dg);
    if (dbeta != nullptr) store(dbeta, j, db);
  }
}

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* gamma, T* y, std::size_t rows,
                                std::size_t cols, float eps) {
  __shared__ float shared[kWarps];
  const auto n = static_cast<float>(cols);
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    const float mean_square = row_sum(
                                  cols,
                                  [&](std::size_t c) {
                                    const float v = load(row, c);
                                    return v * v;
                                  },
                                  shared) /
                              n;
    const float rrms = 1.0F / sqrtf(mean_square + eps);
    for (std::size_t c = threadIdx.x; c < cols; c += kThreads) {
      float v = load(row, c) * rrms;
      if (gamma != nullptr) v = v * load(gamma, c);
      store(y, r * cols + c, v);
    }
  }
}

// Whether a target names one of the classes; a row with another target gets a NaN loss and NaN
// gradients (the device cannot throw; PyTorch asserts).
__device__ bool valid_target(std::int64_t target, std::size_t classes) {
  return target >= 0 && static_cast<std::size_t>(target) < classes;
}

// losses[r] = -log_softmax(logits[r])[target[r]] = -((x_t - m) - log s).
template <typename T>
__global__ void cross_entropy_rows_kernel(const T* logits, const std::int64_t* targets,
                                          float* losses, std::size_t rows, std::size_t classes) {
  __shared__ float shared[kWarps];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * classes;
    const ExpSum e = row_exp_sum(row, classes, shared);
    if (threadIdx.x == 0) {
      const std::int64_t t = targets[r];
      losses[r] = valid_target(t, classes)
                      ? -((load(row, static_cast<std::size_t>(t)) - e.max) - logf(e.sum))
                      : CUDART_NAN_F;
    }
  }
}

// *out = the sum of the n values of x, or its quotient by n, or the square root of the sum of
// their squares (`what`), converted to To: one block.
template <typename From, typename To>
__global__ void reduce_kernel(Reduction what, const From* x, To* out, std::size_t n) {
  __shared__ float shared[kWarps];
  const float s = row_sum(
      n,
      [&](std::size_t i) {
        const float v = load(x, i);
        return what == Reduction::l2_norm ? v * v : v;
      },
      shared);
  if (threadIdx.x != 0) return;
  switch (what) {
    case Reduction::sum: store(out, 0, s); break;
    case Reduction::mean: store(out, 0, s / static_cast<float>(n)); break;
    case Reduction::l2_norm: store(out, 0, sqrtf(s)); break;
  }
}

// dlogits = ((softmax - onehot(target)) d_loss) / rows, each step rounded.
template <typename T>
__global__ void cross_entropy_backward_kernel(const T* logits, const std::int64_t* targets,
                                              float d_loss, T* dlogits, std::size_t rows,
                                              std::size_t classes) {
  __shared__ float shared[kWarps];
  const auto n = static_cast<float>(rows);
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = logits + r * classes;
    const ExpSum e = row_exp_sum(row, classes, shared);
    const std::int64_t t = targets[r];
    const bool valid = valid_target(t, classes);
    for (std::size_t c = threadIdx.x; c < classes; c += kThreads) {
      float g = expf(load(row, c) - e.max) / e.sum;
      if (valid && c == static_cast<std::size_t>(t)) g = g - 1.0F;
      if (!valid) g = CUDART_NAN_F;
      store(dlogits, r * classes + c, (g * d_loss) / n);
    }
  }
}

template <typename T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* out(void* p) {
  return static_cast<T*>(p);
}

void launch_binary(Binary op, DType type, const void* a, const void* b, void* y, std::size_t n,
                   cudaStream_t stream) {
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pointwise_binary_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(op, in<T>(a), in<T>(b),
                                                                            out<T>(y), n);
  });
  check_launch();
}

void launch_softmax_backward(bool log_softmax, DType type, const void* x, const void* dy, void* dx,
                             std::size_t rows, std::size_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
        log_softmax, in<T>(x), in<T>(dy), out<T>(dx), rows, cols);
  });
  check_launch();
}

}  // namespace

std::size_t dtype_bytes(DType type) {
  return type == DType::f32 ? 4 : 2;
}

std::string_view dtype_name(DType type) {
  switch (type) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

void cast(DType from, DType to, const void* x, void* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_type(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    with_type(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      cast_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(in<From>(x), out<To>(y), n);
    });
  });
  check_launch();
}

void add(DType type, const void* a, const void* b, void* y, std::size_t n, cudaStream_t stream) {
  launch_binary(Binary::add, type, a, b, y, n, stream);
}

void mul(DType type, const void* a, const void* b, void* y, std::size_t n, cudaStream_t stream) {
  launch_binary(Binary::mul, type, a, b, y, n, stream);
}

void fma(DType type, const void* x, const void* y, const void* z, void* result, std::size_t n,
         cudaStream_t stream) {
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pointwise_fma_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(
        in<T>(x), in<T>(y), in<T>(z), out<T>(result), n);
  });
  check_launch();
}

void bias_activation(DType type, Activation act, const void* x, const void* bias, void* y,
                     std::size_t rows, std::size_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bias_activation_kernel<<<elementwise_blocks(rows * cols), kThreads, 0, stream>>>(
        act, in<T>(x), in<T>(bias), out<T>(y), rows, cols);
  });
  check_launch();
}

void activation_backward(DType type, Activation act, const void* x, const void* dy, void* dx,
                         std::size_t n, cudaStream_t stream) {
  if (act == Activation::none) {
    throw std::invalid_argument("activation_backward: the activation must not be none");
  }
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pointwise_activation_backward_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(
        act, in<T>(x), in<T>(dy), out<T>(dx), n);
  });
  check_launch();
}

void column_sums(DType type, const void* x, void* sums, std::size_t rows, std::size_t cols,
                 cudaStream_t stream) {
  if (cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_columns_kernel<<<elementwise_blocks(cols), kThreads, 0, stream>>>(in<T>(x), out<T>(sums),
                                                                             rows, cols);
  });
  check_launch();
}

void layer_norm(DType type, const void* x, const void* gamma, const void* beta, void* y,
                float* mean, float* rstd, std::size_t rows, std::size_t cols, float eps,
                cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
        in<T>(x), in<T>(gamma), in<T>(beta), out<T>(y), mean, rstd, rows, cols, eps);
  });
  check_launch();
}

void layer_norm_backward(DType type, const void* x, const void* dy, const void* gamma,
                         const float* mean, const float* rstd, void* dx, void* dgamma, void* dbeta,
                         std::size_t rows, std::size_t cols, cudaStream_t stream) {
  if (cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dx != nullptr && rows != 0) {
      layer_norm_dx_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
          in<T>(x), in<T>(dy), in<T>(gamma), mean, rstd, out<T>(dx), rows, cols);
      check_launch();
    }
    if (dgamma != nullptr || dbeta != nullptr) {
      layer_norm_parameters_kernel<<<elementwise_blocks(cols), kThreads, 0, stream>>>(
          in<T>(x), in<T>(dy), mean, rstd, out<T>(dgamma), out<T>(dbeta), rows, cols);
      check_launch();
    }
  });
}

void cross_entropy(DType type, const void* logits, const std::int64_t* targets, float* loss,
                   std::size_t rows, std::size_t classes, cudaStream_t stream) {
  if (rows == 0) throw std::invalid_argument("cross_entropy: the mean of no rows");
  if (classes == 0) throw std::invalid_argument("cross_entropy: no classes");
  // The rows' losses, then their mean in one block: no atomics, the same order every run.
  float* losses = nullptr;
  AMPBENCH_CUDA_CHECK(
      cudaMallocAsync(reinterpret_cast<void**>(&losses), rows * sizeof(float), stream));
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cross_entropy_rows_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(in<T>(logits), targets,
                                                                         losses, rows, classes);
  });
  const cudaError_t launched = cudaGetLastError();
  if (launched == cudaSuccess) {
    reduce_kernel<<<1, kThreads, 0, stream>>>(Reduction::mean, static_cast<const float*>(losses),
                                              loss, rows);
  }
  const cudaError_t reduced = cudaGetLastError();
  AMPBENCH_CUDA_CHECK(cudaFreeAsync(losses, stream));
  AMPBENCH_CUDA_CHECK(launched);
  AMPBENCH_CUDA_CHECK(reduced);
}

void cross_entropy_backward(DType type, const void* logits, const std::int64_t* targets,
                            float d_loss, void* dlogits, std::size_t rows, std::size_t classes,
                            cudaStream_t stream) {
  if (rows == 0 || classes == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cross_entropy_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
        in<T>(logits), targets, d_loss, out<T>(dlogits), rows, classes);
  });
  check_launch();
}

void softmax(DType type, RowSoftmax what, const void* x, void* y, std::size_t rows,
             std::size_t cols, cudaStream_t stream) {
  if (rows == 0) return;
  if (cols == 0) throw std::invalid_argument("softmax: rows of no columns");
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(what, in<T>(x), out<T>(y), rows,
                                                              cols);
  });
  check_launch();
}

void softmax_backward(DType type, const void* x, const void* dy, void* dx, std::size_t rows,
                      std::size_t cols, cudaStream_t stream) {
  launch_softmax_backward(false, type, x, dy, dx, rows, cols, stream);
}

void log_softmax_backward(DType type, const void* x, const void* dy, void* dx, std::size_t rows,
                          std::size_t cols, cudaStream_t stream) {
  launch_softmax_backward(true, type, x, dy, dx, rows, cols, stream);
}

void rms_norm(DType type, const void* x, const void* gamma, void* y, std::size_t rows,
              std::size_t cols, float eps, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rms_norm_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(in<T>(x), in<T>(gamma), out<T>(y),
                                                               rows, cols, eps);
  });
  check_launch();
}

void reduce(DType type, Reduction what, const void* x, void* result, std::size_t n,
            cudaStream_t stream) {
  if (n == 0) throw std::invalid_argument("reduce: no elements");
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_kernel<<<1, kThreads, 0, stream>>>(what, in<T>(x), out<T>(result), n);
  });
  check_launch();
}

void scale(DType type, const void* x, float factor, void* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    pointwise_scale_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(in<T>(x), factor,
                                                                           out<T>(y), n);
  });
  check_launch();
}

void attention_softmax_backward(DType type, const void* p, const void* dp, const void* o,
                                const void* d_out, void* ds, std::size_t rows, std::size_t cols,
                                std::size_t d, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  with_type(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    attention_softmax_backward_kernel<<<row_blocks(rows), kThreads, 0, stream>>>(
        in<T>(p), in<T>(dp), in<T>(o), in<T>(d_out), out<T>(ds), rows, cols, d);
  });
  check_launch();
}

void round_to_tf32(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  cast_to_tf32_kernel<<<elementwise_blocks(n), kThreads, 0, stream>>>(numeric::formats::tf32, x, y,
                                                                      n);
  check_launch();
}

}  // namespace ampbench::kernels
