// The optimizers of a training run, over any scalar type T: float for the emulated fp32 master
// weights, reference::Real for the multiprecision reference run (double also works). Each owns
// its state for a fixed list of parameter tensors and updates them element by element with the
// functions of optimizer_math.hpp, which reproduce PyTorch's torch.optim.SGD and
// torch.optim.AdamW (single-tensor, non-capturable paths) rounding for rounding.
//
// A step the loss scaler skips (inf or NaN gradients) is simply not called: the state, the step
// count included, stays as it was, as PyTorch's GradScaler.step does by not calling
// optimizer.step(). A call with mismatched lists throws before anything changes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "harness/numeric/optimizer_math.hpp"

namespace ampbench::train {

// torch.optim.SGD's options (maximize and the foreach/fused paths are not modelled).
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.9;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

// torch.optim.AdamW's options: betas = (beta1, beta2).
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  bool amsgrad = false;
};

// Throw std::invalid_argument naming the option, with PyTorch's conditions: lr >= 0,
// momentum >= 0, weight_decay >= 0, nesterov only with momentum > 0 and dampening == 0
// (sgd.py); lr >= 0, eps >= 0, 0 <= beta1, beta2 < 1, weight_decay >= 0 (adam.py). NaN fails.
void validate(const SgdOptions& options);
void validate(const AdamWOptions& options);

namespace detail {
// Throws std::invalid_argument unless grads has params' shape and, after the first step, the
// state has it too (state_sizes empty before the first step).
void check_step_shapes(std::span<const std::size_t> param_sizes,
                       std::span<const std::size_t> grad_sizes,
                       std::span<const std::size_t> state_sizes);

template <class T>
std::vector<std::size_t> sizes_of(std::span<const std::vector<T>> tensors) {
  std::vector<std::size_t> sizes;
  sizes.reserve(tensors.size());
  for (const auto& t : tensors) sizes.push_back(t.size());
  return sizes;
}
}  // namespace detail

template <class T>
class Sgd {
 public:
  explicit Sgd(const SgdOptions& options) : options_(options) { validate(options); }

  // One step over all parameters: params[i] and grads[i] are one tensor, flattened.
  void step(std::span<std::vector<T>> params, std::span<const std::vector<T>> grads) {
    detail::check_step_shapes(detail::sizes_of<T>(params), detail::sizes_of<T>(grads),
                              detail::sizes_of<T>(momentum_buffers_));
    const bool first = steps_ == 0;
    const auto s = make_sgd_scalars<T>(options_.lr, options_.momentum, options_.dampening,
                                       options_.weight_decay, options_.nesterov);
    if (first && s.use_momentum) {
      momentum_buffers_.clear();
      for (const auto& p : params) momentum_buffers_.emplace_back(p.size(), T(0));
    }
    T unused(0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      for (std::size_t j = 0; j < params[i].size(); ++j) {
        T& buffer = s.use_momentum ? momentum_buffers_[i][j] : unused;
        sgd_update(params[i][j], grads[i][j], buffer, first, s);
      }
    }
    ++steps_;
  }

  const SgdOptions& options() const { return options_; }
  // The completed steps.
  std::int64_t steps() const { return steps_; }
  // One buffer per parameter; empty without momentum or before the first step.
  const std::vector<std::vector<T>>& momentum_buffers() const { return momentum_buffers_; }

 private:
  SgdOptions options_;
  std::int64_t steps_ = 0;
  std::vector<std::vector<T>> momentum_buffers_;
};

template <class T>
class AdamW {
 public:
  // kernels: whose rounding to follow where PyTorch's CPU and CUDA kernels differ.
  explicit AdamW(const AdamWOptions& options, TorchKernels kernels = TorchKernels::cpu)
      : options_(options), kernels_(kernels) {
    validate(options);
  }

  void step(std::span<std::vector<T>> params, std::span<const std::vector<T>> grads) {
    detail::check_step_shapes(detail::sizes_of<T>(params), detail::sizes_of<T>(grads),
                              detail::sizes_of<T>(exp_avg_));
    if (steps_ == 0) {
      // PyTorch's lazy state initialisation: zeros shaped like each parameter.
      const auto zeros = [&] {
        std::vector<std::vector<T>> z;
        for (const auto& p : params) z.emplace_back(p.size(), T(0));
        return z;
      };
      exp_avg_ = zeros();
      exp_avg_sq_ = zeros();
      if (options_.amsgrad) max_exp_avg_sq_ = zeros();
    }
    const auto s =
        make_adamw_scalars<T>(options_.lr, options_.beta1, options_.beta2, options_.eps,
                              options_.weight_decay, options_.amsgrad, steps_ + 1, kernels_);
    T unused(0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      for (std::size_t j = 0; j < params[i].size(); ++j) {
        T& max_sq = options_.amsgrad ? max_exp_avg_sq_[i][j] : unused;
        adamw_update(params[i][j], grads[i][j], exp_avg_[i][j], exp_avg_sq_[i][j], max_sq, s);
      }
    }
    ++steps_;
  }

  const AdamWOptions& options() const { return options_; }
  TorchKernels kernels() const { return kernels_; }
  // The completed steps: PyTorch's state["step"] after them.
  std::int64_t steps() const { return steps_; }
  const std::vector<std::vector<T>>& exp_avg() const { return exp_avg_; }
  const std::vector<std::vector<T>>& exp_avg_sq() const { return exp_avg_sq_; }
  // Empty without amsgrad.
  const std::vector<std::vector<T>>& max_exp_avg_sq() const { return max_exp_avg_sq_; }

 private:
  AdamWOptions options_;
  TorchKernels kernels_;
  std::int64_t steps_ = 0;
  std::vector<std::vector<T>> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;
};

using OptimizerOptions = std::variant<SgdOptions, AdamWOptions>;

// Either optimizer behind one step(), for the trainer that chooses from a configuration.
template <class T>
class Optimizer {
 public:
  explicit Optimizer(const OptimizerOptions& options, TorchKernels kernels = TorchKernels::cpu)
      : impl_(make(options, kernels)) {}

  void step(std::span<std::vector<T>> params, std::span<const std::vector<T>> grads) {
    std::visit([&](auto& o) { o.step(params, grads); }, impl_);
  }
  std::int64_t steps() const {
    return std::visit([](const auto& o) { return o.steps(); }, impl_);
  }
  const std::variant<Sgd<T>, AdamW<T>>& get() const { return impl_; }

 private:
  static std::variant<Sgd<T>, AdamW<T>> make(const OptimizerOptions& options,
                                             TorchKernels kernels) {
    if (const auto* sgd = std::get_if<SgdOptions>(&options)) return Sgd<T>(*sgd);
    return AdamW<T>(std::get<AdamWOptions>(options), kernels);
  }

  std::variant<Sgd<T>, AdamW<T>> impl_;
};

}  // namespace ampbench::train
