// The per-element math of the optimizers, written once for host code and CUDA kernels and for
// every scalar type T: float (fp32 master weights, each operation one correctly rounded binary32
// operation), double, and reference::Real (the multiprecision reference run).
//
// Each update is the sequence of tensor ops of PyTorch's single-tensor optimizers
// (torch/optim/sgd.py _single_tensor_sgd, torch/optim/adam.py _single_tensor_adam with
// decoupled_weight_decay=True, which is AdamW), and each op rounds where ATen's kernel rounds:
//   add(x, alpha=a)     self + alpha * other, ufunc/add.h: one fused multiply-add (the CPU's
//                       Vectorized path calls vec::fmadd; nvcc contracts the scalar form)
//   mul_(s)             one rounding
//   lerp_(end, w)       Lerp.h, both branches one fused multiply-add (CPU lerp_vec: fmadd)
//   addcmul_(a, b, v)   CPU: self + (v * a) * b, the last multiply-add fused; CUDA
//                       (DeviceAddCmulCdiv.cuh): fma(v, a * b, self)
//   t / s (s a Python float)  CPU: a true division; CUDA: t * (1 / s), BinaryDivTrueKernel.cu
//   addcdiv_(a, b, v)   CPU: self + (v * a) / b, three roundings; CUDA: fma(v, a / b, self)
// so the CPU and CUDA kernels differ in AdamW's last three, and TorchKernels chooses which.
// docs/optimizers.md gives the sources and how the CPU choices were confirmed against torch.
//
// A Python float hyperparameter reaches a kernel as a Scalar converted to the tensor's opmath type
// (float for fp32): scalar<T>() is that conversion. PyTorch forms 1 - beta1, lr / bias_correction1
// and the like in Python, in binary64; HostScalar<T> is where we form them: double for binary
// types, T itself for Real, whose reference run computes them without rounding to binary64.
// The scalars of a step are computed once on the host (make_sgd_scalars, make_adamw_scalars); the
// element functions are AMPBENCH_HD and use no exceptions or allocation.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "harness/numeric/host_device.hpp"

namespace ampbench::train {

// Whose kernels' rounding to reproduce where PyTorch's CPU and CUDA kernels differ.
enum class TorchKernels { cpu, cuda };

// The type in which the Python-side arithmetic on hyperparameters is done.
template <class T>
using HostScalar = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// A Python float as the kernel sees it: rounded to nearest in T (exact for double and Real).
template <class T>
AMPBENCH_HD T scalar(double x) {
  return static_cast<T>(x);
}

// a * b + c rounded once. Real finds boost::multiprecision::fma by argument-dependent lookup.
template <class T>
AMPBENCH_HD T fused_multiply_add(const T& a, const T& b, const T& c) {
  using std::fma;
  return fma(a, b, c);
}

// The binary32 overload is chosen over the template; on the device it is the rounded-to-nearest
// intrinsic, which nvcc never splits.
AMPBENCH_HD inline float fused_multiply_add(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// a * b rounded on its own, never contracted by nvcc into an add that follows (in PyTorch the
// multiply and the add are separate kernels).
template <class T>
AMPBENCH_HD T separate_product(const T& a, const T& b) {
  return a * b;
}

AMPBENCH_HD inline float separate_product(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// ATen's lerp (Lerp.h) with the weight converted to T: below 0.5 in magnitude it starts from
// self, otherwise from end, so the result is exact at weight 0 and at weight 1. Both branches are
// one fused multiply-add on CPU and CUDA; end - (end - self) * (1 - w) fused is
// fma(w - 1, end - self, end), as 1 - w and w - 1 round to negatives of each other.
template <class T>
AMPBENCH_HD T lerp(const T& self, const T& end, const T& weight) {
  using std::abs;
  const T diff = end - self;
  if (abs(weight) < T(0.5)) return fused_multiply_add(weight, diff, self);
  return fused_multiply_add(weight - T(1), diff, end);
}

// torch.maximum: NaN in either operand gives NaN.
template <class T>
AMPBENCH_HD T maximum(const T& a, const T& b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

// ---------------------------------------------------------------------------------------------
// SGD (torch/optim/sgd.py, _single_tensor_sgd)

template <class T>
struct SgdScalars {
  T weight_decay;           // alpha of grad.add(param, alpha=weight_decay)
  T momentum;               // buf.mul_(momentum), grad.add(buf, alpha=momentum)
  T one_minus_dampening;    // alpha of buf.add_(grad, alpha=1 - dampening), formed in HostScalar
  T negative_lr;            // alpha of param.add_(grad, alpha=-lr)
  bool apply_weight_decay;  // weight_decay != 0
  bool use_momentum;        // momentum != 0
  bool nesterov;
};

// Host-side, once per optimizer: the hyperparameters as the kernels receive them.
template <class T>
SgdScalars<T> make_sgd_scalars(double lr, double momentum, double dampening, double weight_decay,
                               bool nesterov) {
  using H = HostScalar<T>;
  return {scalar<T>(weight_decay),
          scalar<T>(momentum),
          static_cast<T>(H(1) - H(dampening)),
          scalar<T>(-lr),
          weight_decay != 0.0,
          momentum != 0.0,
          nesterov};
}

// One SGD step of one parameter element. momentum_buffer is read only when !first_step (PyTorch
// creates the buffer as a clone of the first step's d_p, so dampening starts at the second step).
//   d_p = grad.add(param, alpha=wd)                   fma(wd, param, grad)
//   buf = d_p  |  buf.mul_(m).add_(d_p, alpha=1-dmp)  fma(1 - dmp, d_p, buf * m)
//   d_p = d_p.add(buf, alpha=m) (nesterov)  |  buf    fma(m, buf, d_p)
//   param.add_(d_p, alpha=-lr)                        fma(-lr, d_p, param)
template <class T>
AMPBENCH_HD void sgd_update(T& param, const T& grad, T& momentum_buffer, bool first_step,
                            const SgdScalars<T>& s) {
  T d_p = grad;
  if (s.apply_weight_decay) d_p = fused_multiply_add(s.weight_decay, param, d_p);
  if (s.use_momentum) {
    if (first_step) {
      momentum_buffer = d_p;
    } else {
      const T decayed = momentum_buffer * s.momentum;
      momentum_buffer = fused_multiply_add(s.one_minus_dampening, d_p, decayed);
    }
    d_p = s.nesterov ? fused_multiply_add(s.momentum, momentum_buffer, d_p) : momentum_buffer;
  }
  param = fused_multiply_add(s.negative_lr, d_p, param);
}

// ---------------------------------------------------------------------------------------------
// AdamW (torch/optim/adam.py, _single_tensor_adam, decoupled_weight_decay=True, capturable and
// differentiable off)

template <class T>
struct AdamWScalars {
  T decay_factor;                   // param.mul_(1 - lr * weight_decay)
  T lerp_weight;                    // exp_avg.lerp_(grad, 1 - beta1)
  T beta2;                          // exp_avg_sq.mul_(beta2)
  T one_minus_beta2;                // .addcmul_(grad, grad, value=1 - beta2)
  T bias_correction2_sqrt;          // (1 - beta2 ** step) ** 0.5, the CPU divisor
  T inverse_bias_correction2_sqrt;  // 1 / that, rounded in T: the CUDA kernel multiplies by it
  T eps;                            // .add_(eps)
  T negative_step_size;             // value=-step_size, step_size = lr / (1 - beta1 ** step)
  bool apply_weight_decay;          // weight_decay != 0
  bool amsgrad;
  TorchKernels kernels;
};

// Host-side, once per step (step counts from 1): the Python float arithmetic of
// _single_tensor_adam in HostScalar<T>, then each value converted to T. Python's ** on floats is
// the C library's pow, as std::pow here; for Real, pow is MPFR's, correctly rounded.
template <class T>
AdamWScalars<T> make_adamw_scalars(double lr, double beta1, double beta2, double eps,
                                   double weight_decay, bool amsgrad, std::int64_t step,
                                   TorchKernels kernels) {
  using H = HostScalar<T>;
  using std::pow;
  const H one(1);
  const H steps(static_cast<double>(step));
  const H bias_correction1 = one - pow(H(beta1), steps);
  const H bias_correction2 = one - pow(H(beta2), steps);
  const H step_size = H(lr) / bias_correction1;
  const T bias_correction2_sqrt = static_cast<T>(pow(bias_correction2, H(0.5)));
  return {static_cast<T>(one - H(lr) * H(weight_decay)),
          static_cast<T>(one - H(beta1)),
          scalar<T>(beta2),
          static_cast<T>(one - H(beta2)),
          bias_correction2_sqrt,
          T(1) / bias_correction2_sqrt,
          scalar<T>(eps),
          static_cast<T>(-step_size),
          weight_decay != 0.0,
          amsgrad,
          kernels};
}

// exp_avg_sq.addcmul_(grad, grad, value=v).
template <class T>
AMPBENCH_HD T addcmul(const T& self, const T& a, const T& b, const T& value, TorchKernels kernels) {
  if (kernels == TorchKernels::cpu) return fused_multiply_add(value * a, b, self);
  if (value == T(1)) return fused_multiply_add(a, b, self);
  return fused_multiply_add(value, a * b, self);
}

// param.addcdiv_(a, b, value=v).
template <class T>
AMPBENCH_HD T addcdiv(const T& self, const T& a, const T& b, const T& value, TorchKernels kernels) {
  if (kernels == TorchKernels::cpu) return self + (value * a) / b;
  if (value == T(1)) return self + a / b;
  return fused_multiply_add(value, a / b, self);
}

// One AdamW step of one parameter element; max_exp_avg_sq is used only with amsgrad.
//   param.mul_(1 - lr * wd)
//   exp_avg.lerp_(grad, 1 - beta1)
//   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
//   torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)          (amsgrad)
//   denom = (v.sqrt() / bias_correction2_sqrt).add_(eps), v the second moment or its maximum
//   param.addcdiv_(exp_avg, denom, value=-step_size)
template <class T>
AMPBENCH_HD void adamw_update(T& param, const T& grad, T& exp_avg, T& exp_avg_sq, T& max_exp_avg_sq,
                              const AdamWScalars<T>& s) {
  using std::sqrt;
  if (s.apply_weight_decay) param = param * s.decay_factor;
  exp_avg = lerp(exp_avg, grad, s.lerp_weight);
  exp_avg_sq = addcmul(T(exp_avg_sq * s.beta2), grad, grad, s.one_minus_beta2, s.kernels);
  T second_moment = exp_avg_sq;
  if (s.amsgrad) {
    max_exp_avg_sq = maximum(max_exp_avg_sq, exp_avg_sq);
    second_moment = max_exp_avg_sq;
  }
  const T root = sqrt(second_moment);
  const T scaled = s.kernels == TorchKernels::cpu
                       ? T(root / s.bias_correction2_sqrt)
                       : separate_product(root, s.inverse_bias_correction2_sqrt);
  const T denom = scaled + s.eps;
  param = addcdiv(param, exp_avg, denom, s.negative_step_size, s.kernels);
}

}  // namespace ampbench::train
